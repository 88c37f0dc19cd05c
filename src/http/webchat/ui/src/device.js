// The browser's device identity: an Ed25519 key pair made with WebCrypto and
// kept in localStorage, as OpenClaw's Control UI does. The gateway knows the
// device by the SHA-256 of its raw public key; a loopback browser is paired
// silently, any other waits for an operator's approval.

const STORE = "ferroclaw.device.v1";

export function b64url(bytes) {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromB64url(text) {
  const s = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function hex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Why this browser cannot have an identity, or "" when it can. */
export function unsupportedReason() {
  if (!globalThis.isSecureContext || !globalThis.crypto?.subtle) {
    return "this page is not a secure context (open it over https or at http://127.0.0.1 / http://localhost), so the browser cannot sign in as a device";
  }
  return "";
}

/**
 * The stored identity, or a new one. Resolves to null when the browser
 * cannot do Ed25519 (the gateway then refuses the page unless it was
 * configured to accept browsers without an identity).
 */
export async function loadIdentity() {
  if (unsupportedReason()) return null;
  const subtle = crypto.subtle;
  try {
    const saved = JSON.parse(localStorage.getItem(STORE) || "null");
    if (saved?.id && saved.publicKey && saved.privateKey) {
      const privateKey = await subtle.importKey("pkcs8", fromB64url(saved.privateKey), { name: "Ed25519" }, false, ["sign"]);
      return { id: saved.id, publicKey: saved.publicKey, privateKey };
    }
  } catch {
    // A damaged entry: make a new identity below.
  }
  try {
    const pair = await subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
    const raw = await subtle.exportKey("raw", pair.publicKey);
    const pkcs8 = await subtle.exportKey("pkcs8", pair.privateKey);
    const id = hex(await subtle.digest("SHA-256", raw));
    const identity = { id, publicKey: b64url(raw), privateKey: b64url(pkcs8) };
    localStorage.setItem(STORE, JSON.stringify(identity));
    const privateKey = await subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
    return { id, publicKey: identity.publicKey, privateKey };
  } catch {
    return null;
  }
}

/** Signs `payload` (UTF-8) with the identity; base64url without padding. */
export async function sign(identity, payload) {
  const sig = await crypto.subtle.sign({ name: "Ed25519" }, identity.privateKey, new TextEncoder().encode(payload));
  return b64url(sig);
}

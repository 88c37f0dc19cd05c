// A client of the gateway's WebSocket protocol (v4): the connect.challenge,
// a signed `connect`, requests answered by id, events (with gap detection on
// the per-connection `seq`), the tick watchdog, and reconnects with backoff.
// A close with 1008 (policy: bad token, pairing, origin) stops reconnecting,
// as OpenClaw's Control UI does: retrying cannot fix it by itself.

import { sign } from "./device.js";

const CLIENT_ID = "ferroclaw-webchat";
const MODE = "webchat";
const ROLE = "operator";
const SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals"];
const REQUEST_TIMEOUT_MS = 30_000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 15_000;

export class GatewayError extends Error {
  constructor(error) {
    super(error?.message || "request failed");
    this.code = error?.code || "UNAVAILABLE";
    this.details = error?.details;
  }
}

function uuid() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
export { uuid };

export class Gateway {
  /**
   * @param {object} o
   * @param {string} o.url            ws:// or wss:// URL of the gateway
   * @param {() => string} o.token    the shared gateway token ("" for none)
   * @param {object|null} o.identity the device identity (device.js)
   * @param {string} o.version        this client's version
   * @param {(state: string, info: object) => void} o.onState
   * @param {(event: string, payload: any) => void} o.onEvent
   * @param {(hello: object) => void} o.onHello
   * @param {(gap: object) => void} o.onGap
   */
  constructor(o) {
    this.o = o;
    this.ws = null;
    this.pending = new Map();
    this.nextId = 1;
    this.attempt = 0;
    this.stopped = false;
    this.retryTimer = null;
    this.tickTimer = null;
    this.lastSeq = null;
    this.hello = null;
    this.instanceId = sessionStorage.getItem("ferroclaw.instance") || uuid();
    sessionStorage.setItem("ferroclaw.instance", this.instanceId);
  }

  get connected() {
    return this.hello !== null && this.ws?.readyState === WebSocket.OPEN;
  }

  /** Opens the connection (again), clearing any pending retry. */
  start() {
    this.stopped = false;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close(1000, "reconnect");
    this.open();
  }

  /** Closes for good (until `start`). */
  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.ws?.close(1000, "bye");
  }

  open() {
    this.hello = null;
    this.lastSeq = null;
    this.handshakeError = null;
    this.o.onState(this.attempt ? "reconnecting" : "connecting", {});
    const ws = new WebSocket(this.o.url);
    this.ws = ws;
    ws.onmessage = (m) => {
      if (this.ws !== ws) return;
      let frame;
      try {
        frame = JSON.parse(typeof m.data === "string" ? m.data : "");
      } catch {
        return;
      }
      this.onFrame(frame).catch((e) => console.error("webchat: frame handling failed", e));
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.onClose(e.code, e.reason);
    };
  }

  async onFrame(frame) {
    if (frame.type === "event") {
      if (frame.event === "connect.challenge") {
        await this.sendConnect(frame.payload || {});
        return;
      }
      this.armTick();
      if (typeof frame.seq === "number") {
        if (this.lastSeq !== null && frame.seq > this.lastSeq + 1) {
          this.o.onGap({ expected: this.lastSeq + 1, received: frame.seq });
        }
        this.lastSeq = frame.seq;
      }
      this.o.onEvent(frame.event, frame.payload);
      return;
    }
    if (frame.type === "res") {
      const p = this.pending.get(frame.id);
      if (!p) return;
      this.pending.delete(frame.id);
      clearTimeout(p.timer);
      if (frame.ok) p.resolve(frame.payload);
      else p.reject(new GatewayError(frame.error));
    }
  }

  async sendConnect(challenge) {
    const token = this.o.token() || "";
    const params = {
      minProtocol: 4,
      maxProtocol: 4,
      client: {
        id: CLIENT_ID,
        displayName: "ferroclaw web chat",
        version: this.o.version,
        platform: "web",
        deviceFamily: "browser",
        mode: MODE,
        instanceId: this.instanceId,
      },
      caps: ["tool-events"],
      role: ROLE,
      scopes: SCOPES,
      locale: navigator.language || "en",
      userAgent: navigator.userAgent,
    };
    if (token) params.auth = { token };
    const id = this.o.identity;
    if (id && challenge.nonce) {
      // v3 payload; signed at the challenge's time, so a skewed browser
      // clock does not matter.
      const signedAt = Number.isInteger(challenge.ts) ? challenge.ts : Date.now();
      const payload = ["v3", id.id, CLIENT_ID, MODE, ROLE, SCOPES.join(","), signedAt, token, challenge.nonce, "web", "browser"].join("|");
      params.device = {
        id: id.id,
        publicKey: id.publicKey,
        signature: await sign(id, payload),
        signedAt,
        nonce: challenge.nonce,
      };
    }
    try {
      const hello = await this.request("connect", params, { beforeHello: true });
      this.hello = hello;
      this.attempt = 0;
      this.armTick();
      this.o.onHello(hello);
      this.o.onState("connected", {});
    } catch (e) {
      // The gateway closes the socket after a refused connect; onClose says why.
      this.handshakeError = e;
    }
  }

  armTick() {
    clearTimeout(this.tickTimer);
    const interval = this.hello?.policy?.tickIntervalMs || 30_000;
    this.tickTimer = setTimeout(() => {
      // No event for two tick intervals: the connection is dead.
      this.ws?.close(4000, "tick timeout");
    }, interval * 2 + 1000);
  }

  onClose(code, reason) {
    clearTimeout(this.tickTimer);
    this.hello = null;
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new GatewayError({ code: "UNAVAILABLE", message: "disconnected" }));
    }
    this.pending.clear();
    const why =
      this.handshakeError?.message || reason || (code === 1006 ? "the gateway is not reachable" : `code ${code}`);
    if (this.stopped) {
      this.o.onState("stopped", { code, reason: why });
      return;
    }
    if (code === 1008) {
      this.o.onState("refused", { code, reason: why, error: this.handshakeError });
      return;
    }
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
    const delay = Math.round(base * (0.8 + Math.random() * 0.4));
    this.attempt += 1;
    this.o.onState("waiting", { code, reason: why, retryInMs: delay, attempt: this.attempt });
    this.retryTimer = setTimeout(() => this.open(), delay);
  }

  /** Sends a request; resolves with its payload or rejects with a GatewayError. */
  request(method, params = {}, opts = {}) {
    return new Promise((resolve, reject) => {
      const ws = this.ws;
      if (!ws || ws.readyState !== WebSocket.OPEN || (!opts.beforeHello && !this.hello)) {
        reject(new GatewayError({ code: "UNAVAILABLE", message: "not connected to the gateway" }));
        return;
      }
      const id = `w${this.nextId++}`;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new GatewayError({ code: "UNAVAILABLE", message: `${method}: no answer in time` }));
      }, opts.timeoutMs || REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      ws.send(JSON.stringify({ type: "req", id, method, params }));
    });
  }
}

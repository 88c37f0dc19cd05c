// The web chat: a thin client of the gateway (seed 000). It sends
// `chat.send`, renders the `chat` / `agent` / `session.tool` events it gets
// back, and reads `chat.history` when a session opens. State lives in the
// gateway; this page keeps only the token, its device key and the last
// session in localStorage.

import { loadIdentity, unsupportedReason } from "./device.js";
import { Gateway, uuid } from "./gateway.js";
import { addCopyButtons, escapeHtml, renderMarkdown } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "ferroclaw.token";
const LAST_KEY = "ferroclaw.session";
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

const ui = {
  conn: $("conn"),
  retry: $("retry"),
  openToken: $("open-token"),
  toggleSidebar: $("toggle-sidebar"),
  sidebar: $("sidebar"),
  newChat: $("new-chat"),
  sessions: $("sessions"),
  title: $("session-title"),
  keyLabel: $("session-key"),
  model: $("model"),
  thinking: $("thinking"),
  verbose: $("verbose"),
  log: $("log"),
  approvals: $("approvals"),
  composer: $("composer"),
  input: $("input"),
  send: $("send"),
  abort: $("abort"),
  attach: $("attach"),
  file: $("file"),
  attachments: $("attachments"),
  tokenDialog: $("token-dialog"),
  tokenForm: $("token-form"),
  tokenInput: $("token-input"),
  tokenError: $("token-error"),
};

const state = {
  gw: null,
  agent: "main",
  rows: [],
  defaults: {},
  /** Keys opened with "+ Chat" that the gateway has not stored yet. */
  fresh: [],
  current: null,
  /** runId -> live run (current session only). */
  runs: new Map(),
  /** Session keys with a run going. */
  busy: new Set(),
  models: [],
  images: [],
  /** Runs that answered a `/btw` (their final is not a reply). */
  side: new Set(),
  loadSeq: 0,
};

// ---- small helpers -------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function defaultKey() {
  return `agent:${state.agent}:web:main`;
}

function nearBottom() {
  const l = ui.log;
  return l.scrollHeight - l.scrollTop - l.clientHeight < 80;
}

function scrollDown(force) {
  if (force || state.stick) ui.log.scrollTop = ui.log.scrollHeight;
}

/** Runs `fn` once per frame at most (markdown renders while streaming). */
function throttled(fn) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      fn();
    });
  };
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((b) => b?.type === "text").map((b) => b.text ?? "").join("");
}

function pretty(v) {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

// ---- connection state ----------------------------------------------------

function setConn(kind, text) {
  ui.conn.dataset.state = kind;
  ui.conn.textContent = text;
  ui.retry.hidden = !(kind === "waiting" || kind === "refused");
  const up = kind === "connected";
  ui.send.disabled = !up;
}

function onState(kind, info) {
  switch (kind) {
    case "connecting":
      setConn("connecting", "connecting…");
      break;
    case "reconnecting":
      setConn("connecting", "reconnecting…");
      break;
    case "connected":
      setConn("connected", "connected");
      break;
    case "waiting":
      setConn("waiting", `disconnected (${info.reason}); retrying in ${Math.ceil(info.retryInMs / 1000)} s`);
      break;
    case "refused": {
      setConn("refused", `refused: ${info.reason}`);
      const msg = `${info.reason}`;
      const code = info.error?.details?.code || "";
      if (/token|password|unauthori[sz]ed/i.test(msg) || code.startsWith("AUTH_")) {
        openTokenDialog(msg);
      } else if (/pairing required/i.test(msg)) {
        const id = info.error?.details?.requestId || (msg.match(/requestId: ([^)]+)/) || [])[1] || "";
        notice(`This browser is waiting to be approved as a device${id ? ` (request ${id})` : ""}. Approve it on the gateway (device.pair.approve, or \`openclaw devices approve ${id || "<id>"}\`), then press Retry now.`, "error");
      } else {
        notice(`The gateway refused this page: ${msg}`, "error");
      }
      break;
    }
    case "stopped":
      setConn("idle", "disconnected");
      break;
    default:
      break;
  }
}

async function onHello(hello) {
  const d = hello?.snapshot?.sessionDefaults;
  if (d?.defaultAgentId) state.agent = d.defaultAgentId;
  const first = state.current === null;
  if (first) state.current = localStorage.getItem(LAST_KEY) || defaultKey();
  // (Re)connected: the transcript is the truth; runs still going rebuild
  // from their next events.
  state.runs.clear();
  await Promise.all([refreshSessions(), loadModels()]);
  await openSession(state.current, { keepScroll: !first });
  // Approvals asked while this page was away (or before a reload) wait
  // here too: their cards come back and can be answered.
  await refreshApprovals();
}

// ---- token dialog --------------------------------------------------------

function openTokenDialog(error) {
  ui.tokenError.hidden = !error;
  ui.tokenError.textContent = error ? `The gateway said: ${error}` : "";
  ui.tokenInput.value = localStorage.getItem(TOKEN_KEY) || "";
  if (!ui.tokenDialog.open) ui.tokenDialog.showModal();
  ui.tokenInput.focus();
}

ui.tokenForm.addEventListener("submit", (e) => {
  const submitter = e.submitter?.value;
  if (submitter !== "save") return;
  const token = ui.tokenInput.value.trim();
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
  state.gw.start();
});
ui.openToken.addEventListener("click", () => openTokenDialog(""));
ui.retry.addEventListener("click", () => state.gw.start());

// ---- sessions --------------------------------------------------------------

function shorten(text, n) {
  const t = String(text || "").replace(/\s+/g, " ").trim();
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

/** A session's name: its label, "Chat" for the default tab, else the key after the agent. */
function rowTitle(row) {
  if (row.label) return row.label;
  if (row.displayName) return row.displayName;
  if (row.key === defaultKey()) return "Chat";
  const rest = row.key.split(":").slice(2).join(":") || row.key;
  // "+ Chat" keys end in a UUID: its first block is enough to tell them apart.
  return rest.replace(/^web:([0-9a-f]{8})-[0-9a-f-]{27}$/i, "Chat $1");
}

async function refreshSessions() {
  try {
    const res = await state.gw.request("sessions.list", { includeLastMessage: true });
    state.rows = res.sessions || [];
    state.defaults = res.defaults || {};
    state.fresh = state.fresh.filter((k) => !state.rows.some((r) => r.key === k));
    for (const r of state.rows) if (r.hasActiveRun) state.busy.add(r.key);
  } catch (e) {
    notice(`Cannot list sessions: ${e.message}`, "error");
  }
  renderSessions();
}

function renderSessions() {
  const rows = [...state.rows];
  const keys = new Set(rows.map((r) => r.key));
  for (const k of [defaultKey(), ...state.fresh]) {
    if (!keys.has(k)) rows.unshift({ key: k, updatedAt: null, fresh: true });
  }
  // The default tab first, then newest first.
  rows.sort((a, b) => (a.key === defaultKey() ? -1 : b.key === defaultKey() ? 1 : (b.updatedAt ?? Infinity) - (a.updatedAt ?? Infinity)));
  ui.sessions.replaceChildren(
    ...rows.map((r) => {
      const open = h(
        "button",
        { type: "button", class: "open", "data-key": r.key, title: r.key, onclick: () => openSession(r.key) },
        h("span", { class: "name", text: rowTitle(r) }),
        h("span", { class: "key", text: r.lastMessagePreview ? shorten(r.lastMessagePreview, 60) : r.fresh ? "new" : r.key }),
      );
      const del =
        r.key === defaultKey() || r.fresh
          ? null
          : h("button", {
              type: "button",
              class: "delete",
              title: "Delete this session",
              "aria-label": `Delete ${r.key}`,
              text: "×",
              onclick: () => deleteSession(r.key),
            });
      return h(
        "li",
        { class: `session${r.key === state.current ? " active" : ""}${state.busy.has(r.key) ? " busy" : ""}`, "data-key": r.key },
        open,
        del,
      );
    }),
  );
}

async function deleteSession(key) {
  if (!confirm(`Delete ${key} and its history?`)) return;
  try {
    await state.gw.request("sessions.delete", { key });
  } catch (e) {
    notice(`Cannot delete ${key}: ${e.message}`, "error");
    return;
  }
  if (state.current === key) await openSession(defaultKey());
  await refreshSessions();
}

ui.newChat.addEventListener("click", async () => {
  const key = `agent:${state.agent}:web:${uuid()}`;
  state.fresh.unshift(key);
  await openSession(key);
  ui.input.focus();
});

ui.toggleSidebar.addEventListener("click", () => document.body.classList.toggle("sidebar-open"));

function currentRow() {
  return state.rows.find((r) => r.key === state.current) || {};
}

/** Opens a session: its history, its settings in the selectors. */
async function openSession(key, opts = {}) {
  const changed = key !== state.current;
  state.current = key;
  localStorage.setItem(LAST_KEY, key);
  document.body.classList.remove("sidebar-open");
  if (changed) {
    // Never show one session's messages under another's name.
    state.runs.clear();
    ui.log.replaceChildren(h("div", { class: "empty", text: "Loading…" }));
  }
  renderSessions();
  ui.keyLabel.textContent = key;
  ui.title.textContent = rowTitle(currentRow().key ? currentRow() : { key });
  const seq = ++state.loadSeq;
  let history;
  try {
    history = await state.gw.request("chat.history", { sessionKey: key, limit: 200 });
  } catch (e) {
    if (seq === state.loadSeq) {
      ui.log.replaceChildren();
      notice(`Cannot load the history: ${e.message}`, "error");
    }
    return;
  }
  if (seq !== state.loadSeq) return;
  const keep = opts.keepScroll && !nearBottom() ? ui.log.scrollTop : null;
  renderHistory(history.messages || [], history.sessionInfo?.status === "running");
  // Runs still streaming go back under the history.
  for (const run of state.runs.values()) ui.log.append(run.el);
  syncSelectors(history);
  updateAbort();
  if (keep === null) scrollDown(true);
  else ui.log.scrollTop = keep;
}

function syncSelectors(history) {
  ui.thinking.value = history.thinkingLevel || "";
  const row = currentRow();
  ui.verbose.value = history.verboseLevel || row.verboseLevel || "on";
  const model = row.modelOverride || (state.defaults.modelProvider ? `${state.defaults.modelProvider}/${state.defaults.model}` : "");
  if (model && ![...ui.model.options].some((o) => o.value === model)) ui.model.append(h("option", { value: model, text: model }));
  ui.model.value = model;
}

async function loadModels() {
  try {
    const res = await state.gw.request("models.list", {});
    state.models = res.models || [];
  } catch {
    state.models = [];
  }
  ui.model.replaceChildren(
    ...state.models.map((m) => h("option", { value: `${m.provider}/${m.id}`, text: `${m.name || m.id} (${m.provider})` })),
  );
}

async function patchSession(fields, what) {
  try {
    await state.gw.request("sessions.patch", { key: state.current, ...fields });
    await refreshSessions();
  } catch (e) {
    notice(`Cannot change ${what}: ${e.message}`, "error");
    const history = await state.gw.request("chat.history", { sessionKey: state.current, limit: 1 }).catch(() => ({}));
    syncSelectors(history);
  }
}

ui.model.addEventListener("change", () => patchSession({ model: ui.model.value }, "the model"));
ui.thinking.addEventListener("change", () => patchSession({ thinkingLevel: ui.thinking.value || null }, "the thinking level"));
ui.verbose.addEventListener("change", () => patchSession({ verboseLevel: ui.verbose.value }, "the tool output level"));

// ---- rendering -------------------------------------------------------------

function thinkingBlock(text, open) {
  const body = h("div", { class: "md" });
  body.innerHTML = renderMarkdown(text);
  return h("details", { class: "thinking", open }, h("summary", { text: "Thinking" }), body);
}

function toolPanel(id, name) {
  const status = h("span", { class: "status", text: "running" });
  const input = h("pre", { class: "input" });
  const output = h("pre", { class: "output" });
  const outWrap = h("div", { class: "section out", hidden: true }, h("div", { class: "label", text: "Output" }), output);
  const el = h(
    "details",
    { class: "tool", "data-tool-id": id, "data-state": "running" },
    h("summary", {}, h("span", { class: "kind", text: "tool" }), h("span", { class: "name", text: name || "tool" }), status),
    h("div", { class: "section" }, h("div", { class: "label", text: "Input" }), input),
    outWrap,
  );
  return {
    el,
    setInput(args) {
      input.textContent = pretty(args);
    },
    setOutput(text) {
      if (text === undefined || text === null) return;
      output.textContent = pretty(text);
      outWrap.hidden = false;
    },
    setState(s) {
      el.dataset.state = s;
      status.textContent = s;
    },
    hasOutput() {
      return !outWrap.hidden;
    },
  };
}

function userBubble(text, images = [], files = []) {
  const body = h("div", { class: "text", text });
  const pics = images.map((img) => {
    // A signed `/media/<id>` link from chat.history, or a local preview.
    if (img.url) return h("img", { class: "thumb", src: img.url, alt: img.name || "image" });
    if (img.mediaId) {
      // The original, from the media store (`GET /media/<id>`, with the token).
      const el = h("img", { class: "thumb", alt: img.mimeType || "image" });
      mediaBlobUrl(img.mediaId).then((u) => { if (u) el.src = u; });
      return el;
    }
    return h("span", { class: "thumb missing", text: `[image${img.mimeType ? ` ${img.mimeType}` : ""}]` });
  });
  const chips = files.map((f) => {
    const a = h("a", { class: "file", href: "#", text: `${f.name || f.contentType} (${Math.ceil((f.size || 0) / 1024)} KB)` });
    a.addEventListener("click", async (e) => {
      e.preventDefault();
      const u = await mediaBlobUrl(f.id);
      if (!u) return notice(`${f.name || "file"}: not available any more.`, "error");
      const dl = h("a", { href: u, download: f.name || f.id });
      dl.click();
    });
    return a;
  });
  return h(
    "div",
    { class: "msg user" },
    pics.length ? h("div", { class: "images" }, pics) : null,
    chips.length ? h("div", { class: "files" }, chips) : null,
    body,
  );
}

/** A stored attachment as `{ url, type }` (a blob URL; fetched once, with the token). */
const mediaUrls = new Map();
function mediaBlob(id) {
  if (!mediaUrls.has(id)) {
    const token = localStorage.getItem(TOKEN_KEY) || "";
    const got = fetch(`/media/${encodeURIComponent(id)}`, { headers: token ? { Authorization: `Bearer ${token}` } : {} })
      .then((r) => (r.ok ? r.blob() : null))
      .then((b) => (b ? { url: URL.createObjectURL(b), type: b.type } : null))
      .catch(() => null);
    mediaUrls.set(id, got);
  }
  return mediaUrls.get(id);
}

function mediaBlobUrl(id) {
  return mediaBlob(id).then((m) => m?.url || null);
}

const MEDIA_LINE = /^\s*MEDIA:\s*`?([^`\s]+)`?\s*$/;

/** A reply's text as markdown, its `MEDIA:` lines shown as what they name. */
function renderReply(el, text) {
  const media = [];
  const kept = String(text ?? "")
    .split("\n")
    .filter((l) => {
      const m = MEDIA_LINE.exec(l);
      if (m) media.push(m[1]);
      return !m;
    });
  el.innerHTML = renderMarkdown(kept.join("\n"));
  for (const ref of media) el.append(mediaElement(ref));
}

/** A stored file (`media:<id>` or its path in the media store) as an image or a
 * download; a URL as a link. */
function mediaElement(ref) {
  const id = (/^media:([0-9a-f]{64})$/i.exec(ref) || /\/media\/[0-9a-f]{2}\/([0-9a-f]{64})$/i.exec(ref))?.[1];
  if (!id) {
    if (/^https?:\/\//i.test(ref)) return h("a", { class: "file", href: ref, target: "_blank", rel: "noopener noreferrer", text: ref });
    return h("span", { class: "file", text: ref });
  }
  const box = h("div", { class: "media" });
  mediaBlob(id).then((m) => {
    if (!m) return box.append(h("span", { class: "file", text: "(file no longer kept)" }));
    box.append(m.type.startsWith("image/") ? h("img", { class: "thumb", src: m.url, alt: "image" }) : h("a", { class: "file", href: m.url, download: id, text: "file" }));
  });
  return box;
}

/** A `/btw` answer: shown apart from the conversation, not kept. */
function onSideResult(p) {
  if (p.sessionKey !== state.current || p.kind !== "btw") return;
  state.side.add(p.runId);
  const md = h("div", { class: "md" });
  md.innerHTML = renderMarkdown(p.text || "");
  ui.log.append(h("div", { class: "msg side" }, h("div", { class: "label", text: `btw: ${p.question || ""}` }), md));
  scrollDown();
}

/** Renders a transcript: tool results go into their call's panel. A call
 * of the turn still running (`live`) with no result yet is running (it
 * may wait for an approval), not a call that never answered. */
function renderHistory(messages, live = false) {
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === "user") lastUser = i;
  });
  const results = new Map();
  for (const m of messages) if (m.role === "toolResult" && m.toolCallId) results.set(m.toolCallId, m);
  const calls = new Set();
  for (const m of messages) {
    if (m.role === "assistant" && Array.isArray(m.content)) {
      for (const b of m.content) if (b?.type === "toolCall" && b.id) calls.add(b.id);
    }
  }
  const out = [];
  // One bubble per reply: assistant messages split only by tool results
  // (a tool loop) share it, as they do while streaming.
  let reply = null;
  for (const [i, m] of messages.entries()) {
    if (m.role === "user") {
      reply = null;
      const images = Array.isArray(m.content) ? m.content.filter((b) => b?.type === "image") : [];
      const shown = new Set(images.map((i) => i.mediaId).filter(Boolean));
      const files = Array.isArray(m.media) ? m.media.filter((f) => f?.id && !shown.has(f.id)) : [];
      out.push(userBubble(textOf(m.content), images, files));
    } else if (m.role === "assistant") {
      const bubble = reply || h("div", { class: "msg assistant" });
      const blocks = Array.isArray(m.content) ? m.content : [{ type: "text", text: String(m.content ?? "") }];
      for (const b of blocks) {
        if (b?.type === "thinking" && b.thinking) bubble.append(thinkingBlock(b.thinking, false));
        else if (b?.type === "text" && b.text) {
          const md = h("div", { class: "md" });
          renderReply(md, b.text);
          bubble.append(md);
        } else if (b?.type === "toolCall") {
          const p = toolPanel(b.id, b.name);
          p.setInput(b.arguments);
          const r = results.get(b.id);
          if (r) {
            p.setOutput(textOf(r.content));
            p.setState(r.isError ? "error" : "done");
          } else {
            p.setState(live && i > lastUser ? "running" : "no result");
          }
          bubble.append(p.el);
        }
      }
      if (m.errorMessage) bubble.append(h("div", { class: "error", text: m.errorMessage }));
      if (bubble !== reply && bubble.childElementCount) {
        out.push(bubble);
        reply = bubble;
      }
    } else if (m.role === "toolResult" && !calls.has(m.toolCallId)) {
      const p = toolPanel(m.toolCallId, m.toolName);
      p.setOutput(textOf(m.content));
      p.setState(m.isError ? "error" : "done");
      out.push(h("div", { class: "msg assistant" }, p.el));
    }
  }
  ui.log.replaceChildren(...out);
  if (!out.length) ui.log.append(h("div", { class: "empty", text: "No messages yet. Say hello." }));
  addCopyButtons(ui.log);
}

/** A line in the chat that is not part of the transcript (errors, notes). */
function notice(text, kind = "info") {
  ui.log.querySelector(".empty")?.remove();
  const stick = nearBottom();
  ui.log.append(h("div", { class: `msg notice ${kind}`, role: kind === "error" ? "alert" : null, text }));
  if (stick) scrollDown(true);
}

// ---- live runs ---------------------------------------------------------------

class Run {
  constructor(runId) {
    this.runId = runId;
    this.el = h("div", { class: "msg assistant live", "data-run-id": runId });
    this.thinking = null;
    this.thinkingText = "";
    this.segments = [];
    this.tools = new Map();
    this.renderText = throttled(() => this.flushText());
    this.renderThinking = throttled(() => this.flushThinking());
    this.ended = false;
  }

  lastSegment() {
    return this.segments[this.segments.length - 1];
  }

  /** The current turn's text (cumulative); a turn after tool calls gets a new block. */
  setText(text) {
    let seg = this.lastSegment();
    if (!seg || seg.kind !== "text") {
      if (!text) return;
      seg = { kind: "text", text: "", el: h("div", { class: "md" }) };
      this.segments.push(seg);
      this.el.append(seg.el);
    }
    seg.text = text;
    seg.dirty = true;
    this.renderText();
  }

  flushText() {
    const stick = nearBottom();
    for (const seg of this.segments) {
      if (seg.kind !== "text" || !seg.dirty) continue;
      seg.dirty = false;
      renderReply(seg.el, seg.text);
      addCopyButtons(seg.el);
    }
    if (stick) scrollDown(true);
  }

  setThinking(text) {
    if (!this.thinking) {
      this.thinking = thinkingBlock("", false);
      this.thinking.classList.add("streaming");
      this.el.prepend(this.thinking);
    }
    this.thinkingText = text;
    this.renderThinking();
  }

  flushThinking() {
    const body = this.thinking?.querySelector(".md");
    if (body) body.innerHTML = renderMarkdown(this.thinkingText);
  }

  tool(id, name) {
    let p = this.tools.get(id);
    if (!p) {
      p = toolPanel(id, name);
      this.tools.set(id, p);
      this.segments.push({ kind: "tool", el: p.el });
      this.el.append(p.el);
      if (nearBottom()) scrollDown(true);
    }
    return p;
  }

  end(how) {
    this.ended = true;
    this.el.classList.remove("live");
    this.thinking?.classList.remove("streaming");
    this.flushText();
    this.flushThinking();
    if (how === "aborted") this.el.append(h("div", { class: "stopped", text: "Stopped." }));
  }
}

function liveRun(runId) {
  let run = state.runs.get(runId);
  if (!run) {
    run = new Run(runId);
    state.runs.set(runId, run);
    ui.log.querySelector(".empty")?.remove();
    ui.log.append(run.el);
    updateAbort();
  }
  return run;
}

function updateAbort() {
  const live = [...state.runs.values()].some((r) => !r.ended);
  ui.abort.hidden = !live;
}

function setBusy(key, busy) {
  const had = state.busy.has(key);
  if (busy) state.busy.add(key);
  else state.busy.delete(key);
  if (had !== busy) renderSessions();
}

/** After a run: tool outputs the live events did not carry come from the transcript. */
async function fillToolOutputs(run) {
  const missing = [...run.tools.entries()].filter(([, p]) => !p.hasOutput());
  if (!missing.length) return;
  try {
    const history = await state.gw.request("chat.history", { sessionKey: state.current, limit: 200 });
    const results = new Map();
    for (const m of history.messages || []) if (m.role === "toolResult") results.set(m.toolCallId, m);
    for (const [id, p] of missing) {
      const r = results.get(id);
      if (r) {
        p.setOutput(textOf(r.content));
        p.setState(r.isError ? "error" : "done");
      }
    }
  } catch {
    // The outputs show when the session is opened again.
  }
}

function onChat(p) {
  const key = p.sessionKey;
  const terminal = p.state === "final" || p.state === "error" || p.state === "aborted";
  setBusy(key, !terminal);
  if (key !== state.current) {
    if (terminal) refreshSessions();
    return;
  }
  // Live text comes from the `agent` assistant stream (every delta; chat
  // deltas are throttled and may skip a turn's last words before a tool).
  if (!terminal) return;
  if (state.side.delete(p.runId)) {
    // A `/btw` run: its answer is shown as the side result already.
    state.runs.get(p.runId)?.el.remove();
    state.runs.delete(p.runId);
    updateAbort();
    return;
  }
  const run = liveRun(p.runId);
  if ((p.state === "final" || p.state === "aborted") && p.message) run.setText(textOf(p.message.content));
  run.end(p.state);
  if (p.state === "error") {
    run.el.append(h("div", { class: "error", role: "alert", text: p.errorMessage || "The run failed." }));
  }
  if (!run.el.querySelector(".md, .tool, .thinking, .error, .stopped")) run.el.remove();
  state.runs.delete(p.runId);
  updateAbort();
  fillToolOutputs(run);
  refreshSessions();
}

function onAgent(p) {
  if (p.sessionKey !== state.current) return;
  const d = p.data || {};
  if (p.stream === "assistant") {
    liveRun(p.runId).setText(d.text ?? "");
  } else if (p.stream === "thinking") {
    liveRun(p.runId).setThinking(d.text ?? "");
  } else if (p.stream === "tool") {
    const panel = liveRun(p.runId).tool(d.toolCallId, d.name);
    if (d.phase === "start") panel.setInput(d.args);
    if (d.phase === "result") {
      panel.setOutput(d.result);
      panel.setState(d.isError ? "error" : d.skipped ? "skipped" : "done");
    }
  } else if (p.stream === "lifecycle" && d.phase === "start") {
    setBusy(p.sessionKey, true);
  }
}

function onSessionTool(p) {
  if (p.sessionKey !== state.current || !p.runId) return;
  const panel = liveRun(p.runId).tool(p.toolCallId, p.toolName);
  if (p.state === "running" && p.input !== undefined) panel.setInput(p.input);
  if (p.state === "done" || p.state === "error") {
    if (p.output !== undefined) panel.setOutput(p.output);
    panel.setState(p.state);
  }
}

// ---- exec approvals -------------------------------------------------------------

function onApprovalRequested(p) {
  if (!p?.id || ui.approvals.querySelector(`[data-approval-id="${CSS.escape(p.id)}"]`)) return;
  const r = p.request || {};
  const decide = async (decision) => {
    try {
      await state.gw.request("exec.approval.resolve", { id: p.id, decision });
    } catch (e) {
      notice(`Cannot answer the approval: ${e.message}`, "error");
    }
  };
  const card = h(
    "div",
    { class: "approval", "data-approval-id": p.id, role: "alert" },
    h("div", { class: "what" }, "Run ", h("code", { text: r.command || "?" }), r.sessionKey ? ` for ${r.sessionKey}` : "", "?"),
    h(
      "div",
      { class: "buttons" },
      h("button", { type: "button", class: "primary", text: "Allow once", onclick: () => decide("allow-once") }),
      h("button", { type: "button", text: "Always allow", onclick: () => decide("allow-always") }),
      h("button", { type: "button", class: "danger", text: "Deny", onclick: () => decide("deny") }),
    ),
  );
  ui.approvals.append(card);
  const left = (p.expiresAtMs || Date.now() + 120_000) - Date.now();
  setTimeout(() => card.remove(), Math.max(0, left));
}

/** The cards are the approvals waiting now (`exec.approval.list`). */
async function refreshApprovals() {
  let list;
  try {
    list = await state.gw.request("exec.approval.list", {});
  } catch {
    return; // Without operator.approvals there is nothing to answer here.
  }
  const ids = new Set((list || []).map((p) => p.id));
  for (const card of ui.approvals.querySelectorAll("[data-approval-id]")) {
    if (!ids.has(card.dataset.approvalId)) card.remove();
  }
  for (const p of list || []) onApprovalRequested(p);
}

function onApprovalResolved(p) {
  ui.approvals.querySelector(`[data-approval-id="${CSS.escape(p?.id || "")}"]`)?.remove();
}

// ---- events ------------------------------------------------------------------------

function onEvent(event, payload) {
  switch (event) {
    case "chat":
      onChat(payload || {});
      break;
    case "chat.side_result":
      onSideResult(payload || {});
      break;
    case "agent":
      onAgent(payload || {});
      break;
    case "session.tool":
      onSessionTool(payload || {});
      break;
    case "exec.approval.requested":
      onApprovalRequested(payload);
      break;
    case "exec.approval.resolved":
      onApprovalResolved(payload);
      break;
    default:
      break;
  }
}

function onGap() {
  // Events were missed: the transcript is the truth.
  state.runs.clear();
  if (state.current) openSession(state.current, { keepScroll: true });
}

// ---- composer -------------------------------------------------------------------------

function autosize() {
  ui.input.style.height = "auto";
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 240)}px`;
}

function renderAttachments() {
  ui.attachments.hidden = state.images.length === 0;
  ui.attachments.replaceChildren(
    ...state.images.map((img, i) =>
      h(
        "span",
        { class: "attachment" },
        h("img", { src: img.url, alt: img.name }),
        h("button", {
          type: "button",
          title: `Remove ${img.name}`,
          text: "×",
          onclick: () => {
            URL.revokeObjectURL(img.url);
            state.images.splice(i, 1);
            renderAttachments();
          },
        }),
      ),
    ),
  );
}

function readBase64(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).split(",", 2)[1] || "");
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

async function addFiles(files) {
  for (const f of files) {
    if (!f.type.startsWith("image/")) {
      notice(`${f.name}: only images can be attached here.`, "error");
      continue;
    }
    if (f.size > MAX_IMAGE_BYTES) {
      notice(`${f.name}: images up to 5 MB can be attached.`, "error");
      continue;
    }
    state.images.push({ name: f.name, mimeType: f.type, url: URL.createObjectURL(f), content: await readBase64(f) });
  }
  renderAttachments();
}

ui.attach.addEventListener("click", () => ui.file.click());
ui.file.addEventListener("change", () => {
  addFiles([...ui.file.files]);
  ui.file.value = "";
});
ui.input.addEventListener("paste", (e) => {
  const files = [...(e.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
  if (files.length) {
    e.preventDefault();
    addFiles(files);
  }
});
ui.input.addEventListener("input", autosize);
ui.input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    ui.composer.requestSubmit();
  } else if (e.key === "Escape" && !ui.abort.hidden) {
    ui.abort.click();
  }
});
ui.log.addEventListener("scroll", () => {
  state.stick = nearBottom();
});

ui.composer.addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = ui.input.value;
  const images = state.images;
  if (!text.trim() && !images.length) return;
  if (!state.gw.connected) {
    notice("Not connected to the gateway; the message was not sent.", "error");
    return;
  }
  const key = state.current;
  const runId = uuid();
  ui.log.querySelector(".empty")?.remove();
  const bubble = userBubble(text, images);
  ui.log.append(bubble);
  scrollDown(true);
  ui.input.value = "";
  state.images = [];
  renderAttachments();
  autosize();
  const params = { sessionKey: key, message: text, idempotencyKey: runId };
  if (images.length) {
    params.attachments = images.map((i) => ({ type: "image", mimeType: i.mimeType, fileName: i.name, content: i.content }));
  }
  try {
    await state.gw.request("chat.send", params);
    if (state.fresh.includes(key)) refreshSessions();
  } catch (err) {
    bubble.classList.add("failed");
    notice(`Not sent: ${err.message}`, "error");
  }
});

ui.abort.addEventListener("click", async () => {
  const live = [...state.runs.values()].filter((r) => !r.ended);
  for (const run of live) {
    try {
      await state.gw.request("chat.abort", { sessionKey: state.current, runId: run.runId });
    } catch (e) {
      notice(`Cannot stop the run: ${e.message}`, "error");
    }
  }
});

// ---- start ----------------------------------------------------------------------------

async function main() {
  state.stick = true;
  // A token handed over in the address (`/chat#token=...`) is kept, then
  // removed from the address bar.
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    localStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  const reason = unsupportedReason();
  if (reason) notice(`Note: ${reason}.`, "error");
  const identity = await loadIdentity();
  const version = document.querySelector('meta[name="ferroclaw-version"]')?.content || "webchat";
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  state.gw = new Gateway({
    url: `${scheme}//${location.host}/`,
    token: () => localStorage.getItem(TOKEN_KEY) || "",
    identity,
    version,
    onState,
    onEvent,
    onHello: (hello) => onHello(hello).catch((e) => notice(`Cannot load the chat: ${e.message}`, "error")),
    onGap,
  });
  state.gw.start();
  autosize();
  ui.input.focus();
}

main();

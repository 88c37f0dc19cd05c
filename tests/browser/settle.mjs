// Waiting on what a page does, not on time: `watch(page)` follows the
// page's gateway requests (on every WebSocket it opens) and gives
//   frames()        two animation frames: what changed is rendered;
//   mark()          a point to settle from (the requests sent so far);
//   settled(mark)   resolves once the page asked the gateway something
//                   since `mark`, every request has its answer, no HTTP
//                   load is in flight, and nothing new starts within two
//                   frames (a page that asks in sequence, or loads a view's
//                   code before it asks, is waited for to the end);
//                   throws after `timeout` ms naming what is unanswered;
//   load(url)       goes to `url` and settles; a page that lands on
//                   OpenClaw's login gate is loaded again (up to 3 times).
//                   Under load the UI may send `connect` before the
//                   challenge arrives (its 750 ms fallback); the gateway
//                   answers "device nonce required", as the protocol says,
//                   and the UI shows its login gate with this browser's own
//                   token in the field. A user reloads; so does the test,
//                   and what it reads is a signed-in page.

export function watch(page, timeout = 20_000) {
  const methods = new Map();
  const unanswered = new Map(); // key -> the document generation it was asked in
  let sent = 0;
  let sockets = 0;
  // A document that is left (a reload, a new URL) answers nothing more:
  // what its sockets asked is forgotten, whether or not they report closing.
  let generation = 0;
  page.on("framenavigated", (f) => { if (f === page.mainFrame()) generation += 1; });
  // Loads in flight that a view needs before it asks (its code, its data),
  // not images or fonts.
  const loading = new Set();
  const NEEDED = new Set(["document", "script", "fetch", "xhr"]);
  page.on("request", (r) => { if (NEEDED.has(r.resourceType())) loading.add(r); });
  page.on("requestfinished", (r) => loading.delete(r));
  page.on("requestfailed", (r) => loading.delete(r));
  // A fetch whose body the page never reads may never "finish": its answer
  // came, which is what the page waited for.
  page.on("response", (r) => {
    const q = r.request();
    if (q.resourceType() === "fetch" || q.resourceType() === "xhr") loading.delete(q);
  });
  page.on("websocket", (ws) => {
    const n = ++sockets;
    ws.on("framesent", (f) => {
      let j; try { j = JSON.parse(f.payload); } catch { return; }
      if (j?.type !== "req") return;
      methods.set(`${n}:${j.id}`, j.method);
      unanswered.set(`${n}:${j.id}`, generation);
      sent += 1;
    });
    ws.on("framereceived", (f) => {
      let j; try { j = JSON.parse(f.payload); } catch { return; }
      if (j?.type === "res") unanswered.delete(`${n}:${j.id}`);
    });
    ws.on("close", () => {
      for (const k of [...unanswered.keys()]) if (k.startsWith(`${n}:`)) unanswered.delete(k);
    });
  });
  const open = () => [...unanswered].filter(([, g]) => g === generation).map(([k]) => k);
  const frames = () => page.evaluate(() => new Promise((r) =>
    requestAnimationFrame(() => requestAnimationFrame(r))));
  async function settled(mark) {
    const deadline = Date.now() + timeout;
    const idle = () => open().length === 0 && loading.size === 0;
    for (;;) {
      if (Date.now() > deadline) {
        const asks = open().map((k) => methods.get(k)).join(", ") || "none";
        const loads = [...loading].map((r) => new URL(r.url()).pathname).join(", ") || "none";
        throw new Error(`the page never settled: unanswered ${asks}; loading ${loads}; ${sent - mark} sent`);
      }
      if (sent > mark && idle()) {
        const at = sent;
        await frames();
        if (sent === at && idle()) return;
      } else {
        await frames();
      }
    }
  }
  async function load(url) {
    for (let attempt = 1; ; attempt += 1) {
      const before = sent;
      await page.goto(url);
      await settled(before);
      if ((await page.locator("openclaw-login-gate").count()) === 0) return;
      if (attempt === 3) throw new Error(`${url} showed the login gate ${attempt} times`);
    }
  }
  return { frames, settled, load, mark: () => sent };
}

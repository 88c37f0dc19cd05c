// Chromium (Debian's, through playwright-core) on a fresh page whose
// WebSocket calls are recorded into `seen`: each request method counted
// (`seen.requests`), each failed answer kept (`seen.failedCalls`), console
// errors and page errors too. `onRequest(frame)` sees each request,
// `onAnswer(method, frame)` each answer. Also returns `settle.mjs`'s
// `frames`, `mark`, `settled` and `load` for the page.

import { chromium } from "playwright-core";
import { watch } from "./settle.mjs";

// OpenClaw's chat header asks for the workspace's icon; a workspace without
// one answers 404 (as OpenClaw's own server does), which Chromium logs as a
// console error. That one is the upstream UI's, not a fault of the gateway.
export function noWorkspaceIcon(m) {
  return m.text().startsWith("Failed to load resource") && (m.location()?.url || "").includes("/__openclaw__/workspace-icon/");
}

export async function openRecorded(seen, { onRequest, onAnswer } = {}) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" && !noWorkspaceIcon(m)) seen.consoleErrors.push(m.text().slice(0, 300));
  });
  page.on("pageerror", (e) => seen.pageErrors.push(e.message.slice(0, 300)));
  const settle = watch(page);
  const pending = new Map();
  page.on("websocket", (ws) => {
    ws.on("framesent", (f) => {
      let j; try { j = JSON.parse(f.payload); } catch { return; }
      if (j?.type !== "req") return;
      pending.set(j.id, j.method);
      seen.requests[j.method] = (seen.requests[j.method] || 0) + 1;
      onRequest?.(j);
    });
    ws.on("framereceived", (f) => {
      let j; try { j = JSON.parse(f.payload); } catch { return; }
      if (j?.type !== "res") return;
      const method = pending.get(j.id);
      onAnswer?.(method, j);
      if (j.ok === false) seen.failedCalls.push(`${method}: ${j.error?.code} ${j.error?.message}`);
    });
  });
  return { browser, context, page, ...settle };
}

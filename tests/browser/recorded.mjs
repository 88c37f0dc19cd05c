// Chromium (Debian's, through playwright-core) on a fresh page whose
// WebSocket calls are recorded into `seen`: each request method counted
// (`seen.requests`), each failed answer kept (`seen.failedCalls`), console
// errors and page errors too. `onRequest(frame)` sees each request,
// `onAnswer(method, frame)` each answer. Also returns `settle.mjs`'s
// `frames`, `mark`, `settled` and `load` for the page.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { watch } from "./settle.mjs";

// OpenClaw's chat header asks for the workspace's icon, and its Activity
// page for the agent's avatar (`/avatar/<agent id>`); a workspace without
// an icon, an agent without an avatar image, answers 404 (as OpenClaw's own
// server does: `handleControlUiAvatarRequest`), which Chromium logs as a
// console error. Those are the upstream UI's, not faults of the gateway.
export function noWorkspaceIcon(m) {
  const url = m.location()?.url || "";
  return m.text().startsWith("Failed to load resource")
    && (url.includes("/__openclaw__/workspace-icon/") || /\/avatar\/[^/?]+$/.test(new URL(url, "http://x").pathname));
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

// The script's arguments, named; a missing one prints `usage` and exits 2.
// The last argument is the artifacts folder (created).
export function args(names, usage) {
  const given = process.argv.slice(2);
  if (given.length < names.length || given.slice(0, names.length).some((v) => !v)) {
    console.error(`usage: ${usage}`);
    process.exit(2);
  }
  const out = Object.fromEntries(names.map((n, i) => [n, given[i]]));
  mkdirSync(out.artifacts, { recursive: true });
  return out;
}

// Runs `steps(at)` (each step names itself in `at.step`) on an opened
// page; prints `seen` as one JSON line for the Rust test. A failed step is
// named on stderr with a screenshot and the page's text, and exits 1.
export async function runSteps(seen, { browser, context, page }, artifacts, steps) {
  const at = { step: "launch" };
  try {
    await steps(at);
    await context.close();
  } catch (e) {
    console.error(`step failed: ${at.step}: ${e.message}`);
    try { await page.screenshot({ path: join(artifacts, "failed.png"), fullPage: true }); } catch {}
    try { seen.failedAt = (await page.evaluate(() => document.body.innerText)).slice(0, 6000); } catch {}
    console.log(JSON.stringify(seen));
    await browser.close();
    process.exit(1);
  }
  await browser.close();
  console.log(JSON.stringify(seen));
}

// The web chat across a gateway restart: this script runs the real
// `ferroclaw gateway` binary itself, opens the page, stops the gateway
// (SIGTERM: `shutdown`, then close 1012), watches the page say it is
// disconnected and retry with growing delays, starts the gateway again on
// the same port, and checks the page reconnects by itself with its history.
// Prints one JSON line for the Rust test; exits non-zero naming the failed step.
//
// Usage: node reconnect.test.mjs <ferroclaw binary> <state dir> <token> <artifacts dir>

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const [bin, stateDir, token, artifacts] = process.argv.slice(2);
if (!bin || !stateDir || !token || !artifacts) {
  console.error("usage: node reconnect.test.mjs <ferroclaw> <state dir> <token> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const WAIT = { timeout: 20_000 };

/** Starts the gateway; resolves with the child and its address. */
function startGateway(port) {
  const child = spawn(bin, ["gateway", "--port", String(port), "--state-dir", stateDir], {
    env: { ...process.env, HOME: stateDir, OPENCLAW_GATEWAY_TOKEN: "" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stderr });
    const timer = setTimeout(() => reject(new Error("the gateway did not start")), 20_000);
    lines.on("line", (l) => {
      const m = l.match(/listening on ws:\/\/(\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ child, addr: m[1] });
      }
    });
    child.on("exit", (code) => reject(new Error(`the gateway exited (${code})`)));
  });
}

function stopGateway(child) {
  return new Promise((resolve) => {
    child.removeAllListeners("exit");
    child.on("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

let step = "start the gateway";
let gw = await startGateway(0);
const base = `http://${gw.addr}`;
const port = gw.addr.split(":").pop();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let page;
const seen = { states: [] };
try {
  page = await (await browser.newContext()).newPage();
  step = "open the page with the token in the address";
  await page.goto(`${base}/chat#token=${encodeURIComponent(token)}`);
  await page.waitForSelector("#conn[data-state=connected]", WAIT);
  assert.equal(new URL(page.url()).hash, "", "the token leaves the address bar");
  await page.fill("#input", "before the restart");
  await page.press("#input", "Enter");
  await page.locator(".msg.assistant:not(.live)", { hasText: "You said: before the restart" }).waitFor(WAIT);

  step = "stop the gateway: the page says so and retries with growing delays";
  // Watched from the signal on: the process takes a while to exit after it
  // closed the sockets, and the page may already have retried by then.
  const stopped = stopGateway(gw.child);
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const text = await page.textContent("#conn");
    if (seen.states.at(-1) !== text) seen.states.push(text);
    await page.waitForTimeout(100);
  }
  await stopped;
  await page.screenshot({ path: join(artifacts, "reconnect-1-waiting.png") });
  const delays = seen.states
    .map((s) => s.match(/retrying in (\d+) s/))
    .filter(Boolean)
    .map((m) => Number(m[1]));
  assert.ok(seen.states.some((s) => /disconnected \(service restart\)/.test(s)), JSON.stringify(seen.states));
  assert.ok(Math.max(...delays) > Math.min(...delays), `the delay grows: ${JSON.stringify(seen.states)}`);
  assert.ok(await page.isVisible("#retry"), "a Retry now button is offered");
  assert.ok(await page.isDisabled("#send"), "sending waits for the connection");

  step = "start the gateway again on the same port: the page reconnects by itself";
  gw = await startGateway(port);
  await page.waitForSelector("#conn[data-state=connected]", WAIT);
  await page.locator(".msg.user", { hasText: "before the restart" }).waitFor(WAIT);
  await page.fill("#input", "after the restart");
  await page.press("#input", "Enter");
  await page.locator(".msg.assistant:not(.live)", { hasText: "You said: after the restart" }).waitFor(WAIT);
  await page.screenshot({ path: join(artifacts, "reconnect-2-back.png") });
  seen.users = await page.locator(".msg.user").count();
  assert.equal(seen.users, 2);
  step = "done";
} catch (e) {
  if (page) await page.screenshot({ path: join(artifacts, "reconnect-failed.png") }).catch(() => {});
  console.error(`webchat reconnect test failed at: ${step}\n${e.stack || e}\nstates: ${JSON.stringify(seen.states)}`);
  await browser.close();
  await stopGateway(gw.child);
  process.exit(1);
}
await browser.close();
await stopGateway(gw.child);
console.log(JSON.stringify({ ok: true, seen }));

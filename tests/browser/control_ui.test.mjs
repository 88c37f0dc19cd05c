// OpenClaw's own Control UI (the `openclaw` npm package's build), served by
// ferroclaw, in Debian's Chromium driven by playwright-core: it signs in
// with the token, chats with the offline model until the UI says the turn is
// done, then opens each page. Every WebSocket request is counted per page
// and method; every failed answer, console error, page error and failed HTTP
// load is recorded; each page's error banners are read. Screenshots of every
// step go to the artifacts folder. Prints one JSON line (what was seen) for
// the Rust test, which makes the assertions; exits non-zero only when a step
// cannot be done at all, naming it.
//
// Usage: node control_ui.test.mjs <http base URL> <gateway token> <artifacts dir>

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { watch } from "./settle.mjs";

const [base, token, artifacts] = process.argv.slice(2);
if (!base || !token || !artifacts) {
  console.error("usage: node control_ui.test.mjs <base url> <token> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const WAIT = { timeout: 20_000 };
const PAGES = [
  ["sessions", "/sessions"],
  ["agents", "/agents"],
  ["systems", "/systems"],
  ["automations", "/automations"],
  ["skills", "/skills"],
  ["usage", "/usage"],
  ["logs", "/logs"],
  ["channels", "/channels"],
  ["devices", "/nodes"],
  ["config", "/config"],
  ["debug", "/debug"],
];
/** Error banners and notices the UI shows (its own class names). */
const BANNERS = [
  ".callout.danger",
  ".callout.error",
  ".chat-error",
  ".chat-history-error",
  ".sidebar-session-error",
  ".sidebar-session-catalog-error",
  ".lazy-view-error",
  ".sessions-error",
  ".systems-callout--error",
  ".provider-usage-error",
  ".oc-banner",
  "[role=alert]",
].join(",");
const BAD_TEXT = /unknown method|invalid [\w.]+ params|Gateway unreachable|request failed|may be incomplete|returned an invalid/i;

const seen = { pages: {}, consoleErrors: [], pageErrors: [], httpErrors: [], failedCalls: [] };
let step = "launch";
let current = "connect";
let shot = 0;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let page;

async function snap(name) {
  shot += 1;
  await page.screenshot({ path: join(artifacts, `${String(shot).padStart(2, "0")}-${name}.png`) });
}

function record(name) {
  seen.pages[name] ??= { requests: {}, banners: [], badText: [] };
  return seen.pages[name];
}

/** What a page shows that looks like an error. */
async function readErrors(name) {
  const p = record(name);
  p.banners = await page.evaluate((sel) =>
    [...document.querySelectorAll(sel)]
      .filter((e) => e.offsetParent !== null && (e.textContent || "").trim())
      .map((e) => (e.textContent || "").trim().slice(0, 200)), BANNERS);
  const text = await page.evaluate(() => document.body.innerText);
  p.badText = text.split("\n").filter((l) => BAD_TEXT.test(l)).slice(0, 5);
}

try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  const { settled, mark, load } = watch(page, WAIT.timeout);
  page.on("console", (m) => {
    if (m.type() === "error") seen.consoleErrors.push(`[${current}] ${m.text().slice(0, 300)}`);
  });
  page.on("pageerror", (e) => seen.pageErrors.push(`[${current}] ${e.message.slice(0, 300)}`));
  page.on("response", (r) => {
    if (r.status() >= 400) seen.httpErrors.push(`[${current}] ${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
  const pending = new Map();
  page.on("websocket", (ws) => {
    ws.on("framesent", (f) => {
      let j;
      try { j = JSON.parse(f.payload); } catch { return; }
      if (j?.type !== "req") return;
      pending.set(j.id, { method: j.method, page: current });
      const reqs = record(current).requests;
      reqs[j.method] = (reqs[j.method] || 0) + 1;
    });
    ws.on("framereceived", (f) => {
      let j;
      try { j = JSON.parse(f.payload); } catch { return; }
      if (j?.type === "res" && j.ok === false) {
        const r = pending.get(j.id);
        seen.failedCalls.push(`[${r?.page}] ${r?.method}: ${j.error?.code} ${j.error?.message}`);
      }
    });
  });

  step = "sign in with the token";
  current = "chat";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  const composer = page.getByPlaceholder(/^Message/);
  await composer.waitFor(WAIT);
  await snap("signed-in");

  step = "chat to a finished turn";
  const text = "hello from the control ui";
  const asked = mark();
  await composer.fill(text);
  await composer.press("Enter");
  await page.getByText(`You said: ${text}`).first().waitFor(WAIT);
  await page.locator(".agent-chat__run-status-announcement", { hasText: "Done" }).waitFor({ state: "attached", ...WAIT });
  await settled(asked);
  // Rendered text only (the screen-reader announcement repeats the last message).
  const visible = (t) => page.locator(".chat-thread :not(.sr-only)").getByText(t, { exact: true }).locator("visible=true").count();
  seen.chat = {
    done: true,
    replies: await visible(`You said: ${text}`),
    sent: await visible(text),
    composerEmpty: (await composer.inputValue()) === "",
  };
  await readErrors("chat");
  await snap("chat-done");

  for (const [name, path] of PAGES) {
    step = `open the ${name} page`;
    current = name;
    record(name);
    await load(`${base}${path}`);
    if (name === "sessions") {
      const row = page.getByText("agent:main:main").first();
      await row.waitFor(WAIT);
      seen.sessionsText = (await page.evaluate(() => document.body.innerText)).slice(0, 4000);
    }
    if (name === "skills") {
      await page.getByText("weather").first().waitFor(WAIT);
      seen.skillsText = (await page.evaluate(() => document.body.innerText)).slice(0, 4000);
    }
    if (name === "usage") {
      // Channels by cost: the Telegram turn and the chat above.
      await page.getByText("Daily Token Usage").first().waitFor(WAIT);
      seen.usageText = (await page.evaluate(() => document.body.innerText)).slice(0, 12000);
    }
    if (name === "automations") {
      await page.getByText("water the plants").first().waitFor(WAIT);
      seen.automationsText = (await page.evaluate(() => document.body.innerText)).slice(0, 4000);
    }
    await readErrors(name);
    seen.pages[name].url = page.url();
    await snap(name);
  }
  await context.close();
} catch (e) {
  console.error(`step failed: ${step}: ${e.message}`);
  try { await snap(`failed-${current}`); } catch {}
  console.log(JSON.stringify(seen));
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(JSON.stringify(seen));

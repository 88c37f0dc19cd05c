// OpenClaw's own Control UI, its Voice settings (`tts`) against ferroclaw:
// the form renders from ferroclaw's schema (every field, the configured
// Local CLI engine among them, no "Unsupported schema node"), Auto-TTS is
// switched from "off" to "always" and saved as a user would, and the Talk
// page shows the realtime state talk.catalog gave. Prints one JSON line
// (the page's text before and after, the save's answer, failed calls,
// page errors) for the Rust test, which makes the assertions; exits
// non-zero only when a step cannot be done at all, naming it.
//
// Usage: node control_ui_voice.test.mjs <http base URL> <gateway token> <artifacts dir>

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { watch } from "./settle.mjs";

const [base, token, artifacts] = process.argv.slice(2);
if (!base || !token || !artifacts) {
  console.error("usage: node control_ui_voice.test.mjs <base url> <token> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const WAIT = { timeout: 20_000 };
const seen = { voice: null, after: null, talk: null, saved: null, failedCalls: [], errors: [] };
let step = "launch";
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let page;
const text = () => page.evaluate(() => document.body.innerText + "\n" +
  [...document.querySelectorAll("input, textarea")].map((e) => e.value).join("\n"));
try {
  page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
  page.on("pageerror", (e) => seen.errors.push(e.message));
  const pending = new Map();
  const { frames, load } = watch(page, WAIT.timeout);
  page.on("websocket", (ws) => {
    ws.on("framesent", (f) => {
      let j;
      try { j = JSON.parse(f.payload); } catch { return; }
      if (j?.type === "req") pending.set(j.id, j.method);
    });
    ws.on("framereceived", (f) => {
      let j;
      try { j = JSON.parse(f.payload); } catch { return; }
      if (j?.type !== "res") return;
      const method = pending.get(j.id);
      if (["config.set", "config.apply", "config.patch"].includes(method)) seen.saved = { method, ok: j.ok, error: j.error ?? null };
      else if (j.ok === false) seen.failedCalls.push(`${method}: ${j.error?.message}`);
    });
  });

  step = "sign in with the token";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  await page.getByPlaceholder(/^Message/).waitFor(WAIT);

  step = "open the Voice settings";
  await load(`${base}/settings/communications`);
  await page.getByText("Voice", { exact: true }).first().click(WAIT);
  await frames();
  await page.getByText("Advanced settings", { exact: false }).last().click(WAIT);
  await page.getByText("Max Text Length", { exact: true }).first().waitFor(WAIT);
  seen.voice = await text();
  await page.screenshot({ path: join(artifacts, "voice.png"), fullPage: true });

  step = "switch Auto-TTS to always and save";
  await page.getByRole("radio", { name: "always", exact: true }).first().click(WAIT);
  await frames();
  const save = page.getByRole("button", { name: "Save", exact: true });
  if (await save.count()) await save.first().click(WAIT);
  const deadline = Date.now() + 20_000;
  while (!seen.saved && Date.now() < deadline) await frames();
  await load(`${base}/settings/communications`);
  await page.getByText("Voice", { exact: true }).first().click(WAIT);
  await frames();
  seen.after = await page.evaluate(() => [...document.querySelectorAll("[role=radio]")]
    .map((r) => `${r.textContent.trim()}=${r.getAttribute("aria-checked") ?? r.checked}`));
  await page.screenshot({ path: join(artifacts, "saved.png"), fullPage: true });

  step = "read the Talk page";
  await load(`${base}/settings/talk`);
  await page.getByText("Realtime voice", { exact: false }).first().waitFor(WAIT);
  seen.talk = await text();
} catch (e) {
  console.error(`step failed: ${step}: ${e.message}`);
  try { await page.screenshot({ path: join(artifacts, "failed.png") }); } catch {}
  console.log(JSON.stringify(seen));
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(JSON.stringify(seen));

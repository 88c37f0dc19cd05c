// OpenClaw's own Control UI against a config with a secret in every
// secret-bearing setting: every settings page is read (its text and every
// field's value) for secrets, then the raw config editor is revealed, one
// non-secret value is changed and saved, as a user would. Prints one JSON
// line (what each page showed, the raw text, the save's answer) for the
// Rust test, which makes the assertions; exits non-zero only when a step
// cannot be done at all, naming it.
//
// Usage: node control_ui_config.test.mjs <http base URL> <gateway token> <artifacts dir>

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { watch } from "./settle.mjs";

const [base, token, artifacts] = process.argv.slice(2);
if (!base || !token || !artifacts) {
  console.error("usage: node control_ui_config.test.mjs <base url> <token> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const WAIT = { timeout: 20_000 };
const seen = { pages: {}, raw: null, saved: null, failedCalls: [] };
let step = "launch";
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let page;
try {
  page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
  const pending = new Map();
  const { frames, load } = watch(page, WAIT.timeout);
  let saveAnswer = null;
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
      if (method === "config.set" || method === "config.apply") saveAnswer = { method, ok: j.ok, error: j.error ?? null };
      else if (j.ok === false) seen.failedCalls.push(`${method}: ${j.error?.message}`);
    });
  });

  step = "sign in with the token";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  await page.getByPlaceholder(/^Message/).waitFor(WAIT);

  step = "read every settings page";
  await load(`${base}/config`);
  // The settings navigation is rendered once the advanced page's link is.
  await page.locator('a[href="/settings/advanced"]').first().waitFor({ state: "attached", ...WAIT });
  const links = await page.evaluate(() => [...new Set([...document.querySelectorAll("a[href]")]
    .map((a) => a.getAttribute("href")).filter((h) => h && h.startsWith("/settings/")))]);
  for (const href of links) {
    await load(`${base}${href}`);
    seen.pages[href] = await page.evaluate(() => document.body.innerText + "\n" +
      [...document.querySelectorAll("input, textarea")].map((e) => e.value).join("\n"));
  }

  step = "reveal the raw config";
  await load(`${base}/settings/advanced`);
  await page.getByRole("button", { name: "Raw", exact: true }).click(WAIT);
  await page.getByRole("button", { name: "Toggle raw config redaction" }).click(WAIT);
  const editor = page.locator("textarea").first();
  await editor.waitFor(WAIT);
  seen.raw = await editor.inputValue();
  await page.screenshot({ path: join(artifacts, "raw-revealed.png") });

  step = "change one setting and save";
  await editor.fill(seen.raw.replace(/"dmPolicy":\s*"pairing"/, '"dmPolicy": "allowlist"'));
  await page.getByRole("button", { name: "Save", exact: true }).click(WAIT);
  const deadline = Date.now() + 20_000;
  while (!saveAnswer && Date.now() < deadline) await frames();
  seen.saved = saveAnswer;
  await page.screenshot({ path: join(artifacts, "saved.png") });
} catch (e) {
  console.error(`step failed: ${step}: ${e.message}`);
  try { await page.screenshot({ path: join(artifacts, "failed.png") }); } catch {}
  console.log(JSON.stringify(seen));
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(JSON.stringify(seen));

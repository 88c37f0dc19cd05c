// The web chat's media in a real browser (issue 32): a session whose
// transcript holds an image and a PDF (sent by the Rust test through
// chat.send) shows the image from the media store (`GET /media/<id>` by the
// signed link chat.history gives) and offers the PDF as a file (fetched
// with the token); a `/btw` question gets its
// answer as a side result, apart from the conversation. Prints one JSON
// line (what was seen); exits non-zero at the first failed step.
//
// Usage: node media.test.mjs <http base URL> <gateway token> <image media id> <artifacts dir>

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [base, token, imageId, artifacts] = process.argv.slice(2);
if (!base || !token || !imageId || !artifacts) {
  console.error("usage: node media.test.mjs <base url> <token> <image media id> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const WAIT = { timeout: 15_000 };
const seen = {};
let step = "launch";
let page;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const consoleErrors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  page = await context.newPage();
  page.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(`console: ${m.text()}`);
  });

  step = "sign in: the default session's history loads";
  await page.goto(`${base}/chat`);
  await page.locator("#token-dialog[open]").waitFor(WAIT);
  await page.fill("#token-input", token);
  await page.click("#token-form button[value=save]");
  await page.waitForSelector("#conn[data-state=connected]", WAIT);
  await page.locator(".msg.user").first().waitFor(WAIT);

  step = "the image is shown from the media store";
  await page.waitForFunction(() => {
    const img = document.querySelector(".msg.user img.thumb");
    // The signed link chat.history gives (an <img> sends no token).
    return img && img.complete && img.naturalWidth > 0 && /\/media\/[0-9a-f]{64}\?exp=\d+&sig=/.test(img.src);
  }, null, WAIT);
  seen.image = await page.evaluate(() => {
    const img = document.querySelector(".msg.user img.thumb");
    return { width: img.naturalWidth, height: img.naturalHeight };
  });

  step = "the PDF is offered as a file";
  seen.files = await page.locator(".msg.user a.file").allTextContents();
  assert.ok(seen.files.some((t) => t.startsWith("inv.pdf")), JSON.stringify(seen.files));
  await page.screenshot({ path: join(artifacts, "01-media.png"), fullPage: true });

  step = "a /btw question: its answer shows apart, not as a reply";
  const replies = await page.locator(".msg.assistant").count();
  await page.fill("#input", "/btw what is this chat about?");
  await page.press("#input", "Enter");
  const side = page.locator(".msg.side");
  await side.waitFor(WAIT);
  seen.side = (await side.textContent()).trim();
  assert.match(seen.side, /btw: what is this chat about\?/);
  await page.waitForTimeout(500);
  seen.repliesAfter = await page.locator(".msg.assistant").count();
  assert.equal(seen.repliesAfter, replies, "no reply bubble for the side question");
  await page.screenshot({ path: join(artifacts, "02-btw.png"), fullPage: true });

  step = "a reply's MEDIA: line shows the stored image in the reply";
  await page.fill("#input", `show it back\nMEDIA: media:${imageId}`);
  await page.press("#input", "Enter");
  await page.waitForFunction(() => {
    const img = [...document.querySelectorAll(".msg.assistant img.thumb")].pop();
    return img && img.complete && img.naturalWidth > 0;
  }, null, WAIT);
  seen.replyText = (await page.locator(".msg.assistant").last().textContent()).trim();
  assert.ok(!seen.replyText.includes("MEDIA:"), seen.replyText);
  await page.screenshot({ path: join(artifacts, "03-media-line.png"), fullPage: true });

  assert.deepEqual(consoleErrors, []);
  step = "done";
} catch (e) {
  if (page) await page.screenshot({ path: join(artifacts, "failed.png"), fullPage: true }).catch(() => {});
  console.error(`media browser test failed at: ${step}\n${e.stack || e}\nconsole errors: ${JSON.stringify(consoleErrors)}`);
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(JSON.stringify({ ok: true, seen }));

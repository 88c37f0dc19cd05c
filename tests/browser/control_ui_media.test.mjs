// OpenClaw's own Control UI shows a message's stored files (issue 32): a
// session whose transcript holds an image and a PDF (sent by the Rust test
// through chat.send) is opened in the UI; the image is drawn from the
// gateway's media store (the signed `/media/<id>` link chat.history gives,
// since an <img> sends no token) and the PDF is offered by the same kind of
// link. Prints one JSON line (what was seen) for the Rust test, which makes
// the assertions; exits non-zero only when a step cannot be done, naming it.
//
// Usage: node control_ui_media.test.mjs <http base URL> <gateway token> <artifacts dir>

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { watch } from "./settle.mjs";
import { noWorkspaceIcon } from "./recorded.mjs";

const [base, token, artifacts] = process.argv.slice(2);
if (!base || !token || !artifacts) {
  console.error("usage: node control_ui_media.test.mjs <base url> <token> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const WAIT = { timeout: 20_000 };

const seen = { images: [], links: [], mediaResponses: [], httpErrors: [], consoleErrors: [], pageErrors: [] };
let step = "launch";
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let page;
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  const { mark, settled, load } = watch(page, WAIT.timeout);
  page.on("console", (m) => {
    if (m.type() === "error" && !noWorkspaceIcon(m)) seen.consoleErrors.push(m.text().slice(0, 300));
  });
  page.on("pageerror", (e) => seen.pageErrors.push(e.message.slice(0, 300)));
  page.on("response", (r) => {
    const u = new URL(r.url());
    if (r.status() >= 400) seen.httpErrors.push(`${r.status()} ${r.request().method()} ${u.pathname}`);
    if (u.pathname.startsWith("/media/")) {
      seen.mediaResponses.push({ path: u.pathname, signed: u.searchParams.has("sig"), status: r.status() });
    }
  });

  step = "sign in with the token: the main session's history shows";
  const opened = mark();
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  await page.getByPlaceholder(/^Message/).waitFor(WAIT);
  await page.getByText("here is the picture and the invoice").first().waitFor(WAIT);

  step = "the image is drawn from the media store";
  await page.waitForFunction(() => [...document.querySelectorAll(".chat-thread img")]
    .some((i) => i.src.includes("/media/") && i.complete && i.naturalWidth > 0), null, WAIT);
  seen.images = await page.evaluate(() => [...document.querySelectorAll(".chat-thread img")]
    .map((i) => ({ src: new URL(i.src).pathname + new URL(i.src).search, width: i.naturalWidth, height: i.naturalHeight })));
  step = "the PDF is offered";
  await settled(opened);
  seen.links = await page.evaluate(() => [...document.querySelectorAll(".chat-thread a[href], .chat-thread [data-url]")]
    .map((a) => ({ href: a.getAttribute("href") || a.getAttribute("data-url"), text: (a.textContent || "").trim().slice(0, 80) })));
  seen.threadText = await page.evaluate(() => (document.querySelector(".chat-thread")?.innerText || "").slice(0, 2000));
  await page.screenshot({ path: join(artifacts, "01-media.png"), fullPage: true });
  console.log(JSON.stringify(seen));
} catch (e) {
  if (page) await page.screenshot({ path: join(artifacts, "failed.png"), fullPage: true }).catch(() => {});
  console.error(`control ui media test failed at: ${step}\n${e?.message || e}`);
  console.error(`seen: ${JSON.stringify(seen)}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}

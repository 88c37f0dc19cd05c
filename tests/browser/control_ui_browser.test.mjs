// OpenClaw's own Control UI, served by ferroclaw, drives the gateway's
// browser from its Browser panel (issue 52): the panel is toggled open, a
// URL typed into its bar opens a tab, the page is shown (a screenshot read
// through `__openclaw__/assistant-media`, since ferroclaw has no live
// screencast), a click on the picture clicks the page's button, typing
// types into its field, a second URL navigates, Back goes back, Reload
// reloads, and the tab's close button closes it. Every `browser.request`
// the panel sends is recorded with its answer; the page itself reports
// the click and the typing to the Rust test's server. Prints one JSON line
// for the Rust test, which makes the assertions.
//
// Usage: node control_ui_browser.test.mjs <base url> <token> <page one> <page two> <artifacts dir>

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { openRecorded } from "./recorded.mjs";

const [base, token, one, two, artifacts] = process.argv.slice(2);
if (!base || !token || !one || !two || !artifacts) {
  console.error("usage: node control_ui_browser.test.mjs <base url> <token> <page one> <page two> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const WAIT = { timeout: 30_000 };
const seen = {
  requests: {}, failedCalls: [], consoleErrors: [], pageErrors: [], httpErrors: [],
  calls: [], answers: [], shown: null, urlAfterBack: null,
};
let inFlight = 0;
const routeOf = (p) => `${p?.method} ${p?.path}${p?.body?.kind ? ` ${p.body.kind}` : ""}`;
const asked = new Map();
let step = "launch";
const { browser, context, page, frames } = await openRecorded(seen, {
  onRequest: (j) => {
    if (j.method !== "browser.request") return;
    asked.set(j.id, routeOf(j.params));
    seen.calls.push(routeOf(j.params));
    inFlight += 1;
  },
  onAnswer: (method, j) => {
    if (method !== "browser.request") return;
    inFlight -= 1;
    seen.answers.push(`${asked.get(j.id)} ${j.ok ? "ok" : j.error?.details?.code ?? j.error?.code}`);
  },
});
page.on("response", (r) => { if (r.status() >= 400) seen.httpErrors.push(`${r.status()} ${r.url().slice(0, 200)}`); });

/** Waits (on the page's frames, up to 30 s) until `route` was answered ok `n` times in all. */
async function answered(route, n) {
  const count = () => seen.answers.filter((a) => a === `${route} ok`).length;
  const deadline = Date.now() + 30_000;
  while (count() < n && Date.now() < deadline) await frames();
  if (count() < n) throw new Error(`${route} was not answered ${n} times: ${JSON.stringify(seen.answers)}`);
}
const oks = (route) => seen.answers.filter((a) => a === `${route} ok`).length;

/**
 * The page picture the panel shows, after `shots` screenshots were answered
 * and once the panel is idle: no call in flight and the picture where it was
 * a frame ago (it may resize the remote viewport, then show a new picture).
 */
async function picture(shots) {
  await answered("POST /screenshot", shots);
  const img = page.locator("img[src^='data:image']").first();
  await img.waitFor(WAIT);
  const deadline = Date.now() + 30_000;
  let box = await img.boundingBox();
  while (Date.now() < deadline) {
    await frames();
    const now = await img.boundingBox();
    if (inFlight === 0 && JSON.stringify(now) === JSON.stringify(box)) return { img, box };
    box = now;
  }
  throw new Error(`the panel never settled: ${JSON.stringify(seen.calls.slice(-5))}`);
}

try {
  step = "sign in";
  await page.goto(`${base}/#token=${encodeURIComponent(token)}`);
  await page.getByPlaceholder(/^Message/).waitFor(WAIT);

  step = "open the browser panel and a page in it";
  await page.getByRole("button", { name: "Toggle browser panel" }).click();
  const bar = page.getByPlaceholder("Enter a URL and press Enter");
  await bar.waitFor(WAIT);
  await bar.fill(one);
  await bar.press("Enter");
  let { box } = await picture(1);
  seen.shown = box;
  await page.screenshot({ path: join(artifacts, "01-page.png") });

  step = "click the page's button on its picture (its top half)";
  let shots = oks("POST /screenshot");
  await page.mouse.click(box.x + box.width / 2, box.y + box.height * 0.2);
  await answered("POST /act clickCoords", 1);
  ({ box } = await picture(shots + 1));

  step = "type into the page's field (its bottom half)";
  shots = oks("POST /screenshot");
  await page.mouse.click(box.x + box.width / 2, box.y + box.height * 0.8);
  await answered("POST /act clickCoords", 2);
  await picture(shots + 1);
  await page.keyboard.type("hi");
  await answered("POST /act press", 2);
  await page.screenshot({ path: join(artifacts, "02-typed.png") });

  step = "navigate to the second page, then go back";
  await bar.fill(two);
  await bar.press("Enter");
  await answered("POST /navigate", 1);
  await page.getByRole("button", { name: "Back", exact: true }).click();
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && (await bar.inputValue()) !== one) await frames();
  seen.urlAfterBack = await bar.inputValue();
  await page.screenshot({ path: join(artifacts, "03-back.png") });

  step = "reload, then close the tab";
  await page.getByRole("button", { name: "Reload", exact: true }).click();
  await answered("POST /navigate", 2);
  await page.getByRole("button", { name: /^Close tab/ }).first().click();
  const until = Date.now() + 30_000;
  while (Date.now() < until && !seen.answers.some((a) => a.startsWith("DELETE /tabs/"))) await frames();
  seen.closed = seen.answers.find((a) => a.startsWith("DELETE /tabs/")) ?? null;
  await page.screenshot({ path: join(artifacts, "04-closed.png") });
  await context.close();
} catch (e) {
  console.error(`step failed: ${step}: ${e.message}`);
  try { await page.screenshot({ path: join(artifacts, "failed.png"), fullPage: true }); } catch {}
  console.log(JSON.stringify(seen));
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(JSON.stringify(seen));

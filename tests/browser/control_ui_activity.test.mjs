// OpenClaw's own Control UI, served by ferroclaw, on its Activity page after
// the agent wrote an image into the workspace: the page must list it
// (artifacts.list, type image) and show it, the image's bytes loaded from
// its signed /media link. Every WebSocket request and failed answer,
// console and page error is recorded; prints one JSON line for the Rust
// test, which makes the assertions.
//
// Usage: node control_ui_activity.test.mjs <base url> <token> <image title> <artifacts dir>

import { join } from "node:path";
import { args, openRecorded, runSteps } from "./recorded.mjs";

const { base, token, title, artifacts } = args(
  ["base", "token", "title", "artifacts"],
  "node control_ui_activity.test.mjs <base url> <token> <image title> <artifacts dir>",
);
const WAIT = { timeout: 20_000 };
const seen = { requests: {}, failedCalls: [], consoleErrors: [], pageErrors: [], listed: [], media: [] };
const opened = await openRecorded(seen, {
  onAnswer: (method, j) => {
    if (method === "artifacts.list") seen.listed.push(...(j.payload?.artifacts ?? []).map((a) => a.title));
  },
});
const { page, frames, load } = opened;
page.on("response", (r) => {
  if (new URL(r.url()).pathname.startsWith("/media/")) seen.media.push({ status: r.status(), type: r.headers()["content-type"] });
  if (r.status() >= 400) seen.refused = [...(seen.refused ?? []), `${r.status()} ${r.url()}`];
});
await runSteps(seen, opened, artifacts, async (at) => {
  at.step = "sign in";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  await page.getByPlaceholder(/^Message/).waitFor(WAIT);

  at.step = "open the Activity page and find the image";
  await load(`${base}/activity`);
  const image = page.locator(`img[alt="${title}"]`).first();
  await image.waitFor(WAIT);
  await page.waitForFunction((t) => {
    const img = document.querySelector(`img[alt="${t}"]`)
      ?? [...document.querySelectorAll("*")].map((e) => e.shadowRoot?.querySelector(`img[alt="${t}"]`)).find(Boolean);
    return img && img.complete && img.naturalWidth > 0;
  }, title, WAIT).catch(() => {});
  seen.image = await image.evaluate((img) => ({ src: img.getAttribute("src"), width: img.naturalWidth, height: img.naturalHeight }));
  await frames();
  await page.screenshot({ path: join(artifacts, "01-activity.png"), fullPage: true });
});

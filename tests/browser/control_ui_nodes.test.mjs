// OpenClaw's own Control UI, served by ferroclaw, on its Nodes page (the
// route `/nodes`, "Devices" in the menu) with OpenClaw's node host
// connected and waiting for approval: the page must show the node and its
// request, and its Approve button must approve it (node.pair.approve),
// after which the page shows the node approved. Every WebSocket request and
// failed answer, console and page error is recorded; prints one JSON line
// for the Rust test, which makes the assertions.
//
// Usage: node control_ui_nodes.test.mjs <base url> <token> <node name> <artifacts dir>

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { openRecorded } from "./recorded.mjs";

const [base, token, nodeName, artifacts] = process.argv.slice(2);
if (!base || !token || !nodeName || !artifacts) {
  console.error("usage: node control_ui_nodes.test.mjs <base url> <token> <node name> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const WAIT = { timeout: 20_000 };
const seen = { requests: {}, failedCalls: [], consoleErrors: [], pageErrors: [], approveAnswered: null };
let step = "launch";
const { browser, context, page, frames, mark, settled, load } = await openRecorded(seen, {
  onAnswer: (method, j) => { if (method === "node.pair.approve") seen.approveAnswered = j.ok; },
});
try {
  step = "sign in";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  await page.getByPlaceholder(/^Message/).waitFor(WAIT);

  step = "open the nodes page and find the node";
  const opened = mark();
  await load(`${base}/nodes`);
  await page.getByText(nodeName).first().waitFor(WAIT);
  await settled(opened);
  seen.before = (await page.evaluate(() => document.body.innerText)).slice(0, 6000);
  await page.screenshot({ path: join(artifacts, "01-pending.png"), fullPage: true });

  step = "open the node's menu";
  // The row's "approval needed" badge, then the row's menu button after it.
  await page.getByText("approval needed").first().locator("xpath=following::button[1]").click();
  await page.getByRole("menuitem").first().waitFor(WAIT);
  seen.menu = await page.evaluate(() =>
    [...document.querySelectorAll("[role=menuitem],[role=menu] button")].map((e) => (e.textContent || "").trim()));
  await page.screenshot({ path: join(artifacts, "02-menu.png"), fullPage: true });

  step = "approve it from the page";
  const approve = page.getByRole("menuitem", { name: /approve/i }).first();
  await approve.waitFor(WAIT);
  const approving = mark();
  await approve.click();
  const confirm = page.getByRole("dialog").getByRole("button", { name: /approve/i });
  if (await confirm.count()) await confirm.first().click();
  const deadline = Date.now() + 20_000;
  while (seen.approveAnswered === null && Date.now() < deadline) await frames();
  // The page reloads its lists after the answer: read it once they came.
  await settled(approving);
  seen.after = (await page.evaluate(() => document.body.innerText)).slice(0, 6000);
  await page.screenshot({ path: join(artifacts, "03-approved.png"), fullPage: true });
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

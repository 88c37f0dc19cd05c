// OpenClaw's own Control UI, served by ferroclaw, on its Tasks page with a
// sub-agent running: the page must list it (tasks.list) and its cancel
// button must cancel it (tasks.cancel), the row then saying so. Every
// WebSocket request and failed answer, console and page error is
// recorded; prints one JSON line for the Rust test, which makes the
// assertions.
//
// Usage: node control_ui_tasks.test.mjs <base url> <token> <task title> <artifacts dir>

import { join } from "node:path";
import { args, openRecorded, runSteps } from "./recorded.mjs";

const { base, token, title, artifacts } = args(
  ["base", "token", "title", "artifacts"],
  "node control_ui_tasks.test.mjs <base url> <token> <task title> <artifacts dir>",
);
const WAIT = { timeout: 20_000 };
const seen = { requests: {}, failedCalls: [], consoleErrors: [], pageErrors: [], cancelSent: null, cancelAnswer: null };
const opened = await openRecorded(seen, {
  onRequest: (j) => { if (j.method === "tasks.cancel") seen.cancelSent = j.params; },
  onAnswer: (method, j) => { if (method === "tasks.cancel") seen.cancelAnswer = j; },
});
const { page, frames, mark, settled, load } = opened;
await runSteps(seen, opened, artifacts, async (at) => {
  at.step = "sign in";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  await page.getByPlaceholder(/^Message/).waitFor(WAIT);

  at.step = "open the Tasks page and find the running sub-agent";
  await load(`${base}/tasks`);
  await page.getByText(title).first().waitFor(WAIT);
  await frames();
  seen.before = (await page.evaluate(() => document.body.innerText)).slice(0, 6000);
  await page.screenshot({ path: join(artifacts, "01-running.png"), fullPage: true });

  at.step = "cancel it from its row";
  const cancelling = mark();
  await page.getByRole("button", { name: /^Cancel / }).first().click();
  const deadline = Date.now() + 20_000;
  while (seen.cancelAnswer === null && Date.now() < deadline) await frames();
  await settled(cancelling);
  await page.getByText(/cancel+ed/i).first().waitFor(WAIT);
  seen.after = (await page.evaluate(() => document.body.innerText)).slice(0, 6000);
  await page.screenshot({ path: join(artifacts, "02-cancelled.png"), fullPage: true });
});

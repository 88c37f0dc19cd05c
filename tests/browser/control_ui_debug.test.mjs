// OpenClaw's own Control UI, served by ferroclaw, on its Debug page: the
// `status` snapshot it prints must carry ferroclaw's `durable` summary (the
// replies whose fate is uncertain). Every WebSocket request and failed
// answer, console and page error is recorded; prints one JSON line for the
// Rust test, which makes the assertions.
//
// Usage: node control_ui_debug.test.mjs <base url> <token> <artifacts dir>

import { join } from "node:path";
import { args, openRecorded, runSteps } from "./recorded.mjs";

const { base, token, artifacts } = args(
  ["base", "token", "artifacts"],
  "node control_ui_debug.test.mjs <base url> <token> <artifacts dir>",
);
const WAIT = { timeout: 20_000 };
const seen = { requests: {}, failedCalls: [], consoleErrors: [], pageErrors: [], shown: "" };
const opened = await openRecorded(seen, {});
const { page, frames, load } = opened;
await runSteps(seen, opened, artifacts, async (at) => {
  at.step = "sign in";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  await page.getByPlaceholder(/^Message/).waitFor(WAIT);

  at.step = "open the Debug page and find the durable summary in the status snapshot";
  await load(`${base}/debug`);
  const block = page.locator("pre.code-block", { hasText: "unresolvedUncertaintyFacts" }).first();
  await block.waitFor(WAIT);
  await frames();
  seen.shown = (await block.innerText()).slice(0, 6000);
  await page.screenshot({ path: join(artifacts, "01-debug.png"), fullPage: true });
});

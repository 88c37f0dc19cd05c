// OpenClaw's own Control UI, served by ferroclaw, forks a session at one of
// its user messages ("Fork from here" in the message's context menu): the
// UI must call sessions.fork for that message and open the new session.
// Every WebSocket request and failed answer, console and page error is
// recorded; prints one JSON line for the Rust test, which makes the
// assertions.
//
// Usage: node control_ui_fork.test.mjs <base url> <token> <user text> <artifacts dir>

import { join } from "node:path";
import { args, openRecorded, runSteps } from "./recorded.mjs";

const { base, token, text, artifacts } = args(
  ["base", "token", "text", "artifacts"],
  "node control_ui_fork.test.mjs <base url> <token> <user text> <artifacts dir>",
);
const WAIT = { timeout: 20_000 };
const seen = { requests: {}, failedCalls: [], consoleErrors: [], pageErrors: [], forkSent: null, forkAnswer: null };
const opened = await openRecorded(seen, {
  onRequest: (j) => { if (j.method === "sessions.fork") seen.forkSent = j.params; },
  onAnswer: (method, j) => { if (method === "sessions.fork") seen.forkAnswer = j; },
});
const { page, frames, mark, settled, load } = opened;
await runSteps(seen, opened, artifacts, async (at) => {
  at.step = "sign in and find the message";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  const message = page.locator(".chat-thread").getByText(text, { exact: true }).first();
  await message.waitFor(WAIT);
  await page.screenshot({ path: join(artifacts, "01-chat.png"), fullPage: true });

  at.step = "fork from that message (its context menu)";
  const forking = mark();
  await message.click({ button: "right" });
  await frames();
  await page.getByText("Fork from here", { exact: true }).first().click();
  const deadline = Date.now() + 20_000;
  while (seen.forkAnswer === null && Date.now() < deadline) await frames();
  await settled(forking);
  seen.url = page.url();
  seen.after = (await page.evaluate(() => document.body.innerText)).slice(0, 6000);
  await page.screenshot({ path: join(artifacts, "02-forked.png"), fullPage: true });
});

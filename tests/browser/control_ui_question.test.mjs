// OpenClaw's own Control UI, served by ferroclaw, with a run waiting on an
// `ask_user` question: the chat view must show the question (restored by
// question.list or pushed by question.requested) and answering it there
// must call question.resolve. Every WebSocket request and failed answer,
// console and page error is recorded; prints one JSON line for the Rust
// test, which makes the assertions.
//
// Usage: node control_ui_question.test.mjs <base url> <token> <question> <option> <artifacts dir>

import { join } from "node:path";
import { args, openRecorded, runSteps } from "./recorded.mjs";

const { base, token, question, option, artifacts } = args(
  ["base", "token", "question", "option", "artifacts"],
  "node control_ui_question.test.mjs <base url> <token> <question> <option> <artifacts dir>",
);
const WAIT = { timeout: 20_000 };
const seen = { requests: {}, failedCalls: [], consoleErrors: [], pageErrors: [], resolveSent: null, resolveAnswered: null, buttons: [] };
const opened = await openRecorded(seen, {
  onRequest: (j) => { if (j.method === "question.resolve") seen.resolveSent = j.params; },
  onAnswer: (method, j) => { if (method === "question.resolve") seen.resolveAnswered = j.ok; },
});
const { page, frames, mark, settled, load } = opened;
await runSteps(seen, opened, artifacts, async (at) => {
  at.step = "sign in and find the question (its panel takes the composer's place)";
  await load(`${base}/#token=${encodeURIComponent(token)}`);
  await page.locator(`text=${question} >> visible=true`).first().waitFor(WAIT);
  await page.getByRole("button", { name: /^submit$/i }).first().waitFor(WAIT);
  await frames();
  seen.before = (await page.evaluate(() => document.body.innerText)).slice(0, 6000);
  seen.buttons = await page.evaluate(() =>
    [...document.querySelectorAll("button,[role=radio],[role=option],label")]
      .map((e) => (e.textContent || "").trim()).filter((t) => t && t.length < 80));
  await page.screenshot({ path: join(artifacts, "01-question.png"), fullPage: true });

  at.step = "choose the option";
  // Inside the question panel (the user's own message names the option too).
  const answering = mark();
  await page.locator(".chat-question-panel").getByText(option, { exact: true }).first().click();
  // A single choice may submit itself: a few frames tell.
  for (let i = 0; i < 5 && seen.resolveSent === null; i++) await frames();
  await page.screenshot({ path: join(artifacts, "02-chosen.png"), fullPage: true });
  if (seen.resolveSent === null) {
    at.step = "submit the answer";
    await page.getByRole("button", { name: /^submit$/i }).first().click();
  }
  const deadline = Date.now() + 20_000;
  while (seen.resolveAnswered === null && Date.now() < deadline) await frames();
  await settled(answering);
  seen.after = (await page.evaluate(() => document.body.innerText)).slice(0, 6000);
  await page.screenshot({ path: join(artifacts, "03-answered.png"), fullPage: true });
});

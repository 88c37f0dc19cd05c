// The web chat in a real browser: Debian's Chromium driven by playwright-core,
// against a gateway a Rust test started on the offline model. Each step
// asserts what a person would see and saves a screenshot into the artifacts
// folder. Prints one JSON line (what was seen) for the Rust test, and exits
// non-zero at the first failed step, naming it.
//
// Usage: node chat.test.mjs <http base URL> <gateway token> <artifacts dir>

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { watch } from "./settle.mjs";

const [base, token, artifacts] = process.argv.slice(2);
if (!base || !token || !artifacts) {
  console.error("usage: node chat.test.mjs <base url> <token> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const WAIT = { timeout: 15_000 };
const seen = {};
let step = "launch";
let page;
let shot = 0;

async function snap(name) {
  shot += 1;
  await page.screenshot({ path: join(artifacts, `${String(shot).padStart(2, "0")}-${name}.png`), fullPage: true });
}

/** Sends a message through the composer the way a person does. */
async function say(text) {
  await page.fill("#input", text);
  await page.press("#input", "Enter");
}

/** The last reply bubble that is no longer streaming, once it contains `text`. */
async function replyWith(text) {
  const bubble = page.locator(".msg.assistant:not(.live)").filter({ hasText: text }).last();
  await bubble.waitFor(WAIT);
  return bubble;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const consoleErrors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  page = await context.newPage();
  const { mark, settled } = watch(page, WAIT.timeout);
  page.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(`console: ${m.text()}`);
  });
  const offsite = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.protocol.startsWith("http") && u.host !== new URL(base).host) offsite.push(r.url());
  });

  step = "open /chat: no token yet, the token dialog asks for one";
  await page.goto(`${base}/chat`);
  await page.locator("#token-dialog[open]").waitFor(WAIT);
  assert.match(await page.textContent("#token-error"), /gateway\.token/);
  await page.waitForSelector("#conn[data-state=refused]", WAIT);
  await snap("token-dialog");

  step = "enter the token: connected, on the deterministic default session";
  await page.fill("#token-input", token);
  await page.click("#token-form button[value=save]");
  await page.waitForSelector("#conn[data-state=connected]", WAIT);
  // The page says "connected" at hello-ok and opens the session after it
  // has listed sessions and models: wait for the session, not the socket.
  await page.waitForFunction(() => document.querySelector("#session-key")?.textContent !== "", null, WAIT);
  seen.defaultKey = await page.textContent("#session-key");
  assert.equal(seen.defaultKey, "agent:main:web:main");
  seen.tokenStored = await page.evaluate(() => localStorage.getItem("ferroclaw.token"));
  assert.equal(seen.tokenStored, token);
  await snap("connected");

  step = "a reply streams: partial text shows before the end";
  await say("@delay 60\n@tokens 30");
  const live = page.locator(".msg.assistant.live");
  await live.waitFor(WAIT);
  await page.waitForFunction(() => /\bw3\b/.test(document.querySelector(".msg.assistant.live")?.textContent || ""), null, WAIT);
  seen.partial = (await live.textContent()).trim();
  assert.ok(!seen.partial.includes("w30"), `already complete: ${seen.partial}`);
  await snap("streaming");
  const full = await replyWith("w30");
  seen.streamed = (await full.textContent()).trim();
  assert.ok(seen.streamed.startsWith("w1 w2 w3"), seen.streamed);

  step = "/status keeps its lines";
  await say("/status");
  const status = await replyWith("Thinking:");
  seen.statusLines = await status.evaluate((el) => el.innerText.split("\n").filter((l) => l.trim()).length);
  assert.ok(seen.statusLines >= 6, `status on ${seen.statusLines} lines: ${await status.innerText()}`);

  step = "markdown with highlighted code and a copy button";
  await say("here is code\n```rust\nfn main() { println!(\"hi\"); }\n```\nand **bold**");
  const md = await replyWith("here is code");
  assert.equal(await md.locator("strong").textContent(), "bold");
  const code = md.locator("div.code pre code.hljs.language-rust");
  await code.waitFor(WAIT);
  assert.ok((await code.locator("span.hljs-keyword").count()) > 0, "rust keywords are highlighted");
  await md.locator("div.code button.copy").click();
  await page.waitForFunction(() => [...document.querySelectorAll("button.copy")].some((b) => b.textContent === "Copied"), null, WAIT);
  seen.copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(seen.copied.trim(), 'fn main() { println!("hi"); }');
  await snap("markdown");

  step = "a tool call: a collapsible panel with its input and output";
  await say('@tool exec {"command":"echo panel-check-42"}');
  const toolReply = await replyWith("Tool exec returned");
  const panel = toolReply.locator("details.tool").first();
  await panel.waitFor(WAIT);
  assert.equal(await panel.locator(".name").textContent(), "exec");
  assert.equal(await panel.getAttribute("open"), null, "collapsed at first");
  await panel.locator("summary").click();
  await page.waitForFunction(
    () => /panel-check-42/.test(document.querySelector("details.tool[open] pre.output")?.textContent || ""),
    null,
    WAIT,
  );
  seen.toolInput = await panel.locator("pre.input").textContent();
  seen.toolOutput = (await panel.locator("pre.output").textContent()).trim();
  seen.toolState = await panel.getAttribute("data-state");
  assert.match(seen.toolInput, /echo panel-check-42/);
  assert.equal(seen.toolOutput, "panel-check-42");
  assert.equal(seen.toolState, "done");
  await snap("tool-panel");

  step = "thinking: an expandable reasoning block";
  await say("@think weigh the options first\nanswer now");
  const thought = await replyWith("answer now");
  const block = thought.locator("details.thinking");
  await block.waitFor(WAIT);
  await block.locator("summary").click();
  seen.thinking = (await block.locator(".md").textContent()).trim();
  assert.equal(seen.thinking, "weigh the options first");
  await snap("thinking");

  step = "abort: Stop ends a running reply";
  await say("@delay 250\n@tokens 60");
  await page.locator("#abort:not([hidden])").waitFor(WAIT);
  await page.waitForFunction(() => /\bw2\b/.test(document.querySelector(".msg.assistant.live")?.textContent || ""), null, WAIT);
  await page.click("#abort");
  const stopped = page.locator(".msg.assistant .stopped").last();
  await stopped.waitFor(WAIT);
  assert.ok(await page.locator("#abort").isHidden(), "Stop is gone once the run ended");
  seen.abortedText = (await page.locator(".msg.assistant").filter({ has: page.locator(".stopped") }).last().textContent()).trim();
  assert.ok(!seen.abortedText.includes("w60"), seen.abortedText);
  await snap("aborted");

  step = "errors show in the chat";
  await say("@error bad_request");
  const err = page.locator(".msg.assistant .error").last();
  await err.waitFor(WAIT);
  seen.error = await err.textContent();
  assert.match(seen.error, /bad request/);
  await snap("error");

  step = "model and thinking selectors";
  seen.models = await page.$$eval("#model option", (o) => o.map((x) => x.value));
  assert.ok(seen.models.includes("offline/echo"), seen.models.join(","));
  assert.equal(await page.inputValue("#model"), "offline/echo");
  const chosen = mark();
  await page.selectOption("#thinking", "high");
  await page.waitForFunction(() => document.querySelector("#conn")?.dataset.state === "connected");
  // The choice is saved (sessions.patch answered) before the next step.
  await settled(chosen);

  step = "exec approvals: a card asks, Allow once runs the command, Deny refuses it";
  // The Rust test set execAsk=always on this session before the page loaded.
  await page.click('li.session[data-key="agent:main:web:approvals"] button.open');
  await page.waitForFunction(() => document.querySelector("#session-key")?.textContent === "agent:main:web:approvals", null, WAIT);
  await say('@tool exec {"command":"echo approved-77"}');
  const card = page.locator(".approval", { hasText: "echo approved-77" });
  await card.waitFor(WAIT);
  await snap("approval");
  await card.getByRole("button", { name: "Allow once" }).click();
  await replyWith("Tool exec returned: approved-77");
  await card.waitFor({ state: "detached", ...WAIT });
  await say('@tool exec {"command":"echo refused-88"}');
  const card2 = page.locator(".approval", { hasText: "echo refused-88" });
  await card2.waitFor(WAIT);
  await card2.getByRole("button", { name: "Deny" }).click();
  const denied = await replyWith("the operator denied this command");
  const deniedPanel = denied.locator("details.tool").last();
  await page.waitForFunction(
    () => /operator denied/.test([...document.querySelectorAll("details.tool pre.output")].pop()?.textContent || ""),
    null,
    WAIT,
  );
  seen.denied = (await deniedPanel.locator("pre.output").textContent()).trim();
  assert.equal(await deniedPanel.getAttribute("data-state"), "error");
  assert.ok(!seen.denied.includes("refused-88"), `the command did not run: ${seen.denied}`);

  step = "a pending approval survives a reload: its card comes back and answers it";
  await say('@tool exec {"command":"echo after-reload-99"}');
  await page.locator(".approval", { hasText: "echo after-reload-99" }).waitFor(WAIT);
  await page.reload();
  await page.waitForSelector("#conn[data-state=connected]", WAIT);
  await page.waitForFunction(() => document.querySelector("#session-key")?.textContent === "agent:main:web:approvals", null, WAIT);
  const back = page.locator(".approval", { hasText: "echo after-reload-99" });
  await back.waitFor(WAIT);
  seen.waitingPanel = await page.locator("details.tool").last().getAttribute("data-state");
  assert.equal(seen.waitingPanel, "running", "the call waits, it did not fail");
  await snap("approval-after-reload");
  await back.getByRole("button", { name: "Allow once" }).click();
  await replyWith("Tool exec returned: after-reload-99");
  await back.waitFor({ state: "detached", ...WAIT });

  step = "+ Chat: a fresh session with its own key";
  await page.click("#new-chat");
  await page.waitForFunction(() => /^agent:main:web:[0-9a-f-]{36}$/.test(document.querySelector("#session-key")?.textContent || ""), null, WAIT);
  seen.newKey = await page.textContent("#session-key");
  await page.locator("#log .empty", { hasText: "No messages yet" }).waitFor(WAIT);
  assert.equal(await page.locator("#log .msg").count(), 0, "a new chat starts empty");
  await say("hello from the new chat");
  await replyWith("You said: hello from the new chat");
  await page.locator(`li.session[data-key="${seen.newKey}"]`).waitFor(WAIT);
  await snap("new-chat");

  step = "reload: the history comes back, tool panel included";
  await page.click('li.session[data-key="agent:main:web:main"] button.open');
  await page.waitForFunction(() => document.querySelector("#session-key")?.textContent === "agent:main:web:main", null, WAIT);
  await page.reload();
  await page.waitForSelector("#conn[data-state=connected]", WAIT);
  await replyWith("Tool exec returned");
  seen.afterReload = {
    key: await page.textContent("#session-key"),
    users: await page.locator(".msg.user").count(),
    toolPanels: await page.locator("details.tool").count(),
    thinkingBlocks: await page.locator("details.thinking").count(),
    thinkingLevel: await page.inputValue("#thinking"),
  };
  assert.equal(seen.afterReload.key, "agent:main:web:main");
  assert.ok(seen.afterReload.users >= 6, JSON.stringify(seen.afterReload));
  assert.equal(seen.afterReload.toolPanels, 1);
  assert.equal(seen.afterReload.thinkingBlocks, 1);
  assert.equal(seen.afterReload.thinkingLevel, "high");
  const reloadedPanel = page.locator("details.tool").first();
  await reloadedPanel.locator("summary").click();
  assert.equal((await reloadedPanel.locator("pre.output").textContent()).trim(), "panel-check-42");
  await snap("reloaded");

  step = "nothing was fetched from another host, and the page logged no errors";
  seen.offsite = offsite;
  assert.deepEqual(offsite, []);
  assert.deepEqual(consoleErrors, []);
  step = "done";
} catch (e) {
  if (page) await snap("failed").catch(() => {});
  console.error(`webchat browser test failed at: ${step}\n${e.stack || e}\nconsole errors: ${JSON.stringify(consoleErrors)}`);
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(JSON.stringify({ ok: true, seen }));

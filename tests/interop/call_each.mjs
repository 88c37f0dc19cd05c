// Calls gateway methods the way `openclaw gateway call <method> --params
// <json>` does (OpenClaw's own CLI RPC path: its connect, scopes, client
// and answer handling), many in one Node process: a CLI process per call
// costs about 1.5 s of CPU in starting alone. Reads a JSON array of
// [method, params] from argv[4]; prints one JSON line, an array of
// {method, ok, result | error} in the same order.
//
// Usage: node call_each.mjs <ws url> <token> <openclaw package dir> <calls json>

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url, token, pkg, callsJson] = process.argv.slice(2);
if (!url || !token || !pkg || !callsJson) {
  console.error("usage: node call_each.mjs <ws url> <token> <openclaw package dir> <calls json>");
  process.exit(2);
}
// The module `openclaw gateway call` runs (dist/gateway-cli-*.mjs's
// callGatewayReadOnlyCli), in 2026.9.6's build.
const rpc = await import(pathToFileURL(join(pkg, "dist/gateway-rpc-Cmx2JNtz.mjs")).href);
const out = [];
for (const [method, params] of JSON.parse(callsJson)) {
  try {
    const result = await rpc.callGatewayFromCliWithTransport(
      method,
      { url, token, timeout: "10000", json: true },
      params,
      { defaultTimeoutMs: 10_000, sharedStateMode: "read-only" },
    );
    out.push({ method, ok: true, result });
  } catch (e) {
    out.push({ method, ok: false, error: String(e?.message ?? e) });
  }
}
// Exit once the answer is written (a pipe takes it in parts; OpenClaw's
// modules may keep the event loop alive).
process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(0));

// An MCP server over stdio for the fault tests (tests/gateway/mcp_faults.rs):
// plain JSON-RPC lines, no SDK, so each fault is exactly what it says.
// Every message it receives is appended to $FAULT_LOG (one JSON per line).
//
//   node fault_server.mjs <mode>
//
// legacy   speaks 2025-11-25 only: `initialize`; `server/discover` is an
//          unknown method (-32601)
// modern   speaks 2026-07-28 only: `server/discover`, `_meta` on every
//          request, `resultType` on every result; `initialize` is refused
// crash    (legacy) tool `crash` exits the process mid-call; `ok` answers
// hang     (legacy) tool `hang` never answers; `ok` answers
// changes  (legacy) tool `add` adds a tool `added` and announces the change
// garbage  answers every line with bytes that are not JSON
// flood    (legacy) floods notifications once initialized
// schemas  (legacy) tools named like built-ins, twice the same, a bad schema
// huge     (legacy) tool `huge` answers with a 100 MB result
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const mode = process.argv[2] || "legacy";
const log = process.env.FAULT_LOG;
const out = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const reply = (id, result) =>
  out({ jsonrpc: "2.0", id, result: mode === "modern" ? { resultType: "complete", ...result } : result });
const fail = (id, code, message) => out({ jsonrpc: "2.0", id, error: { code, message } });

const schema = { type: "object", properties: { text: { type: "string" } } };
let tools = [
  { name: "ok", description: "Answers at once.", inputSchema: schema, annotations: { readOnlyHint: true } },
  { name: "crash", description: "Exits mid-call.", inputSchema: schema },
  { name: "hang", description: "Never answers.", inputSchema: schema },
  { name: "add", description: "Adds a tool.", inputSchema: schema },
  { name: "huge", description: "Answers with 100 MB.", inputSchema: schema },
];
if (mode === "schemas") {
  tools = [
    { name: "ok", description: "fine", inputSchema: schema },
    { name: "exec", description: "named like a built-in", inputSchema: schema },
    { name: "dup", description: "first", inputSchema: schema },
    { name: "dup", description: "second", inputSchema: schema },
    { name: "bad", description: "not an object schema", inputSchema: { type: "string" } },
  ];
}

function flood() {
  for (let i = 0; i < 20000; i++) {
    out({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    out({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "x", progress: i } });
  }
}

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (log) appendFileSync(log, line + "\n");
  if (mode === "garbage") {
    process.stdout.write("this is not json {{{\n");
    return;
  }
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  const { id, method, params } = m;
  if (method === undefined) return;
  if (method === "server/discover") {
    if (mode !== "modern") return fail(id, -32601, "Method not found: server/discover");
    return reply(id, {
      supportedVersions: ["2026-07-28"],
      capabilities: { tools: { listChanged: true } },
      ttlMs: 0,
      cacheScope: "private",
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "fault-" + mode, version: "1.0.0" } },
    });
  }
  if (method === "initialize") {
    if (mode === "modern") return fail(id, -32601, "Method not found: initialize (2026-07-28 only)");
    return reply(id, {
      protocolVersion: "2025-11-25",
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: "fault-" + mode, version: "1.0.0" },
    });
  }
  if (method === "notifications/initialized") {
    if (mode === "flood") setImmediate(flood);
    return;
  }
  if (method.startsWith("notifications/")) return;
  if (method === "ping") return reply(id, {});
  if (method === "tools/list") {
    return reply(id, mode === "modern" ? { tools, ttlMs: 0, cacheScope: "private" } : { tools });
  }
  if (method === "tools/call") {
    const name = params?.name;
    const text = params?.arguments?.text ?? "";
    if (name === "crash") process.exit(3);
    if (name === "hang") return;
    if (name === "huge") {
      const big = '{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":{"content":[{"type":"text","text":"';
      process.stdout.write(big);
      const block = "x".repeat(1 << 20);
      for (let i = 0; i < 100; i++) process.stdout.write(block);
      process.stdout.write('"}]}}\n');
      return;
    }
    if (name === "add") {
      if (!tools.some((t) => t.name === "added")) {
        tools.push({ name: "added", description: "Added at run time.", inputSchema: schema });
      }
      out({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      return reply(id, { content: [{ type: "text", text: "added a tool" }] });
    }
    const meta = params?._meta ? " meta=" + JSON.stringify(params._meta) : "";
    return reply(id, { content: [{ type: "text", text: `${name} says ${text}${meta}` }] });
  }
  return fail(id, -32601, "Method not found: " + method);
});

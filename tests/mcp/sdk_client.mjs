// The official MCP TypeScript SDK client, driving any MCP server the tests
// name, over stdio or Streamable HTTP: node sdk_client.mjs '<spec>' where spec is
//   {"command": ..., "args": [...], "calls": [{"name": ..., "arguments": {...}}]}
//   or {"url": ..., "headers": {...}, "calls": [...]}
// Prints {"server": <serverInfo>, "tools": [names], "results": [<each call's result or error>]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const spec = JSON.parse(process.argv[2]);
const transport = spec.url
  ? new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers ?? {} } })
  : new StdioClientTransport({
      command: spec.command,
      args: spec.args ?? [],
      env: { ...process.env, ...(spec.env ?? {}) },
      stderr: "ignore",
    });
const client = new Client({ name: "ferroclaw-test", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion(), tools: [], results: [] };
out.tools = (await client.listTools()).tools.map((t) => t.name);
for (const c of spec.calls ?? []) {
  try {
    const r = await client.callTool({ name: c.name, arguments: c.arguments ?? {} });
    out.results.push({ isError: r.isError ?? false, structured: r.structuredContent ?? null, text: (r.content ?? []).map((x) => x.text ?? "").join("\n") });
  } catch (e) {
    out.results.push({ thrown: String(e) });
  }
}
if (transport.sessionId !== undefined) out.sessionId = transport.sessionId ?? null;
console.log(JSON.stringify(out));
if (spec.url) await transport.terminateSession().catch(() => {});
await client.close();
process.exit(0);

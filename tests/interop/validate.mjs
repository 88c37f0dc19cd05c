// OpenClaw's own protocol validators (the compiled TypeBox schemas its npm
// package ships in dist/gateway/protocol) run over frames ferroclaw sent.
// stdin: one JSON object per line, {label, schema, value}; stdout: a JSON
// array of the values a schema refused, with AJV's first errors.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as protocol from "./node_modules/openclaw/dist/gateway/protocol/index.js";

// Schemas the protocol index does not re-export (the cron run-log entry)
// are exported from a hashed bundle chunk under a short alias: find the
// chunk that exports the name and take it from there.
const dist = new URL("./node_modules/openclaw/dist/", import.meta.url);
const chunks = readdirSync(dist).filter((f) => /^src-.*\.mjs$/.test(f));
// `Group.Member` names a schema kept in an exported object of schemas
// (`MigrationProtocolSchemas.MigrationsMemoryPlanResult`).
// `durable/<Name>`: a schema vendored from OpenClaw's source into
// openclaw-schemas/ (not in the 2026.9.6 package yet).
async function schemaNamed(name) {
  const vendored = /^([\w-]+)\/(\w+)$/.exec(name);
  if (vendored) return (await import(`./openclaw-schemas/${vendored[1]}.ts`))[vendored[2]];
  const [group, member] = name.split(".");
  if (member) return (await schemaNamed(group))?.[member];
  if (protocol[name]) return protocol[name];
  const exported = new RegExp(`\\b${name} as ([\\w$]+)`);
  for (const f of chunks) {
    const m = exported.exec(readFileSync(new URL(f, dist), "utf8"));
    if (m) return (await import(new URL(f, dist)))[m[1]];
  }
  return undefined;
}

// AJV as OpenClaw resolves it (hoisted or nested, whatever npm chose).
const require = createRequire(new URL("./node_modules/openclaw/package.json", import.meta.url));
const AjvModule = require("ajv");
const Ajv = AjvModule.default ?? AjvModule;
const ajv = new Ajv({ allErrors: true, strict: false });
const compiled = new Map();
let input = "";
for await (const chunk of process.stdin) input += chunk;
const refused = [];
for (const line of input.split("\n")) {
  if (!line.trim()) continue;
  const { label, schema, value } = JSON.parse(line);
  if (!compiled.has(schema)) {
    const found = await schemaNamed(schema);
    compiled.set(schema, found ? ajv.compile(found) : null);
  }
  if (!compiled.get(schema)) {
    refused.push({ label, schema, errors: ["no such schema in openclaw's protocol"] });
    continue;
  }
  const check = compiled.get(schema);
  if (!check(value)) refused.push({ label, schema, errors: check.errors.slice(0, 5) });
}
console.log(JSON.stringify(refused));

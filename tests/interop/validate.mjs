// OpenClaw's own protocol validators (the compiled TypeBox schemas its npm
// package ships in dist/gateway/protocol) run over frames ferroclaw sent.
// stdin: one JSON object per line, {label, schema, value}; stdout: a JSON
// array of the values a schema refused, with AJV's first errors.
import { createRequire } from "node:module";
import * as protocol from "./node_modules/openclaw/dist/gateway/protocol/index.js";

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
  if (!protocol[schema]) {
    refused.push({ label, schema, errors: ["no such schema in openclaw's protocol"] });
    continue;
  }
  if (!compiled.has(schema)) compiled.set(schema, ajv.compile(protocol[schema]));
  const check = compiled.get(schema);
  if (!check(value)) refused.push({ label, schema, errors: check.errors.slice(0, 5) });
}
console.log(JSON.stringify(refused));

// OpenClaw's own method -> scope rules (its `authorizeOperatorScopesForMethod`,
// from the installed package) asked for each method and single scope.
// stdin: a JSON array of [method, params]; stdout: a JSON object, method ->
// the single operator scopes OpenClaw lets call it with those params.
import { readdirSync, readFileSync } from "node:fs";

const dist = new URL("./node_modules/openclaw/dist/", import.meta.url);
// The bundle exports its functions under short aliases from a chunk whose
// name carries a hash: find the chunk and the alias.
const EXPORT = /authorizeOperatorScopesForMethod as (\w+)/;
const file = readdirSync(dist)
  .filter((f) => /^method-scopes-.*\.mjs$/.test(f))
  .find((f) => EXPORT.test(readFileSync(new URL(f, dist), "utf8")));
const alias = EXPORT.exec(readFileSync(new URL(file, dist), "utf8"))[1];
const mod = await import(new URL(file, dist));
const authorize = mod[alias];
const SCOPES = [
  "operator.read",
  "operator.write",
  "operator.admin",
  "operator.approvals",
  "operator.pairing",
  "operator.questions",
];
let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = {};
for (const [method, params] of JSON.parse(input)) {
  const key = params ? `${method} ${JSON.stringify(params)}` : method;
  out[key] = SCOPES.filter((s) => authorize(method, [s], params ?? {}).allowed);
}
console.log(JSON.stringify(out));

// OpenClaw's own Control UI settings-form analyzer (the `config-form` module
// of its built UI, the function that decides which settings it can draw and
// which it shows as "Unsupported schema node. Use Raw mode.") run over a
// config schema. stdin: the schema (JSON); stdout: a JSON array of the
// paths it cannot draw.
import { readdirSync, readFileSync } from "node:fs";

const assets = new URL("./node_modules/openclaw/dist/control-ui/assets/", import.meta.url);
// The analyzer's module is the config-form chunk that builds the list.
const chunk = readdirSync(assets)
  .filter((f) => /^config-form-[\w-]+\.js$/.test(f))
  .find((f) => readFileSync(new URL(f, assets), "utf8").includes("unsupportedPaths:[`<root>`]"));
if (!chunk) {
  console.error("no config-form analyzer in the installed Control UI");
  process.exit(2);
}
const source = readFileSync(new URL(chunk, assets), "utf8");
// Its exports are minified: find the alias of the analyzer and of the
// chunk's lazy initialiser by their definitions.
const exported = Object.fromEntries(
  [...source.matchAll(/(\w+) as (\w+)/g)].map(([, local, alias]) => [local, alias]),
);
const analyzer = /function (\w+)\(e\)\{return!e\|\|typeof e!=`object`\?\{schema:null,unsupportedPaths/.exec(source)?.[1];
// The chunk's module body is lazy (rolldown): the initialiser that builds
// the analyzer's constants (the Set of scalar types among them) runs first.
const scalars = source.indexOf("new Set([`string`,`number`,`integer`,`boolean`])");
const inits = [...source.slice(0, scalars).matchAll(/function (\w+)\(\)\{return\(\1=e\(/g)];
const init = inits.at(-1)?.[1];
if (!analyzer || !exported[analyzer] || !init || !exported[init]) {
  console.error("the analyzer or its initialiser is not exported by", chunk);
  process.exit(2);
}
const mod = await import(new URL(chunk, assets));
mod[exported[init]]();
let input = "";
for await (const c of process.stdin) input += c;
const { unsupportedPaths } = mod[exported[analyzer]](JSON.parse(input));
console.log(JSON.stringify(unsupportedPaths));

// Builds the web chat into ../dist: chat.js (the app and its libraries,
// bundled and minified by esbuild), chat.css, and index.html with both
// asset URLs carrying a content hash (served as immutable). With --check,
// writes nothing and exits 1 when ../dist differs from what the sources
// build to (the committed bundle must match its sources).
import { createHash } from "node:crypto";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "dist");
const check = process.argv.includes("--check");

const common = {
  bundle: true,
  minify: true,
  write: false,
  legalComments: "eof",
  charset: "utf8",
  logLevel: "warning",
};
// The bundled libraries' licences travel with the bundle (marked and
// highlight.js carry no legal comments of their own).
const licences = [];
for (const [pkg, file] of [["marked", "LICENSE"], ["highlight.js", "LICENSE"], ["dompurify", "LICENSE"]]) {
  const version = JSON.parse(await readFile(join(here, "node_modules", pkg, "package.json"), "utf8")).version;
  const text = await readFile(join(here, "node_modules", pkg, file), "utf8");
  licences.push(`${pkg} ${version}:\n\n${text.replaceAll("*/", "* /").trim()}`);
}
const js = await esbuild.build({
  ...common,
  footer: { js: `/*! Third-party licences of the code bundled above:\n\n${licences.join("\n\n----\n\n")}\n*/` },
  entryPoints: [join(here, "src", "app.js")],
  outfile: join(dist, "chat.js"),
  format: "iife",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
});
const css = await esbuild.build({
  ...common,
  entryPoints: [join(here, "src", "style.css")],
  outfile: join(dist, "chat.css"),
  target: ["chrome100", "firefox100", "safari15"],
});
const hash = (bytes) => createHash("sha256").update(bytes).digest("hex").slice(0, 12);
const jsBytes = js.outputFiles[0].contents;
const cssBytes = css.outputFiles[0].contents;
const html = (await readFile(join(here, "index.html"), "utf8"))
  .replace("chat.js?v=", `chat.js?v=${hash(jsBytes)}`)
  .replace("chat.css?v=", `chat.css?v=${hash(cssBytes)}`);
const outputs = {
  "chat.js": Buffer.from(jsBytes),
  "chat.css": Buffer.from(cssBytes),
  "index.html": Buffer.from(html, "utf8"),
};

if (check) {
  const stale = [];
  for (const [name, bytes] of Object.entries(outputs)) {
    const have = await readFile(join(dist, name)).catch(() => null);
    if (!have || !have.equals(bytes)) stale.push(name);
  }
  if (stale.length) {
    console.error(`webchat: dist/${stale.join(", dist/")} differ from the sources; run \`npm run build\` in src/http/webchat/ui and commit dist/`);
    process.exit(1);
  }
  console.log("webchat: dist matches the sources");
} else {
  await mkdir(dist, { recursive: true });
  for (const [name, bytes] of Object.entries(outputs)) await writeFile(join(dist, name), bytes);
  console.log(`webchat: wrote dist/ (chat.js ${jsBytes.length} B, chat.css ${cssBytes.length} B)`);
}

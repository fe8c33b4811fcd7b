// Builds the package from the repository's sources (lib/enqueue, lib/worker and the lib/store files
// they import): one ESM bundle per entry with shared chunks (one copy of each class, so `instanceof`
// holds across entries), declarations with declaration maps, and the sources the maps point at.
// `npm pack` runs it (prepack). Run from anywhere: paths are taken from this file.
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import ts from "typescript";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const dist = path.join(here, "dist");
const pkg = JSON.parse(readFileSync(path.join(here, "package.json"), "utf8"));
const entries = {
  index: "lib/enqueue/index.ts",
  client: "lib/enqueue/client.ts",
  worker: "lib/worker/index.ts",
  bin: "lib/enqueue/bin.ts",
};

rmSync(dist, { recursive: true, force: true });
rmSync(path.join(here, "src"), { recursive: true, force: true });

// The schema version the package states must be the one its migrations reach.
const migrationsText = readFileSync(path.join(root, "lib/enqueue/migrations.generated.ts"), "utf8");
const versions = [...migrationsText.matchAll(/"version": (\d+)|version: (\d+)/g)].map((m) => Number(m[1] ?? m[2]));
const latest = Math.max(...versions);
if (pkg.workhorse?.schemaVersion !== latest) {
  throw new Error(`package.json says schemaVersion ${pkg.workhorse?.schemaVersion}; the migrations reach ${latest}`);
}

// @opentelemetry/api is an optional peer: the application's copy when it has one (its SDK's
// providers are registered there), else a bundled copy of the API, whose providers are no-ops.
const require = createRequire(import.meta.url);
const otelEsm = path.join(path.dirname(require.resolve("@opentelemetry/api")), "index.mjs");
const otelNames = [
  "context",
  "isSpanContextValid",
  "metrics",
  "propagation",
  "SpanKind",
  "SpanStatusCode",
  "TraceFlags",
  "trace",
];
const optionalOtel = {
  name: "optional-opentelemetry-api",
  setup(build) {
    build.onResolve({ filter: /^@opentelemetry\/api$/ }, (args) =>
      args.importer === "optional-otel" ? { path: otelEsm } : { path: "optional-otel", namespace: "workhorse" },
    );
    build.onLoad({ filter: /^optional-otel$/, namespace: "workhorse" }, () => ({
      resolveDir: root,
      loader: "js",
      contents: `import { createRequire } from "node:module";
import * as bundled from "@opentelemetry/api";
let api = bundled;
try {
  api = createRequire(import.meta.url)("@opentelemetry/api");
} catch {}
${otelNames.map((n) => `export const ${n} = api.${n};`).join("\n")}
`,
    }));
  },
};

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: entries,
  outdir: dist,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  chunkNames: "chunks/[name]-[hash]",
  external: ["pg", "zod", "uuid"],
  plugins: [optionalOtel],
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
});
const bin = path.join(dist, "bin.js");
writeFileSync(bin, `#!/usr/bin/env node\n${readFileSync(bin, "utf8")}`, { mode: 0o755 });

// Nothing of the console, the tests or the frozen legacy migrations may be bundled.
const inputs = Object.keys(result.metafile.inputs).filter((f) => !f.startsWith("workhorse:"));
const otelApi = /(^|\/)node_modules\/@opentelemetry\/api\//;
const allowed = inputs.filter(
  (f) =>
    !otelApi.test(f) &&
    (!/^lib\/(enqueue|worker|store)\//.test(f) ||
      f.startsWith("lib/store/console/") ||
      f.includes("legacy-migrations")),
);
if (allowed.length > 0) throw new Error(`the bundle reaches files outside the core: ${allowed.join(", ")}`);

// Declarations for the entries (and what they reach), with maps to the sources copied under src/.
const typesDir = path.join(dist, "types");
const program = ts.createProgram(
  Object.values(entries).map((e) => path.join(root, e)),
  {
    rootDir: root,
    outDir: typesDir,
    declaration: true,
    emitDeclarationOnly: true,
    declarationMap: true,
    strict: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    lib: ["lib.es2024.d.ts", "lib.dom.d.ts"],
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    types: ["node"],
    stripInternal: false,
  },
);
const emitted = program.emit();
const problems = ts.getPreEmitDiagnostics(program).concat(emitted.diagnostics);
if (problems.length > 0) {
  const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => "\n" };
  throw new Error(ts.formatDiagnostics(problems, host));
}

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

// The declarations name @opentelemetry/api's types (TelemetryOptions' providers): as an optional peer
// it may be absent, so its declaration files ship inside (Apache-2.0, with its LICENSE) and the
// declarations import them there. Its types are interfaces: the application's own providers fit.
const otelDir = path.dirname(otelEsm);
const vendored = path.join(typesDir, "vendor/opentelemetry-api");
for (const file of walk(otelDir)) {
  if (!file.endsWith(".d.mts")) continue;
  const copy = path.join(vendored, path.relative(otelDir, file));
  mkdirSync(path.dirname(copy), { recursive: true });
  cpSync(file, copy);
}
cpSync(path.join(otelDir, "../LICENSE"), path.join(vendored, "LICENSE"));

// NodeNext resolution needs file extensions: "./errors" becomes "./errors.js", "../worker/index"
// "../worker/index.js"; @opentelemetry/api becomes the vendored declarations.
function withExtension(fromFile, specifier) {
  if (specifier === "@opentelemetry/api") {
    const rel = path.relative(path.dirname(fromFile), path.join(vendored, "index.mjs")).split(path.sep).join("/");
    return rel.startsWith(".") ? rel : `./${rel}`;
  }
  if (!specifier.startsWith(".")) return specifier;
  if (/\.(js|d\.ts)$/.test(specifier)) return specifier;
  const base = path.resolve(path.dirname(fromFile), specifier);
  try {
    if (statSync(`${base}.d.ts`).isFile()) return `${specifier}.js`;
  } catch {}
  return `${specifier.replace(/\/$/, "")}/index.js`;
}

for (const file of walk(typesDir)) {
  if (file.startsWith(vendored)) continue;
  if (file.endsWith(".d.ts")) {
    const text = readFileSync(file, "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
    const edits = [];
    const visit = (node) => {
      let literal;
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier)
        literal = node.moduleSpecifier;
      else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal = node.argument.literal;
      if (literal && ts.isStringLiteral(literal)) {
        const next = withExtension(file, literal.text);
        if (next !== literal.text) edits.push({ start: literal.getStart(source) + 1, end: literal.end - 1, next });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    let out = text;
    for (const e of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.next + out.slice(e.end);
    writeFileSync(file, out);
  } else if (file.endsWith(".d.ts.map")) {
    const map = JSON.parse(readFileSync(file, "utf8"));
    map.sources = map.sources.map((s) => {
      const abs = path.resolve(path.dirname(file), s);
      const rel = path.relative(root, abs);
      const copy = path.join(here, "src", rel);
      // The generated SQL module's source is its declarations' data (270 KB): not copied.
      if (!rel.endsWith(".generated.ts")) {
        mkdirSync(path.dirname(copy), { recursive: true });
        cpSync(abs, copy);
      }
      return path.relative(path.dirname(file), copy).split(path.sep).join("/");
    });
    writeFileSync(file, JSON.stringify(map));
  }
}
cpSync(path.join(root, "CHANGELOG.md"), path.join(here, "CHANGELOG.md"));
process.stdout.write(
  `built ${pkg.name}@${pkg.version} (schema version ${latest}) into ${path.relative(process.cwd(), dist) || "."}\n`,
);

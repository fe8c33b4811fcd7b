// The import graph of lib/, app/ and components/ read with the TypeScript compiler's parser: no
// module may reach itself through its imports (type-only imports count: a cycle of types still ties
// the files together), and no module in lib/ grows past 450 lines.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { expect, test } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const DIRS = ["lib", "app", "components"];
const EXTENSIONS = [".ts", ".tsx"];

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (EXTENSIONS.some((e) => name.endsWith(e)) && !name.endsWith(".d.ts")) out.push(full);
  }
  return out;
}

/** The npm package's entries (sdk/typescript/package.json `exports`) and the sources they are built from (tsconfig paths). */
const PACKAGE_ENTRIES: Record<string, string> = {
  "@workhorse/core": "lib/enqueue/index.ts",
  "@workhorse/core/client": "lib/enqueue/client.ts",
  "@workhorse/core/worker": "lib/worker/index.ts",
};

/** The file an import specifier names, or null for packages. `@/` is the repository root (tsconfig paths). */
function resolve(from: string, specifier: string): string | null {
  let base: string;
  const entry = PACKAGE_ENTRIES[specifier];
  if (entry) return path.join(ROOT, entry);
  if (specifier.startsWith("@/")) base = path.join(ROOT, specifier.slice(2));
  else if (specifier.startsWith(".")) base = path.resolve(path.dirname(from), specifier);
  else return null;
  for (const candidate of [
    base,
    ...EXTENSIONS.map((e) => base + e),
    ...EXTENSIONS.map((e) => path.join(base, `index${e}`)),
  ]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

/** What a file imports or re-exports from, as written (static only: a dynamic `import()` breaks no load order). */
function specifiersOf(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  for (const statement of source.statements) {
    if (
      (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
      statement.moduleSpecifier &&
      ts.isStringLiteral(statement.moduleSpecifier)
    ) {
      out.push(statement.moduleSpecifier.text);
    }
  }
  return out;
}

/** The files of this repository a file imports. */
function importsOf(file: string): string[] {
  return specifiersOf(file).flatMap((s) => resolve(file, s) ?? []);
}

/** The cycles of the graph, one per strongly connected component of more than one file (or a self-import). */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const files = DIRS.flatMap((d) => sourceFiles(path.join(ROOT, d)));

test("no import cycle in lib/, app/ or components/", () => {
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  const found = cycles(graph).map((c) => c.map((f) => path.relative(ROOT, f)));
  expect(found).toEqual([]);
});

test("no module in lib/ is longer than 450 lines", () => {
  const long = files
    .filter((f) => path.relative(ROOT, f).startsWith(`lib${path.sep}`) && !f.endsWith(".generated.ts"))
    .map((f) => ({ file: path.relative(ROOT, f), lines: readFileSync(f, "utf8").split("\n").length - 1 }))
    .filter((f) => f.lines > 450);
  expect(long).toEqual([]);
});

test("lib/enqueue/client.ts, what browser code imports, reaches no Node or database module", () => {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const s of specifiersOf(file)) {
      const target = resolve(file, s);
      if (target) visit(target);
      else packages.add(s);
    }
  };
  visit(path.join(ROOT, "lib/enqueue/client.ts"));
  expect([...packages].filter((p) => p === "pg" || p.startsWith("node:") || p === "server-only")).toEqual([]);
});

/** Each import of a file: the file it names and whether it is type-only (`import type` / `export type`). */
function importsWithKind(file: string): Array<{ target: string; typeOnly: boolean }> {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false);
  const out: Array<{ target: string; typeOnly: boolean }> = [];
  for (const s of source.statements) {
    if (!(ts.isImportDeclaration(s) || ts.isExportDeclaration(s))) continue;
    if (!s.moduleSpecifier || !ts.isStringLiteral(s.moduleSpecifier)) continue;
    const target = resolve(file, s.moduleSpecifier.text);
    if (!target) continue;
    const typeOnly = ts.isImportDeclaration(s) ? (s.importClause?.isTypeOnly ?? false) : s.isTypeOnly;
    out.push({ target: path.relative(ROOT, target).split(path.sep).join("/"), typeOnly });
  }
  return out;
}

/**
 * The layers of lib/ (docs/architecture.md), lowest first: the store (lib/store: its root, the
 * layout handle and row mapping, then core, worker and console statements), the core (lib/enqueue),
 * the worker runtime (lib/worker), the core's public surface (lib/enqueue/index.ts, which also
 * exports the worker), and the console (lib/console). A module imports from its own layer or lower.
 * The store may name the core's types (type-only imports): they are what its rows map to.
 */
function layerOf(file: string): number {
  if (/^lib\/store\/[^/]+\.ts$/.test(file)) return 0;
  if (file.startsWith("lib/store/core/")) return 1;
  if (file.startsWith("lib/store/worker/")) return 2;
  if (file.startsWith("lib/store/console/")) return 3;
  if (file === "lib/enqueue/index.ts") return 6;
  if (file.startsWith("lib/enqueue/")) return 4;
  if (file.startsWith("lib/worker/")) return 5;
  if (file.startsWith("lib/console/")) return 7;
  return 8;
}

/** Every import edge `from -> target` of the modules under `under` for which `wrong(from, target, typeOnly)` holds. */
function edgesWhere(under: string, wrong: (from: string, target: string, typeOnly: boolean) => boolean): string[] {
  const edges: string[] = [];
  for (const f of files) {
    const from = path.relative(ROOT, f).split(path.sep).join("/");
    if (!from.startsWith(under)) continue;
    for (const { target, typeOnly } of importsWithKind(f)) {
      if (wrong(from, target, typeOnly)) edges.push(`${from} -> ${target}`);
    }
  }
  return edges;
}

test("lib/ imports only downwards: store, core, worker, the public surface, console", () => {
  const upward = edgesWhere("lib/", (from, target, typeOnly) => {
    if (!target.startsWith("lib/")) return false;
    const modelType = typeOnly && from.startsWith("lib/store/") && target.startsWith("lib/enqueue/");
    return layerOf(target) > layerOf(from) && !modelType;
  });
  expect(upward).toEqual([]);
});

/** The console's way into lib/: the core's public surface (index.ts; client.ts for browser code) and the console's store. */
function consoleMayImport(target: string): boolean {
  return (
    target.startsWith("lib/console/") ||
    target === "lib/enqueue/index.ts" ||
    target === "lib/enqueue/client.ts" ||
    target.startsWith("lib/store/console/")
  );
}

/** Imports past the public surface, each with its reason. */
const CONSOLE_EXCEPTIONS: Record<string, string> = {};

test("lib/console imports only the core's public surface and lib/store/console", () => {
  const past = edgesWhere(
    "lib/console/",
    (from, target) =>
      target.startsWith("lib/") && !consoleMayImport(target) && !(`${from} -> ${target}` in CONSOLE_EXCEPTIONS),
  );
  expect(past).toEqual([]);
});

/** What browser code may load: the wire modules and the core's client-safe entry. */
const browserSafe = (target: string) => target.startsWith("lib/console/wire/") || target === "lib/enqueue/client.ts";

test("browser code (lib/console/wire) reaches no server module", () => {
  expect(edgesWhere("lib/console/wire/", (_, target, typeOnly) => !typeOnly && !browserSafe(target))).toEqual([]);
});

test("components take what they show from lib/console/wire and lib/enqueue/client only (every browser type is a wire type)", () => {
  expect(edgesWhere("components/", (_, target) => target.startsWith("lib/") && !browserSafe(target))).toEqual([]);
});

/**
 * The longest chain of runtime imports from each module of lib/ (static `import` / `export ... from`
 * that load a module; `import type` loads nothing): its layers, the module itself first.
 */
function longestChains(graph: Map<string, string[]>): Map<string, string[]> {
  const memo = new Map<string, string[]>();
  const chain = (v: string): string[] => {
    const known = memo.get(v);
    if (known) return known;
    let below: string[] = [];
    for (const w of graph.get(v) ?? []) {
      const c = chain(w);
      if (c.length > below.length) below = c;
    }
    const mine = [v, ...below];
    memo.set(v, mine);
    return mine;
  };
  for (const v of graph.keys()) chain(v);
  return memo;
}

test("lib/ stacks at most 8 layers of runtime imports", () => {
  const lib = files.map((f) => path.relative(ROOT, f).split(path.sep).join("/")).filter((f) => f.startsWith("lib/"));
  const graph = new Map(
    lib.map((f) => [
      f,
      importsWithKind(path.join(ROOT, f))
        .filter((i) => !i.typeOnly && i.target.startsWith("lib/"))
        .map((i) => i.target),
    ]),
  );
  const deepest = [...longestChains(graph).values()].reduce((a, b) => (b.length > a.length ? b : a), []);
  expect(deepest.length, deepest.join(" -> ")).toBeLessThanOrEqual(8);
});

/** Where the core's sources are: reached from elsewhere only through the package's entries. */
const isCore = (file: string) =>
  /^lib\/(enqueue|worker)\//.test(file) || (file.startsWith("lib/store/") && !file.startsWith("lib/store/console/"));

/** What reaches past the package's entries on purpose, each with its reason. */
const PACKAGE_EXCEPTIONS: Record<string, string> = {
  "scripts/conformance.ts":
    "generates the cross-language conformance file from the core's internals (normalisation, key ring, statement values)",
  "bench/statement-costs.ts": "measures the enqueue statements' shapes below the Queue",
  "bench/client-cpu.ts": "profiles the normalisation and the key ring alone",
  "bench/read-surface.ts": "times the console store's statements and the core's read helpers one by one",
  "bench/payload-search.ts": "times the console store's payload search statement alone",
  "bench/legacy-probe.ts": "builds older schemas (migrateBefore, not part of the package) to compare with",
};

test("the console, the scripts and the benches use the core only through the package's entries (@workhorse/core, /client, /worker)", () => {
  const outside = ["app", "components", "lib/console", "scripts", "bench"].flatMap((d) =>
    sourceFiles(path.join(ROOT, d)),
  );
  const past: string[] = [];
  for (const f of outside) {
    const from = path.relative(ROOT, f).split(path.sep).join("/");
    if (from in PACKAGE_EXCEPTIONS) continue;
    for (const specifier of specifiersOf(f)) {
      const target = resolve(f, specifier);
      if (!target || specifier in PACKAGE_ENTRIES) continue;
      const rel = path.relative(ROOT, target).split(path.sep).join("/");
      if (isCore(rel)) past.push(`${from} -> ${specifier}`);
    }
  }
  expect(past).toEqual([]);
});

test("the package's entries are the files the module graph maps them to", () => {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, "sdk/typescript/package.json"), "utf8"));
  expect(
    Object.keys(manifest.exports)
      .filter((k) => k !== "./package.json")
      .map((k) => `@workhorse/core${k.slice(1)}`),
  ).toEqual(Object.keys(PACKAGE_ENTRIES));
  const paths = JSON.parse(readFileSync(path.join(ROOT, "tsconfig.json"), "utf8")).compilerOptions.paths;
  for (const [specifier, file] of Object.entries(PACKAGE_ENTRIES)) expect(paths[specifier]).toEqual([`./${file}`]);
});

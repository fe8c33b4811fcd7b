// Where SQL lives: every statement the core and the console send is in lib/store (one
// typed function per operation), and only the store asks which layout (one node or Citus) it runs
// on. Plain vitest, no database: the files are read as TypeScript and their string and template
// literals checked.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { expect, test } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const STORE = path.join("lib", "store");

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(ROOT, dir))) {
    const rel = path.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) out.push(...sourceFiles(rel));
    else if (/\.tsx?$/.test(name) && !name.endsWith(".d.ts") && !name.endsWith(".generated.ts")) out.push(rel);
  }
  return out;
}

/** The text of every string and template literal in a file (comments are not literals). */
function literals(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) out.push(node.text);
    else if (ts.isTemplateExpression(node)) out.push(node.head.text, ...node.templateSpans.map((s) => s.literal.text));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** A statement against the schema: `workhorse.<name>` in a literal (module specifiers aside). */
const SQL = /\bworkhorse\.[a-z_]+/;

/** Where the layout decides what runs: outside the store, nothing may ask. */
const LAYOUT_BRANCH = /\bisDistributed\b|\bdistributed\s*\?|\blayout\s*===|===\s*"distributed"|\bdistributedLayout\b/;

/** Files whose literals name the schema without being a statement (a scope name, an error message). */
const NOT_SQL: Record<string, string> = {
  "lib/enqueue/operator-actions.ts": "REDRIVE_SCOPE, the hashing scope of redrive request ids",
  "lib/enqueue/keys.ts": "an error message naming workhorse.installation",
  "lib/enqueue/enqueue-call.ts": "an error message naming workhorse.installation",
  "lib/enqueue/vocabulary.ts": "names checked against the SQL's own lists",
  "lib/enqueue/telemetry.ts": "OpenTelemetry metric and attribute names (workhorse.enqueue.decisions, ...)",
  "lib/enqueue/state-gauges.ts": "OpenTelemetry gauge and attribute names (workhorse.queue.depth, ...)",
  "lib/enqueue/decision-counts.ts": "the OpenTelemetry counter name workhorse.queue.decisions",
};

/**
 * migrate() lays the schema out as asked (its SQL is sql/, embedded by build-sql): it chooses the
 * layout rather than reading it; so do the bin that runs it and migrateBefore (older schemas for tests).
 */
const LAYOUT_CHOSEN_HERE = new Set(["lib/enqueue/migrate.ts", "lib/enqueue/cli.ts", "lib/enqueue/migrate-before.ts"]);

const files = ["lib", "app", "components"].flatMap(sourceFiles).filter((f) => !f.startsWith(STORE));

test("no statement against workhorse.* outside lib/store (lib, app, components)", () => {
  const offenders = files.filter(
    (f) => !(f in NOT_SQL) && !LAYOUT_CHOSEN_HERE.has(f) && literals(f).some((l) => SQL.test(l)),
  );
  expect(offenders).toEqual([]);
});

/**
 * A literal that is a statement of its own, whatever it names: `select now()`, `listen ...`,
 * `begin`, `set local ...` (lowercase, as the code writes SQL; prose starts with a capital).
 */
const STATEMENT =
  /^\s*(select\s.*(\(|\bfrom\b|\$\d|\d)|insert into\s|update \S+ set\s|delete from\s|with \S+ as \(|listen\s|notify\s|begin\b|commit\b|rollback\b|set (local )?\S+ (=|to)\s|create (database|table|index|function)\b)/;

/** lib/db starts the embedded server and creates its database: it runs before any schema exists. */
const SERVER_BOOTSTRAP = new Set(["lib/db/index.ts"]);

test("no SQL statement of any kind outside lib/store (lib, app, components)", () => {
  const offenders = files
    .filter((f) => !LAYOUT_CHOSEN_HERE.has(f) && !SERVER_BOOTSTRAP.has(f))
    .flatMap((f) =>
      literals(f)
        .filter((l) => STATEMENT.test(l))
        .map((l) => `${f}: ${l.trim().slice(0, 60)}`),
    );
  expect(offenders).toEqual([]);
});

test("no layout branch outside lib/store", () => {
  const offenders = files.filter(
    (f) => !LAYOUT_CHOSEN_HERE.has(f) && LAYOUT_BRANCH.test(readFileSync(path.join(ROOT, f), "utf8")),
  );
  expect(offenders).toEqual([]);
});

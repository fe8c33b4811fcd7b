// Where SQL lives: every statement the core and the console send is in lib/enqueue/store (one
// typed function per operation), and only the store asks which layout (one node or Citus) it runs
// on. Plain vitest, no database: the files are read as TypeScript and their string and template
// literals checked.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { expect, test } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const STORE = path.join("lib", "enqueue", "store");

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

/**
 * Files that still send SQL of their own, with why. The list only shrinks: a file that moves its
 * statements into the store leaves it.
 */
const NOT_YET_IN_STORE: Record<string, string> = {
  "lib/console/audit.ts": "console read, not moved yet",
  "lib/console/bindings.ts": "console read, not moved yet",
  "lib/console/find-key.ts": "console read, not moved yet",
  "lib/console/digest.ts": "console read (observations by digest), not moved yet",
  "lib/console/jobs.ts": "console read (job list, tab counts), not moved yet",
  "lib/console/maintenance-status.ts": "console read, not moved yet",
  "lib/console/observation-reads.ts": "console read, not moved yet",
  "lib/console/operator-reads.ts": "console read (paused queues, matching jobs), not moved yet",
  "lib/console/overview.ts": "console read, not moved yet",
  "lib/console/queues.ts": "console read, not moved yet",
  "lib/console/session-store.ts": "console sessions, not moved yet",
  "lib/console/workers.ts": "console read, not moved yet",
};

/** Files whose literals name the schema without being a statement (a scope name, an error message). */
const NOT_SQL: Record<string, string> = {
  "lib/enqueue/operator-actions.ts": "REDRIVE_SCOPE, the hashing scope of redrive request ids",
  "lib/enqueue/keys.ts": "an error message naming workhorse.installation",
  "lib/enqueue/queue-operations.ts": "an error message naming workhorse.installation",
  "lib/enqueue/vocabulary.ts": "names checked against the SQL's own lists",
};

/** Where the layout is chosen rather than read: migrate() lays the schema out as asked. */
const LAYOUT_CHOSEN_HERE = new Set(["lib/enqueue/migrate.ts"]);

const files = ["lib", "app", "components"].flatMap(sourceFiles).filter((f) => !f.startsWith(STORE));

test("no statement against workhorse.* outside lib/enqueue/store (but the files still listed)", () => {
  const offenders = files.filter(
    (f) =>
      !(f in NOT_YET_IN_STORE) &&
      !(f in NOT_SQL) &&
      f !== "lib/enqueue/migrate.ts" &&
      literals(f).some((l) => SQL.test(l)),
  );
  expect(offenders).toEqual([]);
  // app/ and components/ never query the schema at all.
  expect(Object.keys(NOT_YET_IN_STORE).filter((f) => !f.startsWith("lib/"))).toEqual([]);
});

test("the list of files not yet in the store only names files that still send SQL", () => {
  const stale = Object.keys(NOT_YET_IN_STORE).filter((f) => !literals(f).some((l) => SQL.test(l)));
  expect(stale).toEqual([]);
});

test("no layout branch outside lib/enqueue/store", () => {
  const offenders = files.filter(
    (f) => !LAYOUT_CHOSEN_HERE.has(f) && LAYOUT_BRANCH.test(readFileSync(path.join(ROOT, f), "utf8")),
  );
  expect(offenders).toEqual([]);
});

#!/usr/bin/env node
// Run once, when the function definitions moved out of the migrations into sql/functions: writes
// lib/enqueue/legacy-migrations.generated.ts with the text of sql/migrations/*.sql as it stood at
// the given commit (migrations 001-015, each with the functions of its version). migrateBefore()
// builds an older installation from these, so an upgrade test starts from the schema AND the
// function bodies that version really had. The output is committed; re-running it at the same
// commit reproduces it byte for byte.
//
//   node scripts/freeze-legacy-migrations.mjs 50468f2
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const commit = process.argv[2];
if (!commit) {
  console.error("usage: node scripts/freeze-legacy-migrations.mjs <commit>");
  process.exit(2);
}
const git = (...args) => execFileSync("git", args, { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 });
const full = git("rev-parse", `${commit}^{commit}`).trim();
const files = git("ls-tree", "--name-only", `${full}:sql/migrations`)
  .split("\n")
  .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
  .sort();
const entries = files.map((f) => {
  const sql = git("show", `${full}:sql/migrations/${f}`);
  return `  { version: ${Number(f.slice(0, 3))}, name: ${JSON.stringify(f.slice(4, -4))}, sql: ${JSON.stringify(sql)} },`;
});
const text = `// Generated once by scripts/freeze-legacy-migrations.mjs from sql/migrations at commit ${full}.
// Do not edit. The migrations as versions 1-${Number(files.at(-1).slice(0, 3))} shipped them, each still defining the functions
// of its version: migrateBefore() (upgrade tests, benchmarks) builds an older installation from
// these. migrate() never reads them.

import type { Migration } from "./migrations.generated";

export const legacyMigrations: readonly Migration[] = [
${entries.join("\n")}
];
`;
writeFileSync(path.join(root, "lib", "enqueue", "legacy-migrations.generated.ts"), text);
console.log(`wrote ${files.length} migrations from ${full}`);

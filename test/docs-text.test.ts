// The docs describe the repository as a reader finds it: no pointer to work on some other
// development branch ("the Python client's branch adds", "joined when both land").
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "vitest";

const root = path.resolve(import.meta.dirname, "..");
const docs = [
  "README.md",
  ...readdirSync(path.join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  ...readdirSync(path.join(root, "sdk"), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => `sdk/${d.name}/README.md`),
];

test("no doc points to another development branch", () => {
  const found: string[] = [];
  for (const file of docs) {
    let text: string;
    try {
      text = readFileSync(path.join(root, file), "utf8");
    } catch {
      continue; // an sdk directory without a README
    }
    text.split("\n").forEach((line, i) => {
      if (/\b\w+(?: \w+)?'s branch\b|\bwhen both land\b/i.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(found).toEqual([]);
});

/** Every file of the repository (outside node_modules, .git and build output), as repository paths. */
function repositoryFiles(dir = ""): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    if ([".git", "node_modules", ".next", "test-results", "playwright-report"].includes(entry.name)) continue;
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...repositoryFiles(rel));
    else out.push(rel);
  }
  return out;
}

/** Names that are not the repository's files on purpose: history, and a placeholder in a command. */
const NOT_A_FILE_OF_TODAY: Record<string, string> = {
  "docs/decisions.md: sql/distributed/functions.sql": "where the Citus functions lived before sql/functions/citus/",
  "docs/benchmarks.md: x.sql": "the placeholder name of a prototype in a --prototype example",
};

test("every source file the README and the docs name in backticks exists", () => {
  const files = repositoryFiles();
  // A name such as `lib/store/ids.ts`, `reads/filters.ts` (under the folder the sentence is in) or
  // `listener.ts`: some file's path ends with it.
  const exists = (name: string) => files.some((f) => f === name || f.endsWith(`/${name}`));
  const missing: string[] = [];
  for (const file of docs) {
    let text: string;
    try {
      // The README's changelog names files as they were when each change landed.
      text = readFileSync(path.join(root, file), "utf8").split("\n## Changelog")[0] as string;
    } catch {
      continue;
    }
    for (const m of text.matchAll(/`([A-Za-z0-9_./[\]()-]+\.(?:ts|tsx|mjs|sql|py|go|md))`/g)) {
      const name = (m[1] as string).replace(/^\.\//, "");
      const where = `${file}: ${name}`;
      if (!name.includes("*") && !exists(name) && !(where in NOT_A_FILE_OF_TODAY)) missing.push(where);
    }
  }
  expect(missing).toEqual([]);
});

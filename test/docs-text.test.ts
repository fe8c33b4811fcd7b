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

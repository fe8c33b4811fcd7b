// Writing a generated file, shared by the generators (build-sql.mjs, conformance.ts).
import { readFileSync, writeFileSync } from "node:fs";

/**
 * Writes `text` to `out`; with `--check` on the command line writes nothing and exits 1 with
 * `staleMessage` when the file differs from `text`. Returns whether it checked.
 */
export function writeOrCheck(out, text, staleMessage) {
  if (!process.argv.includes("--check")) {
    writeFileSync(out, text);
    return false;
  }
  let current = "";
  try {
    current = readFileSync(out, "utf8");
  } catch {}
  if (current !== text) {
    console.error(staleMessage);
    process.exit(1);
  }
  return true;
}

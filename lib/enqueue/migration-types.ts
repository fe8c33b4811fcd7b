/**
 * The shapes of the embedded SQL in migrations.generated.ts (written by scripts/build-sql.mjs), and
 * how its function sets are picked from its one list of function files.
 */

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export interface FunctionFile {
  /** The file name without .sql (`citus/<name>` for a Citus variant). */
  name: string;
  /** A trigger function (`returns trigger`, no arguments): created before the migrations when missing. */
  trigger: boolean;
  sql: string;
}

export interface FunctionSet {
  /** SHA-256 of the files in apply order, recorded in workhorse.function_set. */
  digest: string;
  files: readonly FunctionFile[];
}

const CITUS_PREFIX = "citus/";

/** sql/functions: every file that is not a Citus variant. */
export function singleNodeFiles(files: readonly FunctionFile[]): FunctionFile[] {
  return files.filter((f) => !f.name.startsWith(CITUS_PREFIX));
}

/**
 * The distributed set: every single-node file, replaced by the Citus variant of the same name where
 * there is one (variants come after the single-node files in `files`), plus the Citus-only files, in
 * name order (the order scripts/build-sql.mjs digests them in).
 */
export function distributedFiles(files: readonly FunctionFile[]): FunctionFile[] {
  const byName = new Map<string, FunctionFile>();
  for (const f of files) byName.set(f.name.startsWith(CITUS_PREFIX) ? f.name.slice(CITUS_PREFIX.length) : f.name, f);
  return [...byName.keys()].sort().map((name) => byName.get(name)!);
}

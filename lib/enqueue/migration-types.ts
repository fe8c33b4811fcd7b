/** The shapes of the embedded SQL in migrations.generated.ts (written by scripts/build-sql.mjs). */

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

/** The typed error for a database whose workhorse schema is behind this code (browser-safe: no imports but errors.ts). */
import { WorkhorseError } from "./errors";

/** The command that brings a database's schema up to this code's version (the package's bin). */
export const MIGRATE_COMMAND = "npx workhorse migrate";

/**
 * The database's workhorse schema is older than this code (or missing): run `migrate(pool)` or
 * `npx workhorse migrate` (with `DATABASE_URL` set) once per deploy, then repeat the call. Nothing
 * was written. Thrown by a `Queue`'s first call on a pool (the schema is read once per pool).
 */
export class SchemaBehindError extends WorkhorseError {
  static override readonly kind: string = "SchemaBehindError";
  /**
   * `databaseVersion`: the highest migration recorded in the database (0: no workhorse schema);
   * `requiredVersion`: the version this code needs; `command`: what to run.
   */
  constructor(
    readonly databaseVersion: number,
    readonly requiredVersion: number,
    readonly command: string = MIGRATE_COMMAND,
  ) {
    super(
      "SCHEMA_BEHIND",
      databaseVersion === 0
        ? `The database has no workhorse schema (this code needs version ${requiredVersion}): run \`${command}\` (or migrate(pool)) first.`
        : databaseVersion < requiredVersion
          ? `The database's workhorse schema is at version ${databaseVersion}, behind this code's ${requiredVersion}: run \`${command}\` (or migrate(pool)).`
          : `The database's workhorse functions are not this code's (schema version ${databaseVersion}): run \`${command}\` (or migrate(pool)).`,
    );
  }
}

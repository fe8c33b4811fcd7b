/**
 * The schema check a `Queue` makes before its first call on a pool: a database that is behind this
 * code (never migrated, an older migration, an older function set) is refused with
 * `SchemaBehindError` naming the command to run, before a statement of the call is sent.
 */
import type pg from "pg";
import { schemaStatus } from "./migrate";
import { SchemaBehindError } from "./schema-errors";

/** Pools whose schema was found current (or newer: a rolling deploy's newer code migrated first). */
const current = new WeakSet<pg.Pool>();
const reading = new WeakMap<pg.Pool, Promise<void>>();

/** Whether `pool`'s schema was already found usable (the caller then skips `checkSchema`). */
export function schemaKnownCurrent(pool: pg.Pool): boolean {
  return current.has(pool);
}

/**
 * Reads the schema's status on `pool` (`schemaStatus`: two short reads of `workhorse.migration` and
 * `workhorse.function_set`, no lock) at most once at a time. Resolves when it is current or newer
 * (kept: later calls do not read again); rejects with `SchemaBehindError` when it is missing or old
 * (not kept: the call after a migration goes through). A read that fails otherwise (the server
 * unreachable, a pool that only answers the statements it was made for) is not kept and lets the
 * call go on: its own statements then report, or retry through, the failure.
 */
export function checkSchema(pool: pg.Pool): Promise<void> {
  let pending = reading.get(pool);
  if (!pending) {
    pending = read(pool).finally(() => reading.delete(pool));
    reading.set(pool, pending);
  }
  return pending;
}

async function read(pool: pg.Pool): Promise<void> {
  let status: Awaited<ReturnType<typeof schemaStatus>>;
  try {
    status = await schemaStatus(pool);
  } catch {
    return;
  }
  if (status.state === "current" || status.state === "newer") {
    current.add(pool);
    return;
  }
  throw new SchemaBehindError(status.version, status.latest);
}

import type pg from "pg";
import { withPoolClient } from "../store/pool-client";
import {
  distributedFunctionSet,
  distributedSql,
  type FunctionSet,
  functionSet,
  migrations,
} from "./migrations.generated";

/** Advisory lock key that serialises migrators across processes (any constant works; this one is ours). */
export const MIGRATION_LOCK = 7_294_301_118;

export interface MigrateResult {
  /** Versions applied by this call (empty when the schema was already current). */
  applied: number[];
  /** Highest version now present. */
  version: number;
  /** Whether the schema has the distributed (Citus) layout after this call. */
  distributed: boolean;
}

export interface MigrateOptions {
  /**
   * Lay the schema out for Citus (distributed PostgreSQL): `job` and `key_binding` distributed and
   * colocated by a bucket of the key, the decision functions delegated to the node holding the key
   * (docs/scale-out.md). Needs the citus extension in the database and its workers registered, and an
   * empty schema the first time. Default: `process.env.WORKHORSE_DISTRIBUTED === "1"`. Once applied,
   * every later `migrate()` keeps the layout (applies the Citus variants, hand-written in
   * sql/functions/citus or generated from the marks in sql/functions, in place of their single-node
   * files), whatever this option says.
   */
  distributed?: boolean;
}

function isPool(db: pg.Pool | pg.ClientBase): db is pg.Pool {
  return typeof (db as pg.Pool).totalCount === "number";
}

/**
 * Creates or upgrades schema `workhorse` to this code's version.
 *
 * Idempotent and safe when N processes start at once: everything runs in one transaction under
 * `pg_advisory_xact_lock`, so later callers wait, then find the migrations recorded in
 * `workhorse.migration` and apply nothing. Throws if the database holds a newer version than this
 * code knows (an older deploy must not run against a newer schema).
 *
 * After the migrations it applies the function set (sql/functions, with the Citus variants on the
 * distributed layout) when its digest is not the one recorded last in `workhorse.function_set`;
 * throws when this code's set was applied before and replaced since by another (a newer deploy's).
 * sql/README.md explains the layout of the SQL.
 *
 * @param db a `pg.Pool` or a connected client (not inside a transaction of the caller's).
 */
export async function migrate(db: pg.Pool | pg.ClientBase, options: MigrateOptions = {}): Promise<MigrateResult> {
  const distributed = options.distributed ?? process.env.WORKHORSE_DISTRIBUTED === "1";
  return isPool(db) ? withPoolClient(db, (client) => migrateOn(client, distributed)) : migrateOn(db, distributed);
}

async function migrateOn(c: pg.ClientBase, wantDistributed: boolean): Promise<MigrateResult> {
  const applied: number[] = [];
  await c.query("begin");
  try {
    await c.query("select pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
    await c.query("create schema if not exists workhorse");
    await c.query(
      `create table if not exists workhorse.migration (
           version integer primary key, name text not null, applied_at timestamptz not null default now())`,
    );
    const { rows } = await c.query<{ version: number }>("select version from workhorse.migration order by version");
    const done = new Set(rows.map((r) => r.version));
    const known = Math.max(0, ...migrations.map((m) => m.version));
    const newest = Math.max(0, ...done);
    if (newest > known) {
      throw new Error(
        `The database's workhorse schema is at version ${newest}, newer than this code knows (${known}). Deploy the newer code.`,
      );
    }
    await c.query(
      `create table if not exists workhorse.function_set (
           id bigserial primary key, digest text not null, layout text not null,
           applied_at timestamptz not null default now())`,
    );
    const pending = migrations.filter((m) => !done.has(m.version));
    // A migration's CREATE TRIGGER names its trigger function: those missing are created first (their
    // current text). Existing ones keep their body until the set is applied below.
    if (pending.length > 0) await createMissingTriggerFunctions(c, functionSet);
    for (const m of pending) {
      await c.query(m.sql);
      await c.query("insert into workhorse.migration (version, name) values ($1, $2)", [m.version, m.name]);
      applied.push(m.version);
    }
    const { rows: layout } = await c.query<{ distributed: boolean }>(
      "select to_regclass('workhorse.shard_bucket') is not null as distributed",
    );
    const hadLayout = layout[0]?.distributed === true;
    if (!hadLayout && wantDistributed) await c.query(distributedSql.layout);
    const distributed = hadLayout || wantDistributed;
    await applyFunctionSet(
      c,
      distributed ? distributedFunctionSet : functionSet,
      distributed ? "distributed" : "single",
    );
    await c.query("commit");
    return { applied, version: Math.max(newest, ...applied), distributed };
  } catch (err) {
    await c.query("rollback").catch(() => {});
    throw err;
  }
}

export async function createMissingTriggerFunctions(c: pg.ClientBase, set: FunctionSet): Promise<void> {
  for (const f of set.files) {
    if (!f.trigger) continue;
    const { rows } = await c.query<{ missing: boolean }>("select to_regprocedure($1) is null as missing", [
      `workhorse.${f.name}()`,
    ]);
    if (rows[0]?.missing) await c.query(f.sql);
  }
}

/**
 * Applies every file of the set (CREATE OR REPLACE, and the drops a file holds for old signatures)
 * unless its digest is the one applied last. A digest applied before and replaced since belongs to
 * an older deploy: refused, as a newer migration version is.
 */
async function applyFunctionSet(c: pg.ClientBase, set: FunctionSet, layout: "single" | "distributed"): Promise<void> {
  const { rows } = await c.query<{ digest: string; latest: boolean; applied_at: Date }>(
    `select digest, id = (select max(id) from workhorse.function_set) as latest, applied_at
       from workhorse.function_set where digest = $1 order by id desc limit 1`,
    [set.digest],
  );
  const seen = rows[0];
  if (seen?.latest) return;
  if (seen) {
    throw new Error(
      `The database's workhorse functions were replaced after this code's set (${set.digest.slice(0, 12)}, applied ${seen.applied_at.toISOString()}) by another deploy's. Deploy the newer code.`,
    );
  }
  for (const f of set.files) await c.query(f.sql);
  await c.query("insert into workhorse.function_set (digest, layout) values ($1, $2)", [set.digest, layout]);
}

export interface SchemaStatus {
  /** Highest migration version recorded in the database (0: no workhorse schema). */
  version: number;
  /** Highest version this code knows. */
  latest: number;
  /**
   * `current`: migrations and functions are this code's; `old`: `migrate()` would bring it up to date;
   * `newer`: a newer deploy's schema (this code must not migrate it); `missing`: no workhorse schema.
   */
  state: "current" | "old" | "newer" | "missing";
}

/** Where a database's schema stands against this code, read without changing anything. */
export async function schemaStatus(db: pg.Pool | pg.ClientBase): Promise<SchemaStatus> {
  const latest = Math.max(0, ...migrations.map((m) => m.version));
  // The layout in the same round trip (a console reads several databases' status at once).
  const { rows: tables } = await db.query<{ present: boolean; functions: boolean; distributed: boolean }>(
    `select to_regclass('workhorse.migration') is not null as present,
            to_regclass('workhorse.function_set') is not null as functions,
            to_regclass('workhorse.shard_bucket') is not null as distributed`,
  );
  if (tables[0]?.present !== true) return { version: 0, latest, state: "missing" };
  // An installation from before function sets were recorded has no workhorse.function_set.
  const { rows } = await db.query<{ version: number | null; digests: string[] | null }>(
    tables[0]?.functions === true
      ? `select (select max(version) from workhorse.migration) as version,
                (select array_agg(digest order by id desc) from workhorse.function_set) as digests`
      : "select (select max(version) from workhorse.migration) as version, null::text[] as digests",
  );
  const row = rows[0];
  if (!row || row.version === null) return { version: 0, latest, state: "missing" };
  const version = row.version;
  if (version > latest) return { version, latest, state: "newer" };
  const [last, ...earlier] = row.digests ?? [];
  const ours = tables[0]?.distributed === true ? distributedFunctionSet.digest : functionSet.digest;
  if (version === latest && last === ours) return { version, latest, state: "current" };
  // Our function set applied once and replaced since: a newer deploy's functions.
  if (version === latest && earlier.includes(ours)) return { version, latest, state: "newer" };
  return { version, latest, state: "old" };
}

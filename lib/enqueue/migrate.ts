import type pg from "pg";
import { distributedSql, migrations } from "./migrations.generated";
import { withPoolClient } from "./pool-client";

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
   * every later `migrate()` keeps the layout (re-applies its functions after new migrations),
   * whatever this option says.
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
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await c.query(m.sql);
      await c.query("insert into workhorse.migration (version, name) values ($1, $2)", [m.version, m.name]);
      applied.push(m.version);
    }
    const { rows: layout } = await c.query<{ distributed: boolean }>(
      "select to_regclass('workhorse.shard_bucket') is not null as distributed",
    );
    const hadLayout = layout[0]?.distributed === true;
    if (!hadLayout && wantDistributed) await c.query(distributedSql.layout);
    if ((!hadLayout && wantDistributed) || (hadLayout && applied.length > 0)) await c.query(distributedSql.functions);
    await c.query("commit");
    return { applied, version: Math.max(newest, ...applied), distributed: hadLayout || wantDistributed };
  } catch (err) {
    await c.query("rollback").catch(() => {});
    throw err;
  }
}

/**
 * The schema as an earlier version of this code left it: every migration below `version`, recorded
 * in `workhorse.migration` as `migrate()` records them, on an empty database. For upgrade tests and
 * benchmarks (a later `migrate()` applies the rest); not exported from `lib/enqueue/index.ts`.
 */
export async function migrateBefore(pool: pg.Pool, version: number): Promise<void> {
  await withPoolClient(pool, async (c) => {
    await c.query("create schema workhorse");
    await c.query(
      "create table workhorse.migration (version integer primary key, name text not null, applied_at timestamptz not null default now())",
    );
    for (const m of migrations.filter((m) => m.version < version)) {
      await c.query(m.sql);
      await c.query("insert into workhorse.migration (version, name) values ($1, $2)", [m.version, m.name]);
    }
  });
}

import "server-only";
import { headers } from "next/headers";
import type pg from "pg";
import { DATABASE_HEADER, DATABASE_IN_URL_HEADER, databaseHref } from "../wire/database-paths";
import { type DatabaseConfig, type DatabasesSetup, loadDatabases } from "./databases";
import { databasePool } from "./session";

/**
 * The console's databases (lib/console/databases/databases.ts) and one pool each, made on first use
 * and kept on globalThis so dev-mode reloads reuse them. With `DATABASE_URL` alone (scripts/start.ts
 * sets it to the embedded server when the user gave nothing) there is one database, named `default`.
 * The `Queue` over each pool is db.ts's; sign-in and sessions need only the pool.
 */
interface Registry {
  setup: DatabasesSetup;
  pools: Map<string, pg.Pool>;
}

const g = globalThis as { __workhorseConsolePools?: Registry };

function registry(): Registry {
  g.__workhorseConsolePools ??= { setup: loadDatabases(), pools: new Map() };
  return g.__workhorseConsolePools;
}

/** The configured databases, in the order given (the first is where console sessions are kept). */
export function consoleDatabases(): DatabaseConfig[] {
  return registry().setup.databases;
}

/** The configured database of that exact name, or null. */
export function databaseNamed(name: string): DatabaseConfig | null {
  return consoleDatabases().find((d) => d.name === name) ?? null;
}

/** The pool of one configured database (made on first use). */
export function poolOf(config: DatabaseConfig): pg.Pool {
  const r = registry();
  let pool = r.pools.get(config.name);
  if (!pool) {
    // A database that does not answer (a dropped packet, not a refusal) fails a read after 10 s.
    // Its connections carry the database's name, which the audit rows written through them record.
    pool = databasePool(config, { max: 10, connectionTimeoutMillis: 10_000 });
    r.pools.set(config.name, pool);
  }
  return pool;
}

/** The first configured database: console sessions live there, whichever database a page shows. */
export function primaryDatabase(): DatabaseConfig {
  return consoleDatabases()[0] as DatabaseConfig;
}

/** The database this request is served from (proxy.ts names it), or the first one (outside a request too). */
export async function currentDatabase(): Promise<DatabaseConfig> {
  let name: string | null = null;
  try {
    name = (await headers()).get(DATABASE_HEADER);
  } catch {
    // Outside a request (a script, a test): the first database.
  }
  return (name !== null ? databaseNamed(name) : null) ?? primaryDatabase();
}

/** `href` (a console path) under the database this request's URL names, for redirects. */
export async function databasePath(href: string): Promise<string> {
  const h = await headers();
  return databaseHref(h.get(DATABASE_IN_URL_HEADER) === "1" ? h.get(DATABASE_HEADER) : null, href);
}

/** The pool of the database this request is under. */
export async function consolePool(): Promise<pg.Pool> {
  return poolOf(await currentDatabase());
}

import "server-only";
import { headers } from "next/headers";
import type pg from "pg";
import { Queue } from "@/lib/enqueue";
import { consoleMetrics, metricsToken } from "../metrics/meter";
import { DATABASE_HEADER, DATABASE_IN_URL_HEADER, databaseHref } from "../wire/database-paths";
import { type DatabaseConfig, type DatabasesSetup, loadDatabases } from "./databases";
import { databaseMeterProvider, databasePool } from "./session";

/**
 * The console's databases (lib/console/databases/databases.ts), each with its own pool and `Queue` made on
 * first use and kept on globalThis so dev-mode reloads reuse them. Each `Queue` hashes keys with its
 * own installation's secret: the one its database keeps, or the variable its `keySecretEnv` names.
 * With `DATABASE_URL` alone (scripts/start.ts sets it to the embedded server when the user gave
 * nothing) there is one database, named `default`.
 */
export interface ConsoleDb {
  config: DatabaseConfig;
  pool: pg.Pool;
  queue: Queue;
}

interface Registry {
  setup: DatabasesSetup;
  open: Map<string, ConsoleDb>;
}

const g = globalThis as { __workhorseConsoleDbs?: Registry };

function registry(): Registry {
  g.__workhorseConsoleDbs ??= { setup: loadDatabases(), open: new Map() };
  return g.__workhorseConsoleDbs;
}

/** The configured databases, in the order given (the first is where console sessions are kept). */
export function consoleDatabases(): DatabaseConfig[] {
  return registry().setup.databases;
}

/** The configured database of that exact name, or null. */
export function databaseNamed(name: string): DatabaseConfig | null {
  return consoleDatabases().find((d) => d.name === name) ?? null;
}

/** Pool and Queue of one configured database (made on first use). */
export function openDatabase(config: DatabaseConfig): ConsoleDb {
  const r = registry();
  let db = r.open.get(config.name);
  if (!db) {
    // A database that does not answer (a dropped packet, not a refusal) fails a read after 10 s.
    // Its connections carry the database's name, which the audit rows written through them record.
    const pool = databasePool(config, { max: 10, connectionTimeoutMillis: 10_000 });
    // With metrics on, this process's enqueues and operator actions are counted for GET /metrics,
    // each with the database it ran on.
    const telemetry = metricsToken()
      ? { meterProvider: databaseMeterProvider(consoleMetrics().meterProvider, config.name) }
      : undefined;
    // Several databases: each its own secret ("" means the one the database keeps, never WORKHORSE_KEY_SECRET).
    const keySecret = config.keySecretEnv
      ? process.env[config.keySecretEnv]
      : r.setup.databases.length > 1
        ? ""
        : undefined;
    const queue = new Queue({
      pool,
      source: "console",
      ...(telemetry ? { telemetry } : {}),
      ...(keySecret !== undefined ? { keySecret } : {}),
    });
    db = { config, pool, queue };
    r.open.set(config.name, db);
  }
  return db;
}

/** The first configured database: console sessions live there, whichever database a page shows. */
export function primaryDb(): ConsoleDb {
  return openDatabase(consoleDatabases()[0] as DatabaseConfig);
}

/** The database this request is served from (proxy.ts names it), or the first one (outside a request too). */
export async function currentDatabase(): Promise<DatabaseConfig> {
  let name: string | null = null;
  try {
    name = (await headers()).get(DATABASE_HEADER);
  } catch {
    // Outside a request (a script, a test): the first database.
  }
  return (name !== null ? databaseNamed(name) : null) ?? (consoleDatabases()[0] as DatabaseConfig);
}

/** `href` (a console path) under the database this request's URL names, for redirects. */
export async function databasePath(href: string): Promise<string> {
  const h = await headers();
  return databaseHref(h.get(DATABASE_IN_URL_HEADER) === "1" ? h.get(DATABASE_HEADER) : null, href);
}

/** Pool and Queue of the database this request is under. */
export async function consoleDb(): Promise<ConsoleDb> {
  return openDatabase(await currentDatabase());
}

export async function consolePool(): Promise<pg.Pool> {
  return (await consoleDb()).pool;
}

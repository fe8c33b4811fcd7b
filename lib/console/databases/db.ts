import "server-only";
import { Queue } from "@workhorse/core";
import type pg from "pg";
import { consoleMetrics, metricsToken } from "../metrics/meter";
import type { DatabaseConfig } from "./databases";
import { consoleDatabases, currentDatabase, poolOf, primaryDatabase } from "./pools";
import { databaseMeterProvider } from "./session";

export { consoleDatabases, consolePool, currentDatabase, databaseNamed, databasePath } from "./pools";

/**
 * One configured database's pool (pools.ts) and the `Queue` over it, made on first use and kept on
 * globalThis so dev-mode reloads reuse them. Each `Queue` hashes keys with its own installation's
 * secret: the one its database keeps, or the variable its `keySecretEnv` names.
 */
export interface ConsoleDb {
  config: DatabaseConfig;
  pool: pg.Pool;
  queue: Queue;
}

const g = globalThis as { __workhorseConsoleQueues?: Map<string, ConsoleDb> };

/** Pool and Queue of one configured database (made on first use). */
export function openDatabase(config: DatabaseConfig): ConsoleDb {
  g.__workhorseConsoleQueues ??= new Map();
  let db = g.__workhorseConsoleQueues.get(config.name);
  if (!db) {
    const pool = poolOf(config);
    // With metrics on, this process's enqueues and operator actions are counted for GET /metrics,
    // each with the database it ran on.
    const telemetry = metricsToken()
      ? { meterProvider: databaseMeterProvider(consoleMetrics().meterProvider, config.name) }
      : undefined;
    // Several databases: each its own secret ("" means the one the database keeps, never WORKHORSE_KEY_SECRET).
    const keySecret = config.keySecretEnv
      ? process.env[config.keySecretEnv]
      : consoleDatabases().length > 1
        ? ""
        : undefined;
    const queue = new Queue({
      pool,
      source: "console",
      ...(telemetry ? { telemetry } : {}),
      ...(keySecret !== undefined ? { keySecret } : {}),
    });
    db = { config, pool, queue };
    g.__workhorseConsoleQueues.set(config.name, db);
  }
  return db;
}

/** The first configured database: console sessions live there, whichever database a page shows. */
export function primaryDb(): ConsoleDb {
  return openDatabase(primaryDatabase());
}

/** Pool and Queue of the database this request is under. */
export async function consoleDb(): Promise<ConsoleDb> {
  return openDatabase(await currentDatabase());
}

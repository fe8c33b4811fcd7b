import "server-only";
import pg from "pg";
import { Queue } from "@/lib/enqueue";
import { consoleMetrics, metricsToken } from "./meter";

/**
 * The console's one pool and one `Queue`, kept on globalThis so dev-mode reloads reuse them.
 * `DATABASE_URL` is always set by scripts/start.ts (the embedded server's `workhorse` database when
 * the user gave none), so the web server never starts PostgreSQL itself.
 */
interface ConsoleDb {
  pool: pg.Pool;
  queue: Queue;
}

const g = globalThis as { __workhorseConsoleDb?: ConsoleDb };

function consoleDbSync(): ConsoleDb {
  if (!g.__workhorseConsoleDb) {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error("DATABASE_URL is not set: start the console with `npm start` (or `npm run dev`).");
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    pool.on("error", () => {
      // An idle client lost its connection; the pool replaces it on the next query.
    });
    // With metrics on, this process's enqueues and operator actions are counted for GET /metrics.
    const telemetry = metricsToken() ? { meterProvider: consoleMetrics().meterProvider } : undefined;
    g.__workhorseConsoleDb = {
      pool,
      queue: new Queue({ pool, source: "console", ...(telemetry ? { telemetry } : {}) }),
    };
  }
  return g.__workhorseConsoleDb;
}

export async function consoleDb(): Promise<ConsoleDb> {
  return consoleDbSync();
}

export async function consolePool(): Promise<pg.Pool> {
  return consoleDbSync().pool;
}

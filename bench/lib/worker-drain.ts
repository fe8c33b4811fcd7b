/**
 * What the worker benches share (bench/worker.ts, bench/key-lifetimes.ts): a fresh database per run
 * on one server, and the time one Worker takes to drain a backlog of no-op jobs.
 */

import { migrate, Worker } from "@workhorse/core";
import pg from "pg";
import { prepareCitusDatabase } from "../../test/citus";

export interface BenchDatabaseServer {
  adminUrl: string;
  urlFor: (db: string) => string;
}

/**
 * Creates database `name` (dropping a leftover), migrates it, runs `run` on a pool of 10, drops it.
 * `distributed`: `server` is a Citus coordinator with workers, and the database gets the distributed
 * layout.
 */
export async function withFreshDatabase<T>(
  server: BenchDatabaseServer,
  name: string,
  run: (pool: pg.Pool) => Promise<T>,
  options: { distributed?: boolean } = {},
): Promise<T> {
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  if (options.distributed) await prepareCitusDatabase(server.adminUrl, server.urlFor(name));
  const pool = new pg.Pool({ connectionString: server.urlFor(name), max: 10 });
  pool.on("error", () => {}); // the drop below ends connections the pool may still hold
  try {
    await migrate(pool, { distributed: options.distributed });
    return await run(pool);
  } finally {
    await pool.end();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

/**
 * Jobs/s: one Worker (`concurrency`, a no-op handler for type "noop") from start() until its
 * `jobs`-th job is recorded as succeeded (the completion committed). The backlog is queued before.
 * Throws when the table does not then hold exactly `jobs` succeeded jobs.
 */
export async function drainRate(pool: pg.Pool, jobs: number, concurrency: number): Promise<number> {
  let succeeded = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((r) => {
    finish = r;
  });
  const worker = new Worker({
    pool,
    concurrency,
    handlers: { noop: () => null },
    onEvent: (e) => {
      if (e.kind === "succeeded" && ++succeeded === jobs) finish();
    },
  });
  const t0 = performance.now();
  await worker.start();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  await worker.stop({ graceMs: 1000 });
  const { rows } = await pool.query<{ n: string }>("select count(*) as n from workhorse.job where state = 'succeeded'");
  if (Number(rows[0]?.n) !== jobs) throw new Error(`expected ${jobs} succeeded jobs, found ${rows[0]?.n}`);
  return jobs / seconds;
}

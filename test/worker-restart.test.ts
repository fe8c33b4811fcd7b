// The worker against a PostgreSQL that stops and starts under it. This file runs its own private
// embedded server (lib/db), because it stops it; the shared test server is never touched.
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { type HandlerContext, migrate, Queue, Worker } from "../lib/enqueue";
import { privateServer } from "./helpers";

// This file needs a server it can stop, so it never uses DATABASE_URL's.
const server = privateServer("restart");
let pool: pg.Pool;
const workers: Worker[] = [];
const errors: Error[] = [];

beforeAll(async () => {
  const admin = new pg.Client({ connectionString: server.info.adminUrl });
  await admin.connect();
  await admin.query("create database restart");
  await admin.end();
  pool = new pg.Pool({ connectionString: server.info.urlFor("restart"), max: 12, connectionTimeoutMillis: 2000 });
  pool.on("error", () => {}); // idle connections die with the server; the pool replaces them
  await migrate(pool);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop({ graceMs: 0 })));
  await pool?.end();
});

async function waitFor(what: string, fn: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      if (await fn()) return;
    } catch {
      // the server is down: keep waiting
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function succeeded(): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    "select count(*) as n from workhorse.job where state = 'succeeded' and queue = 'restart'",
  );
  return Number(rows[0]?.n);
}

test("workers survive PostgreSQL restarting under them: no job lost, none run twice at once", async () => {
  const JOBS = 400;
  const queue = new Queue({ pool, maintenance: false });
  const ids = await queue.enqueueMany(
    Array.from({ length: JOBS }, (_, i) => ({ type: "work", payload: { i }, options: { queue: "restart" } })),
  );
  await queue.close();

  const runs: Array<{ id: string; attempt: number; start: number; end: number }> = [];
  const handler = async (_p: unknown, ctx: HandlerContext) => {
    const start = performance.now();
    await new Promise((r) => setTimeout(r, 5));
    runs.push({ id: ctx.jobId, attempt: ctx.attempt, start, end: performance.now() });
    return { attempt: ctx.attempt };
  };
  for (let i = 0; i < 2; i++) {
    const w = new Worker({
      pool,
      queues: ["restart"],
      concurrency: 4,
      leaseMs: 2000,
      heartbeatIntervalMs: 300,
      pollIntervalMs: 100,
      reapIntervalMs: 200,
      handlers: { work: handler },
      onError: (e) => errors.push(e),
    });
    workers.push(w);
    await w.start();
  }

  // A third worker that never polls (1 h): after the restart only its re-established LISTEN can wake it.
  const listenOnly = new Worker({
    pool,
    queues: ["listen-only"],
    pollIntervalMs: 3_600_000,
    handlers: { ping: () => "pong" },
    onError: () => {},
  });
  workers.push(listenOnly);
  await listenOnly.start();

  await waitFor("some jobs to succeed", async () => (await succeeded()) >= 60);
  await stopEmbeddedPostgres();
  const doneBeforeRestart = runs.length;
  await new Promise((r) => setTimeout(r, 1000));
  await startPrivateServer({ dir: server.dataDir, port: server.port });
  await waitFor("every job to succeed after the restart", async () => (await succeeded()) === JOBS);

  const listeners = async () => {
    const { rows } = await pool.query<{ n: string }>(
      "select count(*) as n from pg_stat_activity where datname = current_database() and query ilike 'listen %'",
    );
    return Number(rows[0]?.n);
  };
  await waitFor("the three LISTEN connections to come back", async () => (await listeners()) === 3);
  const pingQueue = new Queue({ pool, maintenance: false });
  const ping = await pingQueue.enqueue("ping", {}, { queue: "listen-only" });
  await pingQueue.close();
  await waitFor(
    "the notification to wake the non-polling worker",
    async () =>
      (await pool.query("select 1 from workhorse.job where id = $1 and state = 'succeeded'", [ping])).rowCount === 1,
    10_000,
  );

  // The workers noticed the outage (and kept going): errors were reported, not thrown.
  expect(errors.length).toBeGreaterThan(0);
  expect(doneBeforeRestart).toBeLessThan(JOBS);
  const { rows: states } = await pool.query<{ state: string; n: string }>(
    "select state, count(*) as n from workhorse.job group by state",
  );
  expect(states).toEqual([{ state: "succeeded", n: String(JOBS + 1) }]);
  // Every job ran, and no job's attempts overlapped in time.
  expect(new Set(runs.map((r) => r.id))).toEqual(new Set(ids));
  const byJob = new Map<string, typeof runs>();
  for (const r of runs) byJob.set(r.id, [...(byJob.get(r.id) ?? []), r]);
  const overlapping: string[] = [];
  for (const [id, list] of byJob) {
    list.sort((a, b) => a.start - b.start);
    for (let i = 1; i < list.length; i++) {
      if ((list[i]?.start as number) < (list[i - 1]?.end as number)) overlapping.push(id);
    }
  }
  expect(overlapping).toEqual([]);
  // Exactly one recorded success per job, by whichever attempt held the lease.
  const { rows: events } = await pool.query<{ n: string; jobs: string }>(
    "select count(*) as n, count(distinct job_id) as jobs from workhorse.job_event where kind = 'succeeded' and job_id <> $1",
    [ping],
  );
  expect(events).toEqual([{ n: String(JOBS), jobs: String(JOBS) }]);
  const { rows: mismatched } = await pool.query(
    "select id from workhorse.job where queue = 'restart' and (result ->> 'attempt')::int <> attempt",
  );
  expect(mismatched).toEqual([]);
  // Runs beyond one per job are at-least-once redelivery: claims lost with the server.
  console.log(
    `restart: ${runs.length} handler runs for ${JOBS} jobs; ${errors.length} errors reported, e.g. ${[...new Set(errors.map((e) => e.message))].slice(0, 4).join(" | ")}`,
  );
});

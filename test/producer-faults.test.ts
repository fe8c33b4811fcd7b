// Producers under faults: PostgreSQL restarting (fast and immediate shutdowns) and backends killed
// with pg_terminate_backend while an application enqueues. The application (test/producer-child.ts)
// must live, keyed calls must retry themselves into one answer each, and nothing may be lost or
// duplicated. This file runs its own embedded server, because it stops it.
import { spawn } from "node:child_process";
import path from "node:path";
import pg from "pg";
import { expect, test } from "vitest";
import { startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { migrate, Queue, WorkhorseDatabaseError } from "../lib/enqueue";
import { privateServer } from "./helpers";

const server = privateServer("faults");
let db = 0;

/**
 * A pool whose connections may die unheard. `pool.end()` resolves as soon as it has asked each
 * connection to close, before the sockets are closed; a server stopped right after (as the tests
 * below do) can still reach such a connection with "terminating connection due to administrator
 * command", which a pool without an 'error' listener throws as an uncaught exception.
 */
function quietPool(url: string, max: number, config: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, ...config });
  pool.on("error", () => {});
  return pool;
}

async function freshDatabase(): Promise<string> {
  const name = `faults_${++db}`;
  const admin = new pg.Client({ connectionString: server.info.adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const pool = quietPool(server.info.urlFor(name), 1);
  await migrate(pool);
  await pool.end();
  return name;
}

interface ChildReport {
  calls: number;
  outcomes: Record<string, number>;
  failures: Array<{ name: string; retryable: boolean | null; message: string }>;
  retry: { retriedCalls: number; retries: number; exhausted: number; recoveredAccepts: number };
  answers: Record<string, string[]>;
}

/** Starts test/producer-child.ts; resolves `ready` when it enqueues, `done` with its exit code and report. */
function producer(database: string, producers: number, keys: number, mode: "keyed" | "keyless") {
  const proc = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      path.join(import.meta.dirname, "producer-child.ts"),
      server.info.urlFor(database),
      String(producers),
      String(keys),
      mode,
    ],
    { cwd: path.join(import.meta.dirname, ".."), stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  let onReady: () => void = () => {};
  const ready = new Promise<void>((r) => {
    onReady = r;
  });
  proc.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    if (out.includes("ready\n")) onReady();
  });
  proc.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const done = new Promise<{ code: number | null; report: ChildReport | null; stderr: string }>((resolve) => {
    proc.once("exit", (code) => {
      const line = out.split("\n").find((l) => l.startsWith("{"));
      resolve({ code, report: line ? (JSON.parse(line) as ChildReport) : null, stderr: err });
    });
  });
  return { ready, done, proc };
}

async function terminateBackends(database: string): Promise<number> {
  const admin = new pg.Client({ connectionString: server.info.adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ n: string }>(
      "select count(*) filter (where pg_terminate_backend(pid)) as n from pg_stat_activity where datname = $1",
      [database],
    );
    return Number(rows[0]?.n ?? 0);
  } finally {
    await admin.end();
  }
}

/** Every key answered with exactly one job id, and that is the job holding the key: nothing lost, nothing duplicated. */
async function expectOneJobPerKey(database: string, report: ChildReport, keys: number, producers: number) {
  const pool = quietPool(server.info.urlFor(database), 1);
  try {
    const { rows } = await pool.query<{ k: number; id: string }>(
      "select (payload->>'k')::int as k, id from workhorse.job where queue = 'faults' order by 1",
    );
    const stored = new Map(rows.map((r) => [r.k, r.id]));
    const answeredTwoIds = Object.values(report.answers).filter((ids) => ids.length !== 1).length;
    const answeredOtherThanStored = Object.entries(report.answers).filter(
      ([k, ids]) => ids[0] !== stored.get(Number(k)),
    ).length;
    expect({
      exitCode: 0,
      calls: report.calls,
      failed: report.failures.map((f) => `${f.name} (retryable ${f.retryable}): ${f.message}`),
      keysAnswered: Object.keys(report.answers).length,
      jobs: rows.length,
      answeredTwoIds,
      answeredOtherThanStored,
      accepted: report.outcomes.accepted,
    }).toEqual({
      exitCode: 0,
      calls: keys * producers,
      failed: [],
      keysAnswered: keys,
      jobs: keys,
      answeredTwoIds: 0,
      answeredOtherThanStored: 0,
      accepted: keys,
    });
  } finally {
    await pool.end();
  }
}

test("a keyed producer survives its backends being killed: every call answers once, 0 lost, 0 duplicated", async () => {
  const database = await freshDatabase();
  const KEYS = 300;
  const PRODUCERS = 8;
  const child = producer(database, PRODUCERS, KEYS, "keyed");
  await child.ready;
  let killed = 0;
  let finished = false;
  void child.done.then(() => {
    finished = true;
  });
  while (!finished) {
    killed += await terminateBackends(database);
    await new Promise((r) => setTimeout(r, 150));
  }
  const { code, report, stderr } = await child.done;
  expect(stderr).not.toMatch(/Unhandled|uncaught/i);
  expect(code).toBe(0);
  if (!report) throw new Error(`no report from the producer: ${stderr}`);
  await expectOneJobPerKey(database, report, KEYS, PRODUCERS);
  // The faults were real: backends died under the producer and calls had to be repeated.
  expect(killed).toBeGreaterThan(0);
  expect(report.retry.retriedCalls).toBeGreaterThan(0);
  expect(report.retry.exhausted).toBe(0);
  console.log(
    `kill: ${killed} backends killed; retry ${JSON.stringify(report.retry)}; outcomes ${JSON.stringify(report.outcomes)}`,
  );
});

test("a keyed producer survives PostgreSQL restarting (fast, then immediate shutdown): 0 lost, 0 duplicated", async () => {
  const database = await freshDatabase();
  const KEYS = 400;
  const PRODUCERS = 8;
  const child = producer(database, PRODUCERS, KEYS, "keyed");
  await child.ready;
  for (const mode of ["fast", "immediate"] as const) {
    await new Promise((r) => setTimeout(r, 400));
    await stopEmbeddedPostgres({ mode });
    await new Promise((r) => setTimeout(r, 300));
    server.info = await startPrivateServer({ dir: server.dataDir, port: server.port });
  }
  const { code, report, stderr } = await child.done;
  expect(stderr).not.toMatch(/Unhandled|uncaught/i);
  expect(code).toBe(0);
  if (!report) throw new Error(`no report from the producer: ${stderr}`);
  await expectOneJobPerKey(database, report, KEYS, PRODUCERS);
  expect(report.retry.retriedCalls).toBeGreaterThan(0);
  expect(report.retry.exhausted).toBe(0);
  console.log(`restart: retry ${JSON.stringify(report.retry)}; outcomes ${JSON.stringify(report.outcomes)}`);
});

test("while PostgreSQL is down, a keyless call fails at once with a retryable error; a keyed call waits for it", async () => {
  const database = await freshDatabase();
  const pool = quietPool(server.info.urlFor(database), 2, { connectionTimeoutMillis: 2000 });
  const queue = new Queue({ pool, maintenance: false });
  try {
    await stopEmbeddedPostgres();
    const keyless = await queue.enqueue("order.place", { k: 1 }, { queue: "faults" }).catch((e: unknown) => e);
    expect(keyless).toBeInstanceOf(WorkhorseDatabaseError);
    expect((keyless as WorkhorseDatabaseError).retryable).toBe(true);
    expect(queue.retryStats()).toEqual({ retriedCalls: 0, retries: 0, exhausted: 0, recoveredAccepts: 0 });

    const keyed = queue.enqueueWithResult("order.place", { k: 2 }, { queue: "faults", idempotency: { key: "k2" } });
    await new Promise((r) => setTimeout(r, 500));
    server.info = await startPrivateServer({ dir: server.dataDir, port: server.port });
    const result = await keyed;
    expect(result.outcome).toBe("accepted");
    const stats = queue.retryStats();
    expect(stats.retriedCalls).toBe(1);
    expect(stats.exhausted).toBe(0);
    const { rows } = await pool.query("select id from workhorse.job where queue = 'faults'");
    expect(rows).toEqual([{ id: result.jobId }]);
  } finally {
    await queue.close();
    await pool.end();
  }
});

test("a keyed call with retry: false, or inside the caller's transaction, is not repeated", async () => {
  const database = await freshDatabase();
  const pool = quietPool(server.info.urlFor(database), 2);
  const queue = new Queue({ pool, maintenance: false, retry: false });
  const retrying = new Queue({ pool, maintenance: false });
  const client = await pool.connect();
  client.on("error", () => {});
  try {
    await client.query("begin");
    const [{ pid }] = (await client.query<{ pid: number }>("select pg_backend_pid() as pid")).rows as [{ pid: number }];
    await terminateBackendPid(pid);
    const inTx = await retrying
      .withClient(client)
      .enqueue("order.place", { k: 1 }, { idempotency: { key: "tx" } })
      .catch((e: unknown) => e);
    expect(inTx).toBeInstanceOf(WorkhorseDatabaseError);
    expect((inTx as WorkhorseDatabaseError).retryable).toBe(true);
    expect(retrying.retryStats().retriedCalls).toBe(0);

    await stopEmbeddedPostgres();
    const off = await queue.enqueue("order.place", { k: 2 }, { idempotency: { key: "off" } }).catch((e: unknown) => e);
    expect(off).toBeInstanceOf(WorkhorseDatabaseError);
    expect(queue.retryStats()).toEqual({ retriedCalls: 0, retries: 0, exhausted: 0, recoveredAccepts: 0 });
  } finally {
    client.release(true);
    server.info = await startPrivateServer({ dir: server.dataDir, port: server.port });
    await queue.close();
    await retrying.close();
    await pool.end();
  }
});

async function terminateBackendPid(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: server.info.adminUrl });
  await admin.connect();
  await admin.query("select pg_terminate_backend($1)", [pid]);
  await admin.end();
}

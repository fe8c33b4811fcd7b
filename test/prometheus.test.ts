// Debian's real Prometheus server scrapes the console's GET /metrics (the route's handler in a
// small node http server on loopback, with the bearer token) while the console's own Queue and a
// worker make known traffic; the values are read back through Prometheus's HTTP query API.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import { freePort } from "../lib/db";
import { EnqueueIdempotencyConflictError, Worker } from "../lib/enqueue";
import { setupQueueTests, waitFor } from "./helpers";

vi.mock("server-only", () => ({}));

const PROMETHEUS = "/usr/bin/prometheus";
const TOKEN = `prom-token-${Date.now()}-abcdefgh`;
const t = setupQueueTests();

const { metricsResponse } = await import("@/lib/console/metrics/metrics");
const { consoleMetrics } = await import("@/lib/console/metrics/meter");
const { consoleDb } = await import("@/lib/console/databases/db");

let dir = "";
let server: http.Server | null = null;
let prometheus: ChildProcess | null = null;
let promUrl = "";
let scrapes = 0;

beforeAll(async () => {
  expect(
    existsSync(PROMETHEUS),
    "Debian's prometheus package (the vitest global setup installs it as root: scripts/system-tools.mjs)",
  ).toBe(true);
  await t.ready();
  process.env.DATABASE_URL = t.url;
  process.env.WORKHORSE_METRICS_TOKEN = TOKEN;
  process.env.WORKHORSE_METRICS_MAX_AGE_MS = "1000";
  dir = await mkdtemp(path.join(tmpdir(), "workhorse-prometheus-"));
  const consolePort = await freePort();
  server = http.createServer(async (req, res) => {
    scrapes++;
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const answer = await metricsResponse(new Request(`http://127.0.0.1:${consolePort}${req.url}`, { headers }));
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server?.listen(consolePort, "127.0.0.1", resolve));
  const promPort = await freePort();
  promUrl = `http://127.0.0.1:${promPort}`;
  await writeFile(
    path.join(dir, "prometheus.yml"),
    [
      "global: { scrape_interval: 1s, evaluation_interval: 1s }",
      "scrape_configs:",
      "  - job_name: workhorse",
      "    metrics_path: /metrics",
      `    authorization: { type: Bearer, credentials: "${TOKEN}" }`,
      `    static_configs: [{ targets: ["127.0.0.1:${consolePort}"] }]`,
      "",
    ].join("\n"),
  );
  prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${path.join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${path.join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    { stdio: "ignore" },
  );
  await waitFor("prometheus ready", async () => (await fetch(`${promUrl}/-/ready`).catch(() => null))?.ok, 30_000, 100);
});

afterAll(async () => {
  const p = prometheus;
  if (p && p.exitCode === null) {
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGTERM");
    await exited;
  }
  await new Promise((r) => (server ? server.close(r) : r(null)));
  const db = await consoleDb().catch(() => null);
  await db?.queue.close();
  await db?.pool.end();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The value of an instant query with exactly one series, or null. */
async function query(q: string): Promise<number | null> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as { data?: { result: Array<{ value: [number, string] }> } };
  const r = body.data?.result ?? [];
  return r.length === 1 ? Number(r[0]?.value[1]) : null;
}

test("Prometheus scrapes /metrics with the token and sees accepts, replays, a conflict and a dead letter", async () => {
  const { queue } = await consoleDb();
  await queue.enqueue("t", { n: 1 }, { queue: "prom", idempotency: { key: "prom-k1" } });
  await queue.enqueue("t", { n: 1 }, { queue: "prom", idempotency: { key: "prom-k1" } });
  await queue.enqueue("t", { n: 1 }, { queue: "prom", idempotency: { key: "prom-k1" } });
  await queue.enqueue("t", { n: 2 }, { queue: "prom" });
  const conflict = await queue
    .enqueue("t", { n: 3 }, { queue: "prom", idempotency: { key: "prom-k1" } })
    .catch((e: unknown) => e);
  expect(conflict).toBeInstanceOf(EnqueueIdempotencyConflictError);
  const dead = await queue.enqueue("boom", {}, { queue: "prom-dead", maxAttempts: 1 });
  const worker = new Worker({
    pool: t.pool,
    queues: ["prom-dead"],
    pollIntervalMs: 25,
    onError: () => {},
    telemetry: { meterProvider: consoleMetrics().meterProvider },
    handlers: { boom: async () => Promise.reject(new Error("no")) },
  });
  await worker.start();
  try {
    await waitFor("a dead letter", async () => (await t.count("job", `id = '${dead}' and state = 'failed'`)) === 1);
  } finally {
    await worker.stop({ graceMs: 0 });
  }

  const expected: Array<[string, number]> = [
    [
      'sum(workhorse_enqueue_decisions_total{messaging_destination_name="prom",workhorse_enqueue_outcome="accepted"})',
      2,
    ],
    [
      'sum(workhorse_enqueue_decisions_total{messaging_destination_name="prom",workhorse_enqueue_outcome="replayed"})',
      2,
    ],
    [
      'sum(workhorse_enqueue_decisions_total{messaging_destination_name="prom",workhorse_enqueue_outcome="conflict"})',
      1,
    ],
    [
      'sum(workhorse_worker_attempts_total{messaging_destination_name="prom-dead",workhorse_attempt_result="failed"})',
      1,
    ],
    ['workhorse_queue_dead_letters{messaging_destination_name="prom-dead"}', 1],
    ['workhorse_queue_depth{messaging_destination_name="prom",workhorse_job_state="ready"}', 2],
    ['workhorse_bindings{workhorse_binding_state="live"}', 1],
  ];
  for (const [q, want] of expected) {
    await waitFor(`${q} == ${want}`, async () => (await query(q)) === want, 30_000, 200);
  }
  // Prometheus itself says the target is up, scraped with the token.
  expect(await query('up{job="workhorse"}')).toBe(1);
  expect(scrapes).toBeGreaterThan(0);
});

/** Every series an instant query returns. */
async function seriesOf(q: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as {
    data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  };
  return body.data?.result ?? [];
}

test("a queue that empties leaves /metrics: Prometheus no longer has its depth or lag (no alert for a queue that is gone)", async () => {
  const { queue } = await consoleDb();
  await queue.enqueueMany([
    { type: "t", payload: { n: 1 }, options: { queue: "prom-gone" } },
    { type: "t", payload: { n: 2 }, options: { queue: "prom-gone" } },
  ]);
  const depth = 'workhorse_queue_depth{messaging_destination_name="prom-gone",workhorse_job_state="ready"}';
  await waitFor(`${depth} == 2`, async () => (await query(depth)) === 2, 30_000, 200);
  expect(await query('workhorse_queue_lag{messaging_destination_name="prom-gone"}')).not.toBeNull();
  await t.pool.query("delete from workhorse.job where queue = 'prom-gone'");
  const gone = '{__name__=~"workhorse_queue_.*",messaging_destination_name="prom-gone"}';
  await waitFor("no series of queue prom-gone", async () => (await seriesOf(gone)).length === 0, 20_000, 200);
  // What the alert rules read about it: nothing, so WorkhorseQueueLagHigh and
  // WorkhorseNoWorkerForDueJobs cannot fire for it.
  expect(await seriesOf('workhorse_queue_lag{messaging_destination_name="prom-gone"}')).toEqual([]);
});

test("dead letters: a redriven failed job is no longer one, as on the dead-letter page", async () => {
  const { queue } = await consoleDb();
  const failed = [
    await queue.enqueue("boom", { n: 1 }, { queue: "prom-redrive", maxAttempts: 1 }),
    await queue.enqueue("boom", { n: 2 }, { queue: "prom-redrive", maxAttempts: 1 }),
  ];
  const worker = new Worker({
    pool: t.pool,
    queues: ["prom-redrive"],
    pollIntervalMs: 25,
    onError: () => {},
    handlers: { boom: async () => Promise.reject(new Error("no")) },
  });
  await worker.start();
  try {
    await waitFor(
      "two dead letters",
      async () => (await t.count("job", `queue = 'prom-redrive' and state = 'failed'`)) === 2,
    );
  } finally {
    await worker.stop({ graceMs: 0 });
  }
  const dead = 'workhorse_queue_dead_letters{messaging_destination_name="prom-redrive"}';
  await waitFor(`${dead} == 2`, async () => (await query(dead)) === 2, 30_000, 200);
  const r = await queue.redrive({
    jobIds: [failed[0] as string],
    requestId: "prom-r1",
    requestedBy: "test",
    reason: "fixed",
  });
  expect(r.results[0]?.status).toBe("redriven");
  expect((await queue.listDeadLetters({ queue: "prom-redrive" })).jobs.map((j) => j.id)).toEqual([failed[1]]);
  await waitFor(`${dead} == 1`, async () => (await query(dead)) === 1, 20_000, 200);
});

test("decisions of every producer, from the database: accepted, replayed, conflict, replaced, coalesced, non_replaceable", async () => {
  // Another process's traffic as far as the console goes: a Queue without the console's telemetry.
  const producer = t.queue();
  const q = "prom-db";
  await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: { key: "db-k1" } });
  await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: { key: "db-k1" } });
  await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: { key: "db-k1" } });
  const conflict = await producer
    .enqueue("t", { n: 2 }, { queue: q, idempotency: { key: "db-k1" } })
    .catch((e: unknown) => e);
  expect(conflict).toBeInstanceOf(EnqueueIdempotencyConflictError);
  await producer.enqueue("t", { n: 3 }, { queue: q });
  const outcomes = [
    await producer.enqueueWithResult("t", { v: 1 }, { queue: q, debounce: { key: "db-d1", windowMs: 60_000 } }),
    await producer.enqueueWithResult("t", { v: 2 }, { queue: q, debounce: { key: "db-d1", windowMs: 60_000 } }),
    await producer.enqueueWithResult("t", { v: 1 }, { queue: q, throttle: { key: "db-t1", windowMs: 60_000 } }),
    await producer.enqueueWithResult("t", { v: 1 }, { queue: q, throttle: { key: "db-t1", windowMs: 60_000 } }),
    await producer.enqueueWithResult("t", { v: 1 }, { queue: q, debounce: { key: "db-k1", windowMs: 60_000 } }),
  ].map((r) => r.outcome);
  expect(outcomes).toEqual(["accepted", "replaced", "accepted", "coalesced", "non_replaceable"]);
  await producer.close(); // flushes the observation log
  const expected: Array<[string, number]> = [
    ["accepted", 4],
    ["replayed", 2],
    ["conflict", 1],
    ["replaced", 1],
    ["coalesced", 1],
    ["non_replaceable", 1],
  ];
  for (const [outcome, want] of expected) {
    const series = `workhorse_queue_decisions_total{messaging_destination_name="${q}",workhorse_enqueue_outcome="${outcome}"}`;
    await waitFor(`${series} == ${want}`, async () => (await query(series)) === want, 45_000, 250);
  }
  // The in-process counter of the console saw none of it: the two are separate series.
  expect(await seriesOf(`workhorse_enqueue_decisions_total{messaging_destination_name="${q}"}`)).toEqual([]);
  // What WorkhorseConflictRateHigh divides: conflicts over every decision of the queue.
  expect(
    await query(
      `sum by (messaging_destination_name) (workhorse_queue_decisions_total{messaging_destination_name="${q}",workhorse_enqueue_outcome="conflict"}) / sum by (messaging_destination_name) (workhorse_queue_decisions_total{messaging_destination_name="${q}"})`,
    ),
  ).toBeCloseTo(1 / 10, 10);
}, 120_000);

test("5,000 queues: one exact series each, no overflow series, a queue made later appears, and all leave once empty", async () => {
  // Enqueued without the console's telemetry: only the state gauges see these queues.
  const producer = t.queue();
  const names = Array.from({ length: 5000 }, (_, i) => `many-${String(i).padStart(4, "0")}`);
  for (let i = 0; i < names.length; i += 1000) {
    await producer.enqueueMany(
      names.slice(i, i + 1000).map((q) => ({ type: "t", payload: {}, options: { queue: q } })),
    );
  }
  const ready = 'workhorse_queue_depth{workhorse_job_state="ready",messaging_destination_name=~"many-.*"}';
  await waitFor("5,000 ready depths", async () => (await query(`count(${ready} == 1)`)) === 5000, 60_000, 500);
  for (const state of ["scheduled", "active"]) {
    expect(
      await query(
        `count(workhorse_queue_depth{workhorse_job_state="${state}",messaging_destination_name=~"many-.*"} == 0)`,
      ),
    ).toBe(5000);
  }
  expect(await query('count(workhorse_queue_lag{messaging_destination_name=~"many-.*"})')).toBe(5000);
  expect(await seriesOf('{otel_metric_overflow="true"}')).toEqual([]);
  await producer.enqueue("t", {}, { queue: "many-late" });
  await waitFor(
    "the later queue",
    async () =>
      (await query('workhorse_queue_depth{workhorse_job_state="ready",messaging_destination_name="many-late"}')) === 1,
    30_000,
    200,
  );
  await t.pool.query("delete from workhorse.job where queue like 'many-%'");
  // The state gauges leave. (workhorse_queue_decisions_total is a counter of decisions counted from
  // the database: it keeps its totals, and whether these accepts are in it depends on whether the
  // delete came before the 10 s settle time, so it is not part of this check.)
  await waitFor(
    "no series of the emptied queues",
    async () =>
      (
        await seriesOf(
          '{__name__=~"workhorse_queue_(depth|lag|dead_letters|workers|paused)",messaging_destination_name=~"many-.*"}',
        )
      ).length === 0,
    30_000,
    500,
  );
  await producer.close();
}, 180_000);

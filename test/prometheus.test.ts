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

const { metricsResponse } = await import("@/lib/console/metrics");
const { consoleMetrics } = await import("@/lib/console/meter");
const { consoleDb } = await import("@/lib/console/db");

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

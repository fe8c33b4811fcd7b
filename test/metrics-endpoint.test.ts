// The state gauges (one cached read of PostgreSQL) and the console's GET /metrics: off without a
// token, 401 without the right bearer token (nothing read), Prometheus text with it.
import { NextRequest } from "next/server";
import { beforeAll, describe, expect, test, vi } from "vitest";
import { StateGauges } from "../lib/enqueue";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

vi.mock("server-only", () => ({}));

const t = setupQueueTests();
const TOKEN = "metrics-token-0123456789abcdef";
beforeAll(async () => {
  await t.ready();
  process.env.DATABASE_URL = t.url;
  process.env.WORKHORSE_METRICS_MAX_AGE_MS = "1000";
});
const startWorker = workerStarter(t.pool, { pollIntervalMs: 25, reapIntervalMs: 0, leaseMs: 5000 });

const { metricsResponse } = await import("@/lib/console/metrics/metrics");
const { consoleMetrics } = await import("@/lib/console/metrics/meter");
const { proxy } = await import("@/proxy");

const scrape = (authorization?: string) =>
  metricsResponse(new Request("http://127.0.0.1/metrics", { headers: authorization ? { authorization } : {} }));

describe("StateGauges", () => {
  test("depth by state, lag, dead letters, paused, bindings: exact values, one read per maxAge", async () => {
    const q = t.queue();
    const ctx = { actor: "ops", reason: "test" };
    await q.enqueue("x", {}, { queue: "sg-a" });
    await q.enqueue("x", {}, { queue: "sg-a", idempotency: { key: "sg-k1" } });
    await q.enqueue("x", {}, { queue: "sg-a", runAt: new Date(Date.now() + 3_600_000) });
    await q.enqueue("x", {}, { queue: "sg-b", idempotency: { key: "sg-k2", ttlMs: 1 } });
    await t.sql(
      "update workhorse.job set run_at = now() - interval '90 seconds' where queue = 'sg-a' and state = 'ready'",
    );
    const dead = await q.enqueue("boom", {}, { queue: "sg-dead", maxAttempts: 1 });
    await startWorker({ queues: ["sg-dead"], handlers: { boom: async () => Promise.reject(new Error("no")) } });
    await waitFor("a dead letter", async () => (await t.count("job", `id = '${dead}' and state = 'failed'`)) === 1);
    await q.pauseQueue("sg-b", ctx);
    await new Promise((r) => setTimeout(r, 5)); // the 1 ms binding has expired

    const gauges = new StateGauges(t.pool, { maxAgeMs: 60_000 });
    const [s, again] = await Promise.all([gauges.read(), gauges.read()]);
    expect(again).toBe(s);
    expect(gauges.reads).toBe(1);
    await gauges.read();
    expect(gauges.reads).toBe(1);
    const a = s.queues.find((x) => x.queue === "sg-a");
    expect(a?.depth).toEqual({ scheduled: 1, ready: 2, active: 0 });
    expect(a?.lagSeconds).toBeGreaterThanOrEqual(89);
    expect(a?.lagSeconds).toBeLessThan(200);
    expect(s.queues.find((x) => x.queue === "sg-dead")?.deadLetters).toBe(1);
    expect(s.queues.find((x) => x.queue === "sg-b")?.paused).toBe(true);
    expect(s.bindings.live).toBeGreaterThanOrEqual(1);
    expect(s.bindings.expired).toBeGreaterThanOrEqual(1);
    expect(s.bindings.oldestExpiredAgeSeconds).toBeGreaterThan(0);
  });
});

describe("StateGauges when the last read is old", () => {
  test("served at once while a background read refreshes it; past twice the max age a read is awaited", async () => {
    const q = t.queue();
    let clock = 1_000_000;
    const now = vi.spyOn(performance, "now").mockImplementation(() => clock);
    try {
      const gauges = new StateGauges(t.pool, { maxAgeMs: 15_000 });
      const first = await gauges.read();
      expect(gauges.reads).toBe(1);
      await q.enqueue("x", {}, { queue: "swr" });
      clock += 15_001; // stale, under twice the max age
      const served = await gauges.read();
      expect(served).toBe(first);
      expect(gauges.reads).toBe(2);
      const refreshed = await gauges.refresh(); // the background read, joined
      expect(gauges.reads).toBe(2);
      expect(refreshed.queues.find((x) => x.queue === "swr")?.depth.ready).toBe(1);
      expect(await gauges.read()).toBe(refreshed);
      await q.enqueue("x", {}, { queue: "swr" });
      clock += 30_000; // twice the max age: awaited
      const awaited = await gauges.read();
      expect(gauges.reads).toBe(3);
      expect(awaited.queues.find((x) => x.queue === "swr")?.depth.ready).toBe(2);
    } finally {
      now.mockRestore();
    }
  });
});

describe("GET /metrics", () => {
  test("off (404) without WORKHORSE_METRICS_TOKEN", async () => {
    delete process.env.WORKHORSE_METRICS_TOKEN;
    expect((await scrape(`Bearer ${TOKEN}`)).status).toBe(404);
  });

  test("401 without the right bearer token, and nothing is read or computed", async () => {
    process.env.WORKHORSE_METRICS_TOKEN = TOKEN;
    for (const h of [
      undefined,
      "Bearer wrong-token-0123456789abcdef",
      `Basic ${TOKEN}`,
      `Bearer ${TOKEN}x`,
      "Bearer ",
    ]) {
      const res = await scrape(h);
      expect(res.status, String(h)).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
    expect(consoleMetrics().gauges).toBeNull();
  });

  test("200 with the token: Prometheus text with the state gauges, one database read per max age", async () => {
    process.env.WORKHORSE_METRICS_TOKEN = TOKEN;
    const res = await scrape(`Bearer ${TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const body = await res.text();
    expect(body).toMatch(
      /^workhorse_queue_depth\{[^}]*messaging_destination_name="sg-a"[^}]*workhorse_job_state="ready"[^}]*\} 2$/m,
    );
    expect(body).toMatch(/^workhorse_queue_dead_letters\{[^}]*messaging_destination_name="sg-dead"[^}]*\} 1$/m);
    expect(body).toMatch(/^workhorse_queue_paused\{[^}]*messaging_destination_name="sg-b"[^}]*\} 1$/m);
    expect(body).toMatch(/^workhorse_queue_lag\{[^}]*messaging_destination_name="sg-a"[^}]*\} (9\d|1\d\d)(\.\d+)?$/m);
    // Every state line names the database it was read from (DATABASE_URL alone: "default").
    expect(body).toMatch(/^workhorse_queue_depth\{[^}]*database="default"[^}]*\} /m);
    expect(body).not.toMatch(/^workhorse_queue_[a-z_]+\{(?![^}]*database=)[^}]*\} /m);
    expect(body.match(/^# TYPE workhorse_queue_depth gauge$/gm)).toHaveLength(1);
    const reads = consoleMetrics().gauges?.get("default")?.reads;
    await Promise.all([scrape(`Bearer ${TOKEN}`), scrape(`Bearer ${TOKEN}`)]);
    expect(consoleMetrics().gauges?.get("default")?.reads).toBe(reads);
  });

  test("the console's proxy lets GET /metrics through to the route (no session, no origin check)", async () => {
    const res = await proxy(new NextRequest("http://127.0.0.1:3000/metrics"));
    expect(res.headers.get("x-middleware-next")).toBe("1");
  });
});

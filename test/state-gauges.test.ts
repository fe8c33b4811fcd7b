// The state gauges' values on a real database: exact where docs/observability.md says exact (depth
// by due-ness, lag, dead letters, paused, workers by heartbeat, bindings below the cap), estimates
// where it says estimated (bindings past the cap, from the table's statistics after ANALYZE).
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { beforeAll, describe, expect, test } from "vitest";
import { STATE_GAUGE_VIEWS, StateGauges } from "../lib/enqueue";
import { EXACT_BINDINGS_CAP } from "../lib/store/core/state-gauges";
import { distributedTests } from "./citus";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());
const startWorker = workerStarter(t.pool, { pollIntervalMs: 25, reapIntervalMs: 0, leaseMs: 5000 });

const read = () => new StateGauges(t.pool, { maxAgeMs: 0 }).read();
const queueOf = async (name: string) => (await read()).queues.find((q) => q.queue === name);

/** Citus: every count is exact there (docs/observability.md); a binding row carries its bucket. */
const distributed = distributedTests();

/** `n` bindings expiring `offset` from now (negative: already expired), keys `<prefix>-<i>`. */
async function bindings(prefix: string, n: number, offset: string): Promise<void> {
  const bucket = distributed
    ? ["bucket, ", "workhorse.key_bucket('sg', sha256(convert_to($1 || '-' || g, 'UTF8'))), "]
    : ["", ""];
  await t.sql(
    `insert into workhorse.key_binding (${bucket[0]}scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                        request_digest, ttl_ms, created_at, expires_at)
     select ${bucket[1]}'sg', sha256(convert_to($1 || '-' || g, 'UTF8')), gen_random_uuid(), 'idempotency', 'sg…', 8,
            substring(sha512(convert_to($1 || g, 'UTF8')) || sha256(convert_to($1 || g, 'UTF8')) from 1 for 88),
            sha256(convert_to($1 || g, 'UTF8')), 86400000, now() - interval '1 day',
            now() + $3::interval + g * interval '1 millisecond'
       from generate_series(1, $2::integer) g`,
    [prefix, n, offset],
  );
}

describe("depth, lag, dead letters, paused: exact", () => {
  test("ready counts due pending jobs (a due scheduled one too), scheduled the ones not yet due", async () => {
    const q = t.queue();
    await q.enqueue("x", {}, { queue: "ex-a" });
    await q.enqueue("x", {}, { queue: "ex-a" });
    const later = await q.enqueue("x", {}, { queue: "ex-a", runAt: new Date(Date.now() + 3_600_000) });
    const due = await q.enqueue("x", {}, { queue: "ex-a", runAt: new Date(Date.now() + 3_600_000) });
    // A scheduled job whose time has come (a retry's backoff ended): due, claimed like a ready one.
    await t.sql("update workhorse.job set run_at = now() - interval '120 seconds' where id = $1", [due]);
    const a = await queueOf("ex-a");
    expect(a?.depth).toEqual({ scheduled: 1, ready: 3, active: 0 });
    expect(a?.lagSeconds).toBeGreaterThanOrEqual(119);
    expect(a?.lagSeconds).toBeLessThan(200);
    expect((await t.sql("select state from workhorse.job where id = $1", [later]))[0]?.state).toBe("scheduled");
  });

  test("active jobs, dead letters and a paused queue", async () => {
    const q = t.queue();
    const dead = await q.enqueue("boom", {}, { queue: "ex-b", maxAttempts: 1 });
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const running = await q.enqueue("hold", {}, { queue: "ex-b" });
    await startWorker({
      queues: ["ex-b"],
      concurrency: 2, // both at once, whichever it claims first
      handlers: { boom: async () => Promise.reject(new Error("no")), hold: () => held },
    });
    await waitFor("a dead letter and a running job", async () => {
      const failed = await t.count("job", `id = '${dead}' and state = 'failed'`);
      const active = await t.count("job", `id = '${running}' and state = 'active'`);
      return failed === 1 && active === 1;
    });
    await q.pauseQueue("ex-b", { actor: "ops", reason: "test" });
    const b = await queueOf("ex-b");
    release();
    expect(b?.depth).toEqual({ scheduled: 0, ready: 0, active: 1 });
    expect(b?.deadLetters).toBe(1);
    expect(b?.paused).toBe(true);
    expect(b?.lagSeconds).toBe(0);
  });
});

describe("workers: counted by their heartbeat rows", () => {
  test("a running worker counts for each queue it lists while idle; stopping and gone ones do not", async () => {
    const w = await startWorker({ queues: ["wk-a", "wk-b"], handlers: { x: async () => {} } });
    await waitFor("its check-in", async () => (await t.count("worker_heartbeat", "'wk-a' = any (queues)")) === 1);
    const fresh = `insert into workhorse.worker_heartbeat
                     (worker_id, host, pid, queues, concurrency, running, held, interval_ms, status, started_at, checked_at)
                   values ($1, 'h', 1, $2::text[], 1, 0, 0, 1000, $3, now(), now() - $4::interval)`;
    await t.sql(fresh, ["wk-other", ["wk-b", "wk-c"], "running", "2 seconds"]); // two intervals late: not gone
    await t.sql(fresh, ["wk-stopping", ["wk-a"], "stopping", "0 seconds"]);
    await t.sql(fresh, ["wk-gone", ["wk-a", "wk-d"], "running", "4 seconds"]); // three intervals missed: gone
    const s = await read();
    const workers = Object.fromEntries(s.queues.map((q) => [q.queue, q.workers]));
    expect(workers["wk-a"]).toBe(1);
    expect(workers["wk-b"]).toBe(2);
    expect(workers["wk-c"]).toBe(1);
    expect(workers["wk-d"] ?? 0).toBe(0);
    // Listed queues appear with no job in them.
    expect(s.queues.find((q) => q.queue === "wk-c")?.depth).toEqual({ scheduled: 0, ready: 0, active: 0 });
    await w.stop({ graceMs: 0 });
    expect((await queueOf("wk-a"))?.workers ?? 0).toBe(0);
  });
});

describe("bindings: exact below the cap, estimated past it", () => {
  test("a few bindings are counted exactly", async () => {
    await t.sql("delete from workhorse.key_binding");
    await bindings("few-live", 7, "1 hour");
    await bindings("few-expired", 3, "-1 hour");
    const s = await read();
    expect(s.bindings.live).toBe(7);
    expect(s.bindings.expired).toBe(3);
    expect(s.bindings.exact).toEqual({ live: true, expired: true });
    expect(s.bindings.oldestExpiredAgeSeconds).toBeGreaterThanOrEqual(3599);
  });

  test("past the cap: estimates from the table's statistics, within a few percent after ANALYZE (Citus: exact)", async () => {
    await t.sql("delete from workhorse.key_binding");
    const live = 3 * EXACT_BINDINGS_CAP;
    const expired = 2 * EXACT_BINDINGS_CAP;
    await bindings("many-live", live, "1 hour");
    await bindings("many-expired", expired, "-1 hour");
    await t.sql("analyze workhorse.key_binding");
    const s = await read();
    if (distributed) {
      expect(s.bindings).toMatchObject({ live, expired, exact: { live: true, expired: true } });
      return;
    }
    expect(s.bindings.exact).toEqual({ live: false, expired: false });
    expect(Math.abs(s.bindings.live - live) / live).toBeLessThan(0.05);
    expect(Math.abs(s.bindings.expired - expired) / expired).toBeLessThan(0.05);
    expect(s.bindings.live).toBeGreaterThanOrEqual(EXACT_BINDINGS_CAP);
    expect(s.bindings.expired).toBeGreaterThanOrEqual(EXACT_BINDINGS_CAP);

    // Cleanup leaves 5 expired: counted exactly again. Live stays the estimate as of the last
    // ANALYZE (the row estimate still holds the deleted rows) until the table is analyzed again.
    await t.sql(
      `delete from workhorse.key_binding
        where key_hash in (select key_hash from workhorse.key_binding where expires_at <= now() limit $1)`,
      [expired - 5],
    );
    const cleaned = await read();
    expect(cleaned.bindings.expired).toBe(5);
    expect(cleaned.bindings.exact).toEqual({ live: false, expired: true });
    expect(cleaned.bindings.live).toBeGreaterThanOrEqual(live);
    await t.sql("analyze workhorse.key_binding");
    const analyzed = await read();
    expect(Math.abs(analyzed.bindings.live - live) / live).toBeLessThan(0.05);
  });
});

describe("register(): on an application's own meter provider (cumulative reader)", () => {
  test("past 2,000 queues with STATE_GAUGE_VIEWS every queue is its own series, and a queue that empties reads 0", async () => {
    const reader = new (class extends MetricReader {
      protected override async onForceFlush(): Promise<void> {}
      protected override async onShutdown(): Promise<void> {}
    })();
    const provider = new MeterProvider({ readers: [reader], views: [...STATE_GAUGE_VIEWS] });
    const gauges = new StateGauges(t.pool, { maxAgeMs: 0 });
    const unregister = gauges.register(provider);
    const names = Array.from({ length: 2100 }, (_, i) => `reg-${String(i).padStart(4, "0")}`);
    const producer = t.queue();
    for (let i = 0; i < names.length; i += 1000) {
      await producer.enqueueMany(
        names.slice(i, i + 1000).map((q) => ({ type: "t", payload: {}, options: { queue: q } })),
      );
    }
    const ready = async () => {
      const { resourceMetrics } = await reader.collect();
      const depth = resourceMetrics.scopeMetrics
        .flatMap((s) => s.metrics)
        .find((m) => m.descriptor.name === "workhorse.queue.depth");
      const out = new Map<string, number>();
      for (const p of depth?.dataPoints ?? []) {
        expect(p.attributes["otel.metric.overflow"]).toBeUndefined();
        if (p.attributes["workhorse.job.state"] === "ready") {
          out.set(String(p.attributes["messaging.destination.name"]), Number(p.value));
        }
      }
      return out;
    };
    const before = await ready();
    for (const q of names) expect(before.get(q), q).toBe(1);
    await t.sql("delete from workhorse.job where queue = 'reg-0000'");
    expect((await ready()).get("reg-0000")).toBe(0);
    expect((await ready()).get("reg-0000")).toBe(0); // the SDK keeps a cumulative series at its last value
    unregister();
    await provider.shutdown();
  }, 120_000);
});

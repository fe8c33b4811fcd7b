// The console's health read models (lib/console/reads/series.ts, queue health, state tabs) against real
// PostgreSQL, with jobs enqueued and run through lib/enqueue.
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { EnqueueIdempotencyConflictError, Worker } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { series, invalidateSeries, SERIES_MINUTES } = await import("@/lib/console/reads/series");
const { parseSeriesParams } = await import("@/lib/console/reads/filters");

const t = setupQueueTests();
beforeAll(() => t.ready());

const workers: Worker[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop({ graceMs: 0 })));
});

async function until(what: string, fn: () => Promise<boolean>, ms = 15_000) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const NONE = {
  accepted: 0,
  replayed: 0,
  conflicts: 0,
  replaced: 0,
  coalesced: 0,
  nonReplaceable: 0,
  succeeded: 0,
  failed: 0,
};

describe("per-minute series", () => {
  test("counts debounce replacements, throttle coalesces and non-replaceable requests beside accepted", async () => {
    const q = t.queue();
    const queue = "health-d";
    const debounce = { key: "health-search-1", windowMs: 60_000 };
    await q.enqueue("search.reindex", { v: 1 }, { queue, debounce }); // accepted
    await q.enqueue("search.reindex", { v: 2 }, { queue, debounce }); // replaced
    await q.enqueue("search.reindex", { v: 3 }, { queue, debounce }); // replaced
    await q.enqueue("h.ok", {}, { queue, idempotency: { key: "health-held" } }); // accepted
    const held = await q.enqueueWithResult("h.ok", {}, { queue, debounce: { key: "health-held", windowMs: 1000 } });
    expect(held).toMatchObject({ outcome: "non_replaceable", reason: "incompatible_key_mode" });
    const throttle = { key: "health-shipped-1", windowMs: 60_000 };
    await q.enqueue("order.shipped", {}, { queue, throttle }); // accepted
    await q.enqueue("order.shipped", {}, { queue, throttle }); // coalesced
    await q.enqueue("order.shipped", {}, { queue, throttle }); // coalesced
    await q.enqueue("h.ok", {}, { queue: "health-other", debounce: { key: "health-other", windowMs: 1000 } });
    await q.enqueue("h.ok", {}, { queue: "health-other", debounce: { key: "health-other", windowMs: 1000 } });
    await q.close();
    const d = await series(t.pool, "1h", queue);
    expect(d.totals).toEqual({ ...NONE, accepted: 3, replaced: 2, coalesced: 2, nonReplaceable: 1 });
    const other = await series(t.pool, "1h", "health-other");
    expect(other.totals).toEqual({ ...NONE, accepted: 1, replaced: 1 });
  });

  test("counts accepted, replayed, conflicts, succeeded and failed per queue and overall", async () => {
    const q = t.queue();
    const key = { key: "health-order-1", scope: "health" };
    await q.enqueue("h.ok", { n: 1 }, { queue: "health-a", idempotency: key });
    await q.enqueue("h.ok", { n: 1 }, { queue: "health-a", idempotency: key }); // replayed
    await expect(q.enqueue("h.ok", { n: 2 }, { queue: "health-a", idempotency: key })).rejects.toBeInstanceOf(
      EnqueueIdempotencyConflictError,
    );
    await q.enqueue("h.ok", { n: 3 }, { queue: "health-a" });
    await q.enqueue("h.bad", { n: 4 }, { queue: "health-a", maxAttempts: 1 });
    await q.enqueue("h.ok", { n: 5 }, { queue: "health-b" });
    await q.close(); // flushes the observation log

    const w = new Worker({
      pool: t.pool,
      queues: ["health-a"],
      pollIntervalMs: 25,
      reapIntervalMs: 0,
      onError: () => {},
      handlers: {
        "h.ok": () => ({ ok: true }),
        "h.bad": () => {
          throw new Error("boom");
        },
      },
    });
    workers.push(w);
    await w.start();
    await until("queue health-a finished", async () => {
      const n = await t.count("job", "queue = 'health-a' and finished_at is not null");
      return n === 3;
    });
    await w.stop({ graceMs: 0 });

    const a = await series(t.pool, "1h", "health-a");
    expect(a.window).toBe("1h");
    expect(a.queue).toBe("health-a");
    expect(a.points).toHaveLength(SERIES_MINUTES["1h"]);
    expect(a.totals).toEqual({ ...NONE, accepted: 3, replayed: 1, conflicts: 1, succeeded: 2, failed: 1 });
    // Points are consecutive minutes ending with the current one.
    const times = a.points.map((p) => Date.parse(p.t));
    expect(times.every((x, i) => i === 0 || x - (times[i - 1] as number) === 60_000)).toBe(true);
    expect(Date.parse(a.now) - (times.at(-1) as number)).toBeLessThan(60_000);

    const b = await series(t.pool, "1h", "health-b");
    expect(b.totals).toEqual({ ...NONE, accepted: 1 });

    const day = await series(t.pool, "24h", "health-a");
    expect(day.points).toHaveLength(SERIES_MINUTES["24h"]);
    expect(day.totals).toEqual(a.totals);
  });

  test("a minute older than the window is left out; settled minutes are served from memory", async () => {
    const q = t.queue();
    const id = await q.enqueue("h.old", {}, { queue: "health-old" });
    // Two hours back: in the 24 h window, outside the hour.
    await t.sql(
      "update workhorse.job set created_at = now() - interval '2 hours', state = 'succeeded', finished_at = now() - interval '2 hours' where id = $1",
      [id],
    );
    invalidateSeries(t.pool);
    const none = NONE;
    expect((await series(t.pool, "1h", "health-old")).totals).toEqual(none);
    const day = await series(t.pool, "24h", "health-old");
    expect(day.totals).toEqual({ ...none, accepted: 1, succeeded: 1 });
    const minute = day.points.find((p) => p.succeeded === 1);
    expect(minute?.accepted).toBe(1);
    // Settled: a change to an old minute is not read again by this process.
    await t.sql("update workhorse.job set state = 'failed' where id = $1", [id]);
    expect((await series(t.pool, "24h", "health-old")).totals.succeeded).toBe(1);
    invalidateSeries(t.pool);
    expect((await series(t.pool, "24h", "health-old")).totals).toEqual({ ...none, accepted: 1, failed: 1 });
  });

  test("series parameters: unknown windows and control characters fall back to defaults", () => {
    expect(parseSeriesParams(new URLSearchParams("window=24h&queue=billing"))).toEqual({
      window: "24h",
      queue: "billing",
    });
    expect(parseSeriesParams(new URLSearchParams("window=7d&queue=a%00b"))).toEqual({ window: "1h", queue: null });
  });
});

describe("find by key digest", () => {
  test("finds the binding in every scope, its job and its observations; unknown digests find nothing", async () => {
    const { lookupDigest } = await import("@/lib/console/reads/digest");
    const q = t.queue();
    const key = { key: "digest-order-77", scope: "digest-shop" };
    const id = await q.enqueue("d.capture", { amount: 1 }, { queue: "digest-q", idempotency: key });
    await q.enqueue("d.capture", { amount: 1 }, { queue: "digest-q", idempotency: key });
    await expect(q.enqueue("d.capture", { amount: 2 }, { queue: "digest-q", idempotency: key })).rejects.toThrow();
    await q.enqueue("d.other", {}, { queue: "digest-q", idempotency: { key: "another-key", scope: "digest-shop" } });
    const digest = (await q.describeKey(key)).keyDigest;
    await q.close();

    const found = await lookupDigest(t.pool, digest);
    expect(found.digest).toBe(digest);
    expect(found.bindings).toHaveLength(1);
    expect(found.bindings[0]?.binding).toMatchObject({
      scope: "digest-shop",
      keyDigest: digest,
      jobId: id,
      expired: false,
    });
    expect(found.bindings[0]?.job).toEqual({ state: "ready", queue: "digest-q", type: "d.capture" });
    expect(found.observationsComplete).toBe(true);
    expect(found.observations.map((o) => o.outcome)).toEqual(["conflict", "replayed"]);
    expect(found.observations.every((o) => o.keyDigest === digest && o.jobId === id)).toBe(true);
    expect(found.scopesSearchedAll).toBe(true);

    const none = await lookupDigest(t.pool, "000000000000");
    expect(none.bindings).toEqual([]);
    expect(none.observations).toEqual([]);
    expect(none.released).toEqual([]);

    // A purged key: no binding any more, and the answer names the job whose purge released it.
    const q2 = t.queue();
    await q2.purge({ jobId: id }, { actor: "dave", reason: "customer asked" });
    const released = await lookupDigest(t.pool, digest);
    expect(released.bindings).toEqual([]);
    expect(released.released).toEqual([{ jobId: id, scope: "digest-shop", purgedAt: expect.any(String) }]);
    expect(released.releasedComplete).toBe(true);
    await q2.close();
  });
});

describe("jobs: state tabs, retrying, prefixes; queue health", () => {
  test("tab counts, retrying jobs and the has-error filter; queue, type and tag match by prefix", async () => {
    const { listJobs, stateTabCounts } = await import("@/lib/console/reads/jobs");
    const { invalidateCounts } = await import("@/lib/console/reads/overview");
    const q = t.queue();
    const a = await q.enqueue("invoice.capture", {}, { queue: "tabs-invoice-eu", tags: ["vip-gold"] });
    const b = await q.enqueue("invoice.refund", {}, { queue: "tabs-invoice-us" });
    const c = await q.enqueue("email.send", {}, { queue: "tabs-invoice-us", runAt: new Date(Date.now() + 3_600_000) });
    // b failed an attempt and waits for its retry.
    await t.sql(
      `update workhorse.job set state = 'scheduled', attempt = 1, run_at = now() + interval '1 minute',
              last_error = '{"name":"Error","message":"boom"}' where id = $1`,
      [b],
    );
    invalidateCounts(t.pool);
    const ids = async (f: Parameters<typeof listJobs>[1]) => (await listJobs(t.pool, f)).rows.map((r) => r.id);
    expect(await ids({ queue: "tabs-invoice" })).toEqual([c, b, a]);
    expect(await ids({ queue: "tabs-invoice-eu" })).toEqual([a]);
    expect(await ids({ queue: "tabs", type: "invoice" })).toEqual([b, a]);
    expect(await ids({ queue: "tabs", tag: "vip" })).toEqual([a]);
    expect(await ids({ queue: "tabs_invoice" })).toEqual([]); // "_" is literal, not a wildcard
    expect(await ids({ queue: "tabs", state: "retrying" })).toEqual([b]);
    expect(await ids({ queue: "tabs", error: true })).toEqual([b]);
    const rows = (await listJobs(t.pool, { queue: "tabs" })).rows;
    expect(rows.map((r) => [r.state, r.hasError])).toEqual([
      ["scheduled", false],
      ["scheduled", true],
      ["ready", false],
    ]);

    // Queue filter only: from the shared state counts, summed over queues with the prefix.
    const byQueue = await stateTabCounts(t.pool, { queue: "tabs-invoice" });
    expect(byQueue.counts.all).toEqual({ value: 3, estimated: false });
    expect(byQueue.counts.scheduled).toEqual({ value: 2, estimated: false });
    expect(byQueue.counts.ready).toEqual({ value: 1, estimated: false });
    expect(byQueue.counts.retrying).toEqual({ value: 1, estimated: false });
    expect(byQueue.counts.failed).toEqual({ value: 0, estimated: false });
    // Other filters: one exact grouped count (few rows match).
    const byType = await stateTabCounts(t.pool, { queue: "tabs", type: "invoice." });
    expect(byType.counts.all).toEqual({ value: 2, estimated: false });
    expect(byType.counts.scheduled.value).toBe(1);
    expect(byType.counts.retrying.value).toBe(1);
    expect(byType.counts.ready.value).toBe(1);
  });

  test("queue health: depth by state, latency, overdue jobs, lapsed leases, last hour's failure rate", async () => {
    const { queueHealth } = await import("@/lib/console/reads/queues");
    const { invalidateCounts } = await import("@/lib/console/reads/overview");
    const q = t.queue();
    const late = await q.enqueue("qh.job", {}, { queue: "qh" });
    await q.enqueue("qh.job", {}, { queue: "qh" });
    const running = await q.enqueue("qh.job", {}, { queue: "qh" });
    const ok = await q.enqueue("qh.job", {}, { queue: "qh" });
    const bad = await q.enqueue("qh.job", {}, { queue: "qh" });
    await q.enqueue("qh.job", {}, { queue: "qh", runAt: new Date(Date.now() + 600_000) });
    await t.sql("update workhorse.job set run_at = now() - interval '5 minutes' where id = $1", [late]);
    await t.sql(
      `update workhorse.job set state = 'active', attempt = 1, lease_owner = 'w1~1',
              lease_expires_at = now() - interval '40 seconds', started_at = now() - interval '1 minute' where id = $1`,
      [running],
    );
    await t.sql("update workhorse.job set state = 'succeeded', finished_at = now() where id = $1", [ok]);
    await t.sql(
      `update workhorse.job set state = 'failed', finished_at = now(), last_error = '{"name":"Error"}' where id = $1`,
      [bad],
    );
    invalidateCounts(t.pool);
    const { now, queues } = await queueHealth(t.pool, "qh");
    expect(queues).toHaveLength(1);
    const h = queues[0];
    expect(h?.counts).toEqual({ ready: 2, scheduled: 1, active: 1, succeeded: 1, failed: 1 });
    expect(h?.total).toBe(6);
    expect(h?.pending).toEqual({ value: 3, capped: false });
    expect(h?.overdue).toEqual({ value: 1, capped: false });
    expect(Date.parse(now) - Date.parse(h?.oldestDueAt ?? "")).toBeGreaterThanOrEqual(300_000);
    expect(Date.parse(h?.nextRunAt ?? "") - Date.parse(now)).toBeGreaterThan(500_000);
    expect(h?.lapsedLeases).toBe(1);
    expect(h?.lastHour).toEqual({ succeeded: 1, failed: 1 });
    expect(h?.failureRate).toBe(0.5);
    expect(h?.retrying).toBe(0);
    expect(h?.paused).toBeNull();
    // A paused queue is marked in its health row (who paused it, when, why).
    const q2 = t.queue();
    await q2.pauseQueue("qh", { actor: "erin", reason: "db upgrade" });
    const after = (await queueHealth(t.pool, "qh")).queues[0];
    expect(after?.paused).toMatchObject({ pausedBy: "erin", reason: "db upgrade" });
    await q2.resumeQueue("qh", { actor: "erin", reason: "done" });
    await q2.close();
  });

  test("queue health: a due scheduled job is waiting as ready, as /metrics counts it, not as scheduled", async () => {
    const { queueHealth } = await import("@/lib/console/reads/queues");
    const q = t.queue();
    const due = await q.enqueue("qd.job", {}, { queue: "qd", runAt: new Date(Date.now() + 600_000) });
    await q.enqueue("qd.job", {}, { queue: "qd", runAt: new Date(Date.now() + 600_000) });
    await q.enqueue("qd.job", {}, { queue: "qd" });
    // Its run time passed 50 s ago; no worker has claimed it yet, so its state column still says scheduled.
    await t.sql("update workhorse.job set run_at = now() - interval '50 seconds' where id = $1", [due]);
    const h = (await queueHealth(t.pool, "qd")).queues[0];
    expect(h?.waiting).toEqual({ ready: { value: 2, capped: false }, scheduled: { value: 1, capped: false } });
    expect(h?.pending).toEqual({ value: 3, capped: false });
    // The queues page links "2 ready" to the jobs list with due=1: the same two jobs, counted alike.
    const { listJobs, stateTabCounts } = await import("@/lib/console/reads/jobs");
    const { parseJobFilters } = await import("@/lib/console/reads/filters");
    const f = parseJobFilters(new URLSearchParams("queue=qd&due=1"));
    expect(f.due).toBe(true);
    const listed = (await listJobs(t.pool, f)).rows;
    expect(listed.map((r) => r.state).sort()).toEqual(["ready", "scheduled"]);
    expect(listed.map((r) => r.id)).toContain(due);
    const tabs = await stateTabCounts(t.pool, f);
    expect(tabs.counts.all.value).toBe(2);
    expect(tabs.counts.scheduled.value).toBe(1);
  });
});

describe("sign-in return path", () => {
  test("only same-site paths come back; everything else is refused", async () => {
    const { safeReturnPath, signInHref } = await import("@/lib/console/auth/return-to");
    expect(safeReturnPath("/jobs/0193a1b2-0000-7000-8000-000000000001")).toBe(
      "/jobs/0193a1b2-0000-7000-8000-000000000001",
    );
    expect(safeReturnPath("/jobs?queue=billing&state=ready")).toBe("/jobs?queue=billing&state=ready");
    for (const bad of [
      "//evil.example/x",
      "/\\evil.example",
      "https://evil.example/",
      "javascript:alert(1)",
      "jobs",
      "/sign-in?next=/",
      "/api/jobs",
      "/a\u0000b",
      "/a\tb",
      "",
      null,
      42,
    ]) {
      expect(safeReturnPath(bad)).toBeNull();
    }
    // Not a way out, but it decodes to "//evil.example", which some later hop could take for a host.
    expect(safeReturnPath("/%2F%2Fevil.example")).toBeNull();
    expect(signInHref("/jobs?state=ready")).toBe("/sign-in?next=%2Fjobs%3Fstate%3Dready");
    expect(signInHref("/")).toBe("/sign-in");
    expect(signInHref("//evil.example")).toBe("/sign-in");
  });
});

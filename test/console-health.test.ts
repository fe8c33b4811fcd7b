// The console's health read models (lib/console/series.ts, queue health, state tabs) against real
// PostgreSQL, with jobs enqueued and run through lib/enqueue.
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { EnqueueIdempotencyConflictError, Worker } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { series, invalidateSeries, SERIES_MINUTES } = await import("@/lib/console/series");
const { parseSeriesParams } = await import("@/lib/console/filters");

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

describe("per-minute series", () => {
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
    expect(a.totals).toEqual({ accepted: 3, replayed: 1, conflicts: 1, succeeded: 2, failed: 1 });
    // Points are consecutive minutes ending with the current one.
    const times = a.points.map((p) => Date.parse(p.t));
    expect(times.every((x, i) => i === 0 || x - (times[i - 1] as number) === 60_000)).toBe(true);
    expect(Date.parse(a.now) - (times.at(-1) as number)).toBeLessThan(60_000);

    const b = await series(t.pool, "1h", "health-b");
    expect(b.totals).toEqual({ accepted: 1, replayed: 0, conflicts: 0, succeeded: 0, failed: 0 });

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
    const none = { accepted: 0, replayed: 0, conflicts: 0, succeeded: 0, failed: 0 };
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
    const { lookupDigest } = await import("@/lib/console/digest");
    const { keyDigestOf, keyHash } = await import("../lib/enqueue");
    const q = t.queue();
    const key = { key: "digest-order-77", scope: "digest-shop" };
    const id = await q.enqueue("d.capture", { amount: 1 }, { queue: "digest-q", idempotency: key });
    await q.enqueue("d.capture", { amount: 1 }, { queue: "digest-q", idempotency: key });
    await expect(q.enqueue("d.capture", { amount: 2 }, { queue: "digest-q", idempotency: key })).rejects.toThrow();
    await q.enqueue("d.other", {}, { queue: "digest-q", idempotency: { key: "another-key", scope: "digest-shop" } });
    await q.close();
    const digest = keyDigestOf(keyHash(key.scope, key.key));

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
  });
});

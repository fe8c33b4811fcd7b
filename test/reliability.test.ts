// Worker and enqueue defects found by probing as an attacker would: one unstorable result
// must not cost other jobs anything, odd thrown values must still fail their attempt at once, jobs
// due together are claimed in enqueue order, maintenance gives back lapsed leases, and payloads that
// JSON would silently change are refused.
import { beforeAll, describe, expect, test } from "vitest";
import { EnqueueValidationError, summarizeError } from "../lib/enqueue";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const startWorker = workerStarter(t.pool, {
  pollIntervalMs: 25,
  reapIntervalMs: 0,
  leaseMs: 30_000,
  abortGraceMs: 200,
});

async function statesOf(queue: string): Promise<Record<string, number>> {
  const rows = await t.sql<{ state: string; n: string }>(
    "select state, count(*) as n from workhorse.job where queue = $1 group by state order by state",
    [queue],
  );
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

describe("results PostgreSQL cannot store", () => {
  test("half an emoji in one result fails that job alone; the 39 others succeed once each", async () => {
    const q = t.queue();
    const ids = await q.enqueueMany(
      // An hour before the retry: the default 1 s could pass between the reads below on a loaded
      // machine, and the worker would claim the poisoned job again ('active', a second run).
      Array.from({ length: 40 }, (_, i) => ({
        type: "slice",
        payload: { i },
        options: { queue: "poison", retryPolicy: { type: "fixed" as const, delayMs: 3_600_000 } },
      })),
    );
    const poisoned = ids[17] as string;
    const runs = new Map<string, number>();
    // Every handler waits for the others, so all 40 outcomes reach one completion batch together.
    let arrived = 0;
    let release: () => void = () => {};
    const together = new Promise<void>((r) => {
      release = r;
    });
    await startWorker({
      queues: ["poison"],
      concurrency: 40,
      handlers: {
        slice: async (payload: { i: number }, ctx) => {
          runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1);
          if (++arrived === 40) release();
          await together;
          return ctx.jobId === poisoned ? { text: "😀".slice(0, 1) } : { i: payload.i };
        },
      },
    });
    await waitFor("every job to finish", async () => {
      const s = await statesOf("poison");
      return (s.succeeded ?? 0) + (s.failed ?? 0) + (s.scheduled ?? 0) === 40;
    });
    const s = await statesOf("poison");
    expect(s).toEqual({ scheduled: 1, succeeded: 39 });
    const [bad] = await t.sql<{ state: string; last_error: { name: string; message: string } }>(
      "select state, last_error from workhorse.job where id = $1",
      [poisoned],
    );
    expect(bad?.state).toBe("scheduled"); // retried per its policy, not left active
    expect(bad?.last_error.name).toBe("NotStorableError");
    expect(bad?.last_error.message).toMatch(/lone surrogate/);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(runs.size).toBe(40);
  });

  test("results JSON would silently change (a Map, a typed array, an array hole) fail with NotStorableError", async () => {
    const q = t.queue();
    const values: Record<string, unknown> = {
      map: new Map([["a", 1]]),
      typed: { bytes: new Uint8Array([1, 2]) },
      // biome-ignore lint/suspicious/noSparseArray: the hole is the point
      hole: [1, , 3],
    };
    const ids: Record<string, string> = {};
    for (const kind of Object.keys(values)) {
      ids[kind] = await q.enqueue("odd", { kind }, { queue: "odd-results", maxAttempts: 1 });
    }
    await startWorker({
      queues: ["odd-results"],
      handlers: { odd: (p: { kind: string }) => values[p.kind] },
    });
    await waitFor("three failures", async () => (await statesOf("odd-results")).failed === 3);
    const rows = await t.sql<{ id: string; last_error: { name: string; message: string } }>(
      "select id, last_error from workhorse.job where queue = 'odd-results'",
    );
    const byKind = Object.fromEntries(
      Object.entries(ids).map(([k, id]) => [k, rows.find((r) => r.id === id)?.last_error]),
    );
    expect(byKind.map?.name).toBe("NotStorableError");
    expect(byKind.map?.message).toMatch(/a Map would be stored as \{\}/);
    expect(byKind.typed?.message).toMatch(/typed array/);
    expect(byKind.hole?.message).toMatch(/hole at index 1/);
  });
});

describe("odd thrown values", () => {
  class NumberNamed extends Error {}
  const cases: Array<[string, () => unknown, { name: string; message: RegExp }]> = [
    [
      "an Error with a numeric name",
      () => Object.assign(new NumberNamed("boom"), { name: 42 }),
      { name: "42", message: /^boom$/ },
    ],
    [
      "an Error with a non-string message",
      () => Object.assign(new Error("x"), { message: { detail: "nested" } }),
      { name: "Error", message: /nested/ },
    ],
    [
      "an Error whose name getter throws",
      () => {
        const e = new Error("getter");
        Object.defineProperty(e, "name", {
          get() {
            throw new Error("no name for you");
          },
        });
        return e;
      },
      { name: "Error", message: /^getter$/ },
    ],
    [
      "a Proxy whose every trap throws",
      () =>
        new Proxy(
          {},
          {
            get() {
              throw new Error("trap");
            },
            getPrototypeOf() {
              throw new Error("trap");
            },
            ownKeys() {
              throw new Error("trap");
            },
          },
        ),
      { name: "NonError", message: /./ },
    ],
    [
      "an object whose toJSON and toString throw",
      () => ({
        toJSON() {
          throw new Error("no json");
        },
        toString() {
          throw new Error("no string");
        },
      }),
      { name: "NonError", message: /object/ },
    ],
    [
      "an Error whose cause is a Proxy",
      () =>
        new Error("outer", {
          cause: new Proxy(
            {},
            {
              getPrototypeOf() {
                throw new Error("trap");
              },
              get() {
                throw new Error("trap");
              },
            },
          ),
        }),
      { name: "Error", message: /^outer$/ },
    ],
  ];

  test.each(cases)("summarizeError never throws for %s", (_what, make, expected) => {
    const summary = summarizeError(make());
    expect(summary.name).toMatch(new RegExp(`^${expected.name}$`));
    expect(summary.message).toMatch(expected.message);
    expect(() => JSON.stringify(summary)).not.toThrow();
  });

  test("each odd value fails its attempt at once (no lease lapse, no LeaseExpired)", async () => {
    const q = t.queue();
    const ids = await q.enqueueMany(
      cases.map((_c, i) => ({ type: "throw", payload: { i }, options: { queue: "odd-throws", maxAttempts: 1 } })),
    );
    const started = Date.now();
    await startWorker({
      queues: ["odd-throws"],
      concurrency: 3,
      handlers: {
        throw: (p: { i: number }) => {
          throw (cases[p.i] as (typeof cases)[number])[1]();
        },
      },
    });
    await waitFor("every attempt to fail", async () => (await statesOf("odd-throws")).failed === cases.length);
    expect(Date.now() - started).toBeLessThan(10_000); // the lease is 30 s: nothing waited for it
    const rows = await t.sql<{ id: string; last_error: { name: string } }>(
      "select id, last_error from workhorse.job where queue = 'odd-throws'",
    );
    const names = ids.map((id) => rows.find((r) => r.id === id)?.last_error.name);
    expect(names).toEqual(["42", "Error", "Error", "NonError", "NonError", "Error"]);
  });
});

test("jobs due at the same time are claimed in the order they were enqueued, (run_at, id)", async () => {
  const q = t.queue();
  const runAt = new Date(Date.now() - 1000);
  // Keyed batches insert in key-hash order, so the physical order differs from the input order.
  const ids = await q.enqueueMany(
    Array.from({ length: 30 }, (_, i) => ({
      type: "fifo",
      payload: { i },
      options: { queue: "fifo", runAt, idempotency: { key: `fifo-${i}` } },
    })),
  );
  const claimed: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    const rows = await t.sql<{ id: string }>(
      "select id from workhorse.claim_jobs(array['fifo'], null, 'fifo-test', 1, 60000, false)",
    );
    claimed.push(...rows.map((r) => r.id));
  }
  expect(claimed).toEqual(ids);
});

test("runMaintenance gives back lapsed leases when no worker runs the queue", async () => {
  const q = t.queue();
  const [retry, last] = await q.enqueueMany([
    { type: "lapse", payload: 1, options: { queue: "lapsed", maxAttempts: 3 } },
    { type: "lapse", payload: 2, options: { queue: "lapsed", maxAttempts: 1 } },
  ]);
  const claimed = await t.sql(
    "select id from workhorse.claim_jobs(array['lapsed'], null, 'gone-worker~1', 2, 200, false)",
  );
  expect(claimed).toHaveLength(2);
  await new Promise((r) => setTimeout(r, 400));
  const r = await q.runMaintenance();
  expect(r.expiredLeasesReaped).toBe(2);
  const rows = await t.sql<{ id: string; state: string; lease_owner: string | null; last_error: { name: string } }>(
    "select id, state, lease_owner, last_error from workhorse.job where queue = 'lapsed'",
  );
  const byId = Object.fromEntries(rows.map((row) => [row.id, row]));
  expect(byId[retry as string]).toMatchObject({
    state: "ready",
    lease_owner: null,
    last_error: { name: "LeaseExpired" },
  });
  expect(byId[last as string]).toMatchObject({
    state: "failed",
    lease_owner: null,
    last_error: { name: "LeaseExpired" },
  });
  const runs = await t.sql<{ removed: string }>(
    "select removed from workhorse.maintenance_run where task = 'reap_expired_leases' order by started_at desc limit 1",
  );
  expect(runs).toEqual([{ removed: "2" }]);
});

describe("payloads JSON would silently change are refused, nothing written", () => {
  const bad: Array<[string, unknown, RegExp]> = [
    ["a Map", { m: new Map([["k", 1]]) }, /payload: must be plain JSON: a Map would be stored as \{\}/],
    ["a Set", [new Set([1])], /a Set would be stored as \{\}/],
    ["a typed array", { b: new Float64Array(2) }, /typed array/],
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point
    ["an array hole", { a: [1, , 2] }, /hole at index 1/],
    ["undefined in an array", [undefined], /holds undefined at index 0/],
  ];
  test.each(bad)("%s", async (_what, payload, message) => {
    const q = t.queue();
    const before = await t.count("job");
    const single = await q.enqueue("x", payload).catch((e: unknown) => e);
    expect(single).toBeInstanceOf(EnqueueValidationError);
    expect((single as Error).message).toMatch(message);
    const batch = await q
      .enqueueMany([
        { type: "x", payload: {} },
        { type: "x", payload },
      ])
      .catch((e: unknown) => e);
    expect(batch).toBeInstanceOf(EnqueueValidationError);
    expect((batch as EnqueueValidationError).option).toBe("requests[1].payload");
    expect(await t.count("job")).toBe(before);
  });
});

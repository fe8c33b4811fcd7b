// Observations of a caller's transaction (replayed, coalesced, conflict rows of the observation
// log) are recorded only if it commits: a rollback leaves no rows naming jobs that never existed.
import { beforeAll, describe, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError, type QueueOperations } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

let run = 0;
const observed = (scope: string) =>
  t.sql<{ outcome: string; n: number }>(
    "select outcome, sum(count)::int as n from workhorse.enqueue_observation where scope = $1 group by outcome order by outcome",
    [scope],
  );

/** A scope with an idempotency key and a throttle key bound outside any transaction. */
async function seeded() {
  const scope = `tx-observed-${++run}`;
  const idem = { queue: "txo", idempotency: { key: "K", scope } };
  const throttle = { queue: "txo", throttle: { key: "T", scope, windowMs: 60_000 } };
  return { scope, idem, throttle };
}

type Options = Awaited<ReturnType<typeof seeded>>["idem"] | Awaited<ReturnType<typeof seeded>>["throttle"];

/** A batch repeating an idempotency key and a throttle key, then the idempotency key once more. */
async function repeatedWork(tx: QueueOperations, idem: Options, throttle: Options) {
  await tx.enqueueMany([
    { type: "t", payload: { a: 1 }, options: idem },
    { type: "t", payload: { a: 1 }, options: idem },
    { type: "t", payload: { b: 1 }, options: throttle },
    { type: "t", payload: { b: 1 }, options: throttle },
  ]);
  await tx.enqueue("t", { a: 1 }, idem);
}

describe("queue.transaction", () => {
  test("a rolled-back enqueueMany with a repeated key and a repeated throttle key leaves no observations", async () => {
    const q = t.queue();
    const { scope, idem, throttle } = await seeded();
    const boom = new Error("the caller's work failed");
    const err = await q
      .transaction(async (tx) => {
        await repeatedWork(tx, idem, throttle);
        throw boom;
      })
      .catch((e) => e);
    expect(err).toBe(boom);
    await q.flushObservations();
    expect(await observed(scope)).toEqual([]);
    expect(await t.count("job", `queue = 'txo' and key_scope = '${scope}'`)).toBe(0);
  });

  test("the same transaction committed records them once it committed", async () => {
    const q = t.queue();
    const { scope, idem, throttle } = await seeded();
    await q.transaction(async (tx) => {
      await repeatedWork(tx, idem, throttle);
    });
    await q.flushObservations();
    expect(await observed(scope)).toEqual([
      { outcome: "coalesced", n: 1 },
      { outcome: "replayed", n: 2 },
    ]);
  });
});

describe("a conflict that rolls the transaction back", () => {
  test("naming a job outside the transaction: the refusal stands; naming one it created: none", async () => {
    const q = t.queue();
    const { scope, idem } = await seeded();
    await q.enqueue("t", { a: 1 }, idem);
    const outside = await q.transaction((tx) => tx.enqueue("t", { a: 2 }, idem)).catch((e) => e);
    expect(outside).toBeInstanceOf(EnqueueIdempotencyConflictError);
    const inside = await q
      .transaction(async (tx) => {
        const own = { queue: "txo", idempotency: { key: "own", scope } };
        await tx.enqueue("t", { a: 1 }, own);
        await tx.enqueue("t", { a: 2 }, own);
      })
      .catch((e) => e);
    expect(inside).toBeInstanceOf(EnqueueIdempotencyConflictError);
    await q.flushObservations();
    expect(await observed(scope)).toEqual([{ outcome: "conflict", n: 1 }]);
  });
});

describe("withClient", () => {
  test("inside the caller's transaction: rolled back, none; committed, recorded; a conflict aborts it, none", async () => {
    const q = t.queue();
    const client = await t.pool.connect();
    try {
      const view = q.withClient(client);
      for (const end of ["rollback", "commit"] as const) {
        const { scope, idem } = await seeded();
        await client.query("begin");
        await view.enqueue("t", { a: 1 }, idem);
        expect((await view.enqueueWithResult("t", { a: 1 }, idem)).outcome).toBe("replayed");
        await client.query(end);
        await q.flushObservations();
        expect(await observed(scope)).toEqual(end === "commit" ? [{ outcome: "replayed", n: 1 }] : []);
      }
      const { scope, idem } = await seeded();
      await view.enqueue("t", { a: 1 }, idem); // committed on its own
      await client.query("begin");
      const err = await view.enqueue("t", { a: 2 }, idem).catch((e) => e);
      expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
      await client.query("rollback");
      await q.flushObservations();
      expect(await observed(scope)).toEqual([]);
    } finally {
      client.release();
    }
  });

  test("outside a transaction every statement commits on its own: its observations are recorded", async () => {
    const q = t.queue();
    const client = await t.pool.connect();
    try {
      const view = q.withClient(client);
      const { scope, idem } = await seeded();
      await view.enqueue("t", { a: 1 }, idem);
      await view.enqueue("t", { a: 1 }, idem);
      expect(await view.enqueue("t", { a: 2 }, idem).catch((e) => e)).toBeInstanceOf(EnqueueIdempotencyConflictError);
      await q.flushObservations();
      expect(await observed(scope)).toEqual([
        { outcome: "conflict", n: 1 },
        { outcome: "replayed", n: 1 },
      ]);
    } finally {
      client.release();
    }
  });
});

// Field cases: failures that users of other job queues reported publicly, restated as small
// scenarios against our API. Each names a kind of fault (the describe() titles); each is kept with
// its exact expected values and run through every enqueue path that could show the same kind of
// fault (single call, batch, caller transaction). docs/decisions.md records why each rule exists.
import { beforeAll, describe, expect, test } from "vitest";
import {
  EnqueueIdempotencyConflictError,
  type EnqueueOptions,
  type EnqueueResult,
  type Queue,
  type QueueOperations,
} from "../lib/enqueue";
import { distributedTests } from "./citus";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests({ max: 30 });
beforeAll(() => t.ready());

let n = 0;
const unique = (p: string) => `${p}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

/** One keyed call through a chosen path: single, batch of one, or inside a caller transaction. */
type Path = "single" | "batch" | "transaction";
const PATHS: Path[] = ["single", "batch", "transaction"];

async function via(
  path: Path,
  q: Queue,
  type: string,
  payload: unknown,
  options: EnqueueOptions,
): Promise<EnqueueResult> {
  if (path === "single") return q.enqueueWithResult(type, payload, options);
  if (path === "batch") return (await q.enqueueManyWithResults([{ type, payload, options }]))[0]!;
  const client = await t.pool.connect();
  try {
    await client.query("begin");
    const r = await q.withClient(client).enqueueWithResult(type, payload, options);
    await client.query("commit");
    return r;
  } catch (err) {
    await client.query("rollback");
    throw err;
  } finally {
    client.release();
  }
}

async function jobsInScope(scope: string): Promise<number> {
  const [row] = await t.sql<{ n: string }>(
    `select count(*) as n from workhorse.job_timeline where kind = 'enqueued' and data->>'scope' = $1`,
    [scope],
  );
  return Number(row!.n);
}

describe("C01: a keyed call returns nothing under contention", () => {
  test.each(PATHS)("4 producers x 100 calls over 10 keys (%s): 400 ids, 10 jobs, one id per key", async (path) => {
    const q = t.queue();
    const scope = unique("c01");
    const keys = Array.from({ length: 10 }, (_, i) => `order-${i}`);
    const seen = new Map<string, Set<string>>();
    const results: string[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 100; i++) {
          const key = keys[Math.floor(Math.random() * keys.length)]!;
          const r = await via(path, q, "order.place", { key }, { idempotency: { key, scope } });
          results.push(r.jobId);
          if (!seen.has(key)) seen.set(key, new Set());
          seen.get(key)!.add(r.jobId);
        }
      }),
    );
    expect(results).toHaveLength(400);
    expect(results.every((id) => typeof id === "string" && id.length === 36)).toBe(true);
    for (const ids of seen.values()) expect(ids.size).toBe(1);
    expect(await jobsInScope(scope)).toBe(seen.size);
    expect(seen.size).toBeLessThanOrEqual(10);
    // Every key that was drawn maps to the job its binding names.
    for (const [key, ids] of seen) {
      expect((await q.findBinding({ key, scope }))!.jobId).toBe([...ids][0]);
    }
  });

  test("64 concurrent callers on one key get one job and 64 equal ids", async () => {
    const q = t.queue();
    const scope = unique("c01-64");
    const results = await Promise.all(
      Array.from({ length: 64 }, () =>
        q.enqueueWithResult("order.place", { o: 1 }, { idempotency: { key: "order-1", scope } }),
      ),
    );
    expect(new Set(results.map((r) => r.jobId)).size).toBe(1);
    expect(results.filter((r) => r.outcome === "accepted")).toHaveLength(1);
    expect(results.filter((r) => r.outcome === "replayed")).toHaveLength(63);
    expect(await jobsInScope(scope)).toBe(1);
  });

  test("200 iterations of two batches with the same 20 keys in opposite orders never deadlock", async () => {
    const q = t.queue();
    const scope = unique("c01-dl");
    for (let i = 0; i < 200; i++) {
      const keys = Array.from({ length: 20 }, (_, j) => `k${i}-${j}`);
      const batch = (ks: string[]) =>
        ks.map((key) => ({ type: "t", payload: { key }, options: { idempotency: { key, scope } } }));
      const [a, b] = await Promise.all([q.enqueueMany(batch(keys)), q.enqueueMany(batch([...keys].reverse()))]);
      expect(a).toEqual([...b].reverse());
    }
    expect(await jobsInScope(scope)).toBe(4000);
  });
});

describe("C02: a second insert path skips the key check", () => {
  test.each([false, true])("enqueueMany after enqueue (in a caller transaction: %s)", async (inTx) => {
    const q = t.queue();
    const scope = unique("c02");
    const req = (key: string) => ({ type: "t", payload: { key }, options: { idempotency: { key, scope } } });
    const ids = [];
    for (const key of ["k1", "k2", "k3"]) ids.push(await q.enqueue("t", { key }, { idempotency: { key, scope } }));
    const batch = ["k1", "k2", "k4", "k4", "k5"].map(req);
    let results: EnqueueResult[];
    if (inTx) {
      const client = await t.pool.connect();
      await client.query("begin");
      results = await q.withClient(client).enqueueManyWithResults(batch);
      await client.query("commit");
      client.release();
    } else {
      results = await q.enqueueManyWithResults(batch);
    }
    const [x, y] = [results[2]!.jobId, results[4]!.jobId];
    expect(results.map((r) => r.jobId)).toEqual([ids[0], ids[1], x, x, y]);
    expect(results.map((r) => r.outcome)).toEqual(["replayed", "replayed", "accepted", "replayed", "accepted"]);
    expect(new Set([...ids, x, y]).size).toBe(5);
    expect(await jobsInScope(scope)).toBe(5);
    // And the plain enqueueMany returns the same ids.
    expect(await q.enqueueMany(batch)).toEqual([ids[0], ids[1], x, x, y]);
  });
});

describe("C03: the first producer rolls back and the key is lost", () => {
  async function openTransactions(count: number) {
    return Promise.all(
      Array.from({ length: count }, async () => {
        const c = await t.pool.connect();
        await c.query("begin");
        return c;
      }),
    );
  }

  /** Resolves once `count` backends of this database wait on a lock (the key held by another transaction). */
  async function waitForLockWaiters(count: number) {
    for (let i = 0; i < 500; i++) {
      const [row] = await t.sql<{ n: string }>(
        // On Citus the waits happen on the worker holding the key: the cluster-wide view shows them.
        `select count(*) as n from ${distributedTests() ? "citus_stat_activity" : "pg_stat_activity"}
          where datname = current_database() and wait_event_type = 'Lock'`,
      );
      if (Number(row!.n) >= count) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`expected ${count} transactions waiting on the key`);
  }

  test.each(["single", "batch"] as const)(
    "5 transactions in a chain, 1-4 roll back in order, 5 commits (%s)",
    async (path) => {
      const q = t.queue();
      const scope = unique("c03");
      const opts = { idempotency: { key: "capture:INV-42", scope } };
      const call = (ops: QueueOperations) =>
        path === "single"
          ? ops.enqueueWithResult("invoice.capture", { inv: 42 }, opts)
          : ops
              .enqueueManyWithResults([{ type: "invoice.capture", payload: { inv: 42 }, options: opts }])
              .then((r) => r[0]!);
      const txs = await openTransactions(5);
      const returned: EnqueueResult[] = [await call(q.withClient(txs[0]!))];
      for (let i = 1; i < 5; i++) {
        // Transaction i+1 calls while transaction i holds the key, waits on it, then gets it on rollback.
        const next = call(q.withClient(txs[i]!));
        await waitForLockWaiters(1);
        await txs[i - 1]!.query("rollback");
        returned.push(await next);
      }
      await txs[4]!.query("commit");
      for (const c of txs) c.release();
      expect(returned.map((r) => r.outcome)).toEqual(["accepted", "accepted", "accepted", "accepted", "accepted"]);
      expect(new Set(returned.map((r) => r.jobId)).size).toBe(5);
      expect(await jobsInScope(scope)).toBe(1);
      expect((await q.findBinding(opts.idempotency))!.jobId).toBe(returned[4]!.jobId);
      expect(await q.enqueueWithResult("invoice.capture", { inv: 42 }, opts)).toMatchObject({
        jobId: returned[4]!.jobId,
        outcome: "replayed",
      });
    },
  );

  test("4 transactions wait on the first at once; each rolls back as it gets the key, the last commits", async () => {
    const q = t.queue();
    const scope = unique("c03-pile");
    const opts = { idempotency: { key: "capture:INV-42", scope } };
    const txs = await openTransactions(5);
    const first = await q.withClient(txs[0]!).enqueueWithResult("invoice.capture", { inv: 42 }, opts);
    const waiting = new Map(
      txs.slice(1).map((c, i) => [i + 1, q.withClient(c).enqueueWithResult("invoice.capture", { inv: 42 }, opts)]),
    );
    await waitForLockWaiters(4);
    await txs[0]!.query("rollback");
    const order: EnqueueResult[] = [first];
    while (waiting.size > 0) {
      const [i, r] = await Promise.race([...waiting].map(([i, p]) => p.then((r) => [i, r] as const)));
      waiting.delete(i);
      order.push(r);
      await txs[i]!.query(waiting.size > 0 ? "rollback" : "commit");
    }
    for (const c of txs) c.release();
    expect(order.map((r) => r.outcome)).toEqual(["accepted", "accepted", "accepted", "accepted", "accepted"]);
    expect(await jobsInScope(scope)).toBe(1);
    const committed = order[4]!.jobId;
    expect(await q.enqueueWithResult("invoice.capture", { inv: 42 }, opts)).toMatchObject({
      jobId: committed,
      outcome: "replayed",
    });
  });
});

describe("C04: a job releases a key it no longer owns", () => {
  test.each(["purge", "purgeQueue"] as const)(
    "after expiry and re-use, %s of the old job releases nothing",
    async (how) => {
      const q = t.queue();
      const scope = unique("c04");
      const queue = unique("c04q");
      const key = "K";
      const x = await q.enqueue("t", { v: "x" }, { queue, idempotency: { key, scope, ttlMs: 1000 } });
      await new Promise((r) => setTimeout(r, 1100));
      // The re-use binds the key for long enough that a slow machine cannot let it expire before the
      // last call (which must replay it).
      const y = await q.enqueueWithResult(
        "t",
        { v: "y" },
        { queue: `${queue}-y`, idempotency: { key, scope, ttlMs: 600_000 } },
      );
      expect(y.outcome).toBe("accepted");
      expect((await q.getJob(x))!.state).toBe("ready");
      const ctx = { actor: "ops", reason: "c04" };
      const r = how === "purge" ? await q.purge({ jobId: x }, ctx) : await q.purgeQueue(queue, ctx);
      expect(r).toEqual({ purged: 1, releasedBindings: 0 });
      expect(
        await q.enqueueWithResult(
          "t",
          { v: "y" },
          { queue: `${queue}-y`, idempotency: { key, scope, ttlMs: 600_000 } },
        ),
      ).toMatchObject({
        jobId: y.jobId,
        outcome: "replayed",
      });
    },
  );
});

describe("C05: a duplicate call answers with the new call's data, or starts over after the first job finished", () => {
  test.each(PATHS)("replay after the job succeeded returns it; a different payload conflicts (%s)", async (path) => {
    const q = t.queue();
    const scope = unique("c05");
    const opts = { idempotency: { key: "K", scope } };
    const x = await q.enqueue("order.place", { total: 10 }, opts);
    await t.sql("update workhorse.job set state = 'succeeded', finished_at = now() where id = $1", [x]);
    const jobs = await t.count("job");
    expect(await via(path, q, "order.place", { total: 10 }, opts)).toMatchObject({ jobId: x, outcome: "replayed" });
    expect(await t.count("job")).toBe(jobs);
    const err = await via(path, q, "order.place", { total: 11 }, opts).catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect((err as EnqueueIdempotencyConflictError).existingJobId).toBe(x);
    expect((err as EnqueueIdempotencyConflictError).conflictingFields).toEqual(["payload"]);
    expect(await t.count("job")).toBe(jobs);
  });
});

// close() (docs/enqueue.md "Closing a queue"): every call made before close() completes, whatever it
// is waiting on (the installation key's first read, its statement's turn, a pool connection, a
// transaction still running its callback), and close() resolves only after them; every call made
// after close() rejects with QueueClosedError and writes nothing. Each test makes a new Queue, so
// the installation key is not loaded yet when its calls start.
import pg from "pg";
import { beforeAll, describe, expect, test } from "vitest";
import { Queue, QueueClosedError, type QueueOperations } from "../lib/enqueue";
import { setupQueueTests, waitFor } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

let n = 0;
const fresh = (p: string) => `${p}-${++n}-${Date.now()}`;
const ctx = { actor: "test", reason: "closing" };

function newQueue(options: Partial<ConstructorParameters<typeof Queue>[0]> = {}): Queue {
  return new Queue({ pool: t.pool, maintenance: false, ...options });
}

/** Every settled result's status, and the reasons of the rejected ones. */
function statuses(settled: PromiseSettledResult<unknown>[]): string[] {
  return settled.map((s) => (s.status === "fulfilled" ? "fulfilled" : `rejected: ${(s.reason as Error)?.name}`));
}

describe("calls made before close() complete", () => {
  test.each([
    { name: "coalescing", coalesce: undefined },
    { name: "coalesce: false", coalesce: false as const },
  ])(
    "keyed calls made while the installation key is still loading, then close() at once ($name)",
    async ({ coalesce }) => {
      const q = newQueue(coalesce === false ? { coalesce } : {});
      const scope = fresh("loading");
      const calls = [1, 2, 3].map((i) =>
        q.enqueueWithResult("order.place", { i }, { idempotency: { key: `k${i}`, scope } }),
      );
      const keyless = q.enqueueWithResult("order.place", { i: 0 }, {});
      const closing = q.close();
      const settled = await Promise.allSettled([...calls, keyless]);
      await closing;
      expect(statuses(settled)).toEqual(["fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
      expect(settled.map((s) => (s as PromiseFulfilledResult<{ outcome: string }>).value.outcome)).toEqual([
        "accepted",
        "accepted",
        "accepted",
        "accepted",
      ]);
      expect(await t.count("job", `key_scope = '${scope}'`)).toBe(3);
    },
  );

  test("every method that reads the installation key first (enqueueMany, findBinding, findBindingInScopes, describeKey, redrive, withClient), getJob, flushObservations", async () => {
    const q = newQueue();
    const scope = fresh("methods");
    const client = await t.pool.connect();
    try {
      const made = [
        q.enqueueMany([
          { type: "t", payload: { m: 1 }, options: { idempotency: { key: "m1", scope } } },
          { type: "t", payload: { m: 2 }, options: { idempotency: { key: "m2", scope } } },
        ]),
        q.findBinding({ key: "m1", scope }),
        q.findBindingInScopes({ key: "m1", scopes: [scope] }),
        q.describeKey({ key: "m1", scope }),
        q.redrive({
          jobIds: ["00000000-0000-7000-8000-000000000000"],
          requestId: "r1",
          requestedBy: "bob",
          reason: "close",
        }),
        q.withClient(client).enqueue("t", { m: 3 }, { idempotency: { key: "m3", scope } }),
        q.getJob("00000000-0000-7000-8000-000000000000"),
        q.flushObservations(),
      ];
      const closing = q.close();
      const settled = await Promise.allSettled(made);
      await closing;
      expect(statuses(settled)).toEqual(Array(made.length).fill("fulfilled"));
      expect((settled[4] as PromiseFulfilledResult<{ results: { status: string }[] }>).value.results[0]?.status).toBe(
        "not_found",
      );
      expect(await t.count("job", `key_scope = '${scope}'`)).toBe(3);
    } finally {
      client.release();
    }
  });

  test("operations of several statements: runMaintenance, pruneExpiredBindings over several batches", async () => {
    const q = newQueue();
    // Expired bindings for three batches of 1.
    const scope = fresh("expired");
    for (const i of [1, 2, 3]) {
      await q.enqueue("t", { i }, { idempotency: { key: `e${i}`, scope, ttlMs: 1 } });
    }
    await t.sql("update workhorse.key_binding set expires_at = now() - interval '1 minute' where scope = $1", [scope]);
    const made = [q.runMaintenance({ trigger: "manual" }), q.pruneExpiredBindings({ limit: 1 })];
    const closing = q.close();
    const settled = await Promise.allSettled(made);
    await closing;
    expect(statuses(settled)).toEqual(["fulfilled", "fulfilled"]);
    expect(await t.count("key_binding", `scope = '${scope}'`)).toBe(0);
  });

  test("a call waiting for a pool connection", async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    const q = new Queue({ pool, maintenance: false });
    const scope = fresh("pool");
    const busy = await pool.connect();
    let released = false;
    try {
      const call = q.enqueue("t", {}, { idempotency: { key: "p", scope } });
      let closed = false;
      const closing = q.close().then(() => {
        closed = true;
      });
      await waitFor("the call to wait for the pool", async () => pool.waitingCount > 0);
      const closedEarly = closed;
      busy.release();
      released = true;
      const jobId = await call;
      expect(closedEarly).toBe(false);
      await closing;
      expect(await t.count("job", `id = '${jobId}' and key_scope = '${scope}'`)).toBe(1);
    } finally {
      if (!released) busy.release();
      await pool.end();
    }
  });

  test("a transaction made before close() commits, and close() waits for it", async () => {
    const q = newQueue();
    const scope = fresh("tx");
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let entered = false;
    const tx = q.transaction(async (ops: QueueOperations) => {
      entered = true;
      await gate;
      return ops.enqueue("t", {}, { idempotency: { key: "tx", scope } });
    });
    await waitFor("the transaction to start", async () => entered);
    let closed = false;
    const closing = q.close().then(() => {
      closed = true;
    });
    await new Promise((r) => setImmediate(r));
    const closedEarly = closed;
    release();
    const jobId = await tx;
    expect(closedEarly).toBe(false);
    await closing;
    expect(closed).toBe(true);
    expect(await t.count("job", `id = '${jobId}' and key_scope = '${scope}'`)).toBe(1);
  });
});

describe("the maintenance timer's run is no caller's call", () => {
  test("close() waits for the statement it is in, and the run stops there", async () => {
    const q = newQueue({ maintenance: { intervalMs: 1000 } });
    const [{ n: runsBefore } = { n: "0" }] = await t.sql<{ n: string }>(
      "select count(*) as n from workhorse.maintenance_run",
    );
    // The run's first statement (expired bindings) waits for a lock this transaction holds.
    const holder = await t.pool.connect();
    try {
      await holder.query("begin");
      await holder.query("lock table workhorse.key_binding in access exclusive mode");
      const pid = (await holder.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid;
      await waitFor("the timer's run to wait for the lock", async () => {
        const [row] = await t.sql<{ n: string }>(
          "select count(*) as n from pg_stat_activity where $1::int = any(pg_blocking_pids(pid))",
          [pid],
        );
        return Number(row?.n) > 0;
      });
      let closed = false;
      const closing = q.close().then(() => {
        closed = true;
      });
      await new Promise((r) => setImmediate(r));
      const closedEarly = closed;
      await holder.query("commit");
      await closing;
      expect(closedEarly).toBe(false);
    } finally {
      await holder.query("rollback").catch(() => {});
      holder.release();
    }
    // The run recorded nothing: its later statements were refused.
    const [{ n: runsAfter } = { n: "0" }] = await t.sql<{ n: string }>(
      "select count(*) as n from workhorse.maintenance_run",
    );
    expect(runsAfter).toBe(runsBefore);
  });
});

describe("calls made after close() reject with QueueClosedError and write nothing", () => {
  test("every method", async () => {
    const q = newQueue();
    const scope = fresh("after");
    await q.close();
    const client = await t.pool.connect();
    try {
      const job = "00000000-0000-7000-8000-000000000000";
      const made: Array<() => Promise<unknown>> = [
        () => q.enqueue("t", {}, { idempotency: { key: "a", scope } }),
        () => q.enqueue("t", {}, {}),
        () => q.enqueueMany([{ type: "t", payload: {}, options: { idempotency: { key: "b", scope } } }]),
        () => q.withClient(client).enqueue("t", {}, { idempotency: { key: "c", scope } }),
        () => q.transaction(async (tx) => tx.enqueue("t", {}, {})),
        () => q.findBinding({ key: "a", scope }),
        () => q.describeKey({ key: "a", scope }),
        () => q.getJob(job),
        () => q.purge({ jobId: job }, ctx),
        () => q.cancel({ jobIds: [job] }, ctx),
        () => q.runNow({ jobIds: [job] }, ctx),
        () => q.redrive({ jobIds: [job], requestId: "r", requestedBy: "bob", reason: "x" }),
        () => q.pauseQueue(scope, ctx),
        () => q.listDeadLetters(),
        () => q.runMaintenance(),
        () => q.pruneExpiredBindings(),
        () => q.flushObservations(),
      ];
      const settled = await Promise.allSettled(made.map((m) => m()));
      expect(statuses(settled)).toEqual(Array(made.length).fill("rejected: QueueClosedError"));
      for (const s of settled) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(QueueClosedError);
      expect(await t.count("job", `key_scope = '${scope}'`)).toBe(0);
      expect(await t.count("queue_pause", `queue = '${scope}'`)).toBe(0);
    } finally {
      client.release();
    }
  });
});

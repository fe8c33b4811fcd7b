// Key lifetimes (docs/enqueue.md, "Key lifetimes"): a key held until its job finishes or starts,
// released by the SQL that changes the job (the same for every worker), exactly one answer for a
// request racing the release, and a redrive that binds a released key again when it is free.
import { createHash, randomUUID } from "node:crypto";
import { beforeAll, describe, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError, type EnqueueOptions, EnqueueValidationError } from "../lib/enqueue";
import { bindingListRows } from "../lib/store/console/lists";
import { bucketedId, keyBucket } from "../lib/store/ids";
import { distributedTests } from "./citus";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

const t = setupQueueTests({ max: 45 });
beforeAll(() => t.ready());

let n = 0;
/** A fresh key and queue per test, so tests never share a binding or claim each other's jobs. */
const fresh = (p = "k") => `${p}-${++n}-${process.pid}`;
const ctx = { actor: "test", reason: "test" };

const POLICY = '{"initialDelayMs":0,"multiplier":1,"maxDelayMs":0}';

/** Claims the ready jobs of `queue` as worker `owner` (workhorse.claim_jobs, what every client calls). */
async function claim(queue: string, owner = "w~1", leaseMs = 60_000): Promise<Array<{ id: string; attempt: number }>> {
  return t.sql("select id, attempt from workhorse.claim_jobs(array[$1], null, $2, 10, $3, false)", [
    queue,
    owner,
    leaseMs,
  ]);
}
async function complete(id: string, attempt = 1, owner = "w~1"): Promise<number> {
  const rows = await t.sql(
    "select id from workhorse.complete_jobs(array[$1::uuid], array[$2::integer], array[$3], array['null'::jsonb])",
    [id, attempt, owner],
  );
  return rows.length;
}
async function fail(id: string, attempt = 1, owner = "w~1"): Promise<string> {
  const [row] = await t.sql<{ state: string }>(
    `select state from workhorse.fail_job($1, $2, $3, '{"name":"Error","message":"boom"}', 'error', $4)`,
    [id, attempt, owner, POLICY],
  );
  return row?.state as string;
}
async function stateOf(id: string): Promise<string> {
  const [row] = await t.sql<{ state: string }>("select state from workhorse.job where id = $1", [id]);
  return row?.state as string;
}
async function releases(id: string): Promise<Array<Record<string, unknown>>> {
  const rows = await t.sql<{ data: Record<string, unknown> }>(
    "select data from workhorse.job_event where job_id = $1 and kind = 'key_released' order by seq",
    [id],
  );
  return rows.map((r) => r.data);
}
/** Jobs of one key that are not terminal (pending or running). */
async function liveJobsOfKey(scope: string, jobId: string): Promise<string[]> {
  const rows = await t.sql<{ id: string }>(
    `select j.id from workhorse.job j
      where j.key_scope = $1 and j.key_hash = (select key_hash from workhorse.job where id = $2)
        and j.state in ('scheduled', 'ready', 'active') order by j.id`,
    [scope, jobId],
  );
  return rows.map((r) => r.id);
}

function idem(key: string, more: Partial<NonNullable<EnqueueOptions["idempotency"]>> = {}) {
  return { key, scope: "lifetimes", ...more };
}

describe("holdUntil: finished", () => {
  test("replays while pending and while running; a new job once it has finished", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const key = fresh();
    const options = { queue, idempotency: idem(key, { holdUntil: "finished" as const }) };
    const first = await q.enqueueWithResult("report.nightly", { day: 1 }, options);
    expect(first.outcome).toBe("accepted");
    expect(await q.enqueueWithResult("report.nightly", { day: 1 }, options)).toMatchObject({
      jobId: first.jobId,
      outcome: "replayed",
    });
    const binding = await q.findBinding(options.idempotency);
    expect(binding).toMatchObject({ jobId: first.jobId, holdUntil: "finished", ttlMs: null, expiresAt: null });
    expect(binding?.expired).toBe(false);

    expect(await claim(queue)).toEqual([{ id: first.jobId, attempt: 1 }]);
    expect(await q.enqueueWithResult("report.nightly", { day: 1 }, options)).toMatchObject({
      jobId: first.jobId,
      outcome: "replayed",
    });
    expect(await releases(first.jobId)).toEqual([]);

    expect(await complete(first.jobId)).toBe(1);
    expect(await releases(first.jobId)).toEqual([{ holdUntil: "finished", reason: "succeeded" }]);
    expect(await q.findBinding(options.idempotency)).toBeNull();
    const next = await q.enqueueWithResult("report.nightly", { day: 1 }, options);
    expect(next.outcome).toBe("accepted");
    expect(next.jobId).not.toBe(first.jobId);
    expect(await q.enqueueWithResult("report.nightly", { day: 1 }, options)).toMatchObject({
      jobId: next.jobId,
      outcome: "replayed",
    });
  });

  test("a failed attempt that will retry keeps the key; the dead letter releases it", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const options = { queue, maxAttempts: 2, idempotency: idem(fresh(), { holdUntil: "finished" as const }) };
    const { jobId } = await q.enqueueWithResult("t", {}, options);
    await claim(queue);
    expect(await fail(jobId, 1)).toBe("ready");
    expect(await releases(jobId)).toEqual([]);
    expect(await q.enqueueWithResult("t", {}, options)).toMatchObject({ jobId, outcome: "replayed" });

    expect(await claim(queue)).toEqual([{ id: jobId, attempt: 2 }]);
    expect(await fail(jobId, 2)).toBe("failed");
    expect(await releases(jobId)).toEqual([{ holdUntil: "finished", reason: "failed" }]);
    const next = await q.enqueueWithResult("t", {}, options);
    expect(next.outcome).toBe("accepted");
    expect(next.jobId).not.toBe(jobId);
  });

  test("cancel of a pending job, cancel of a running one and purge release the key", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const o = (key: string) => ({ queue, idempotency: idem(key, { holdUntil: "finished" as const }) });

    const pendingKey = fresh();
    const pending = await q.enqueue("t", {}, o(pendingKey));
    await q.cancel({ jobIds: [pending] }, ctx);
    expect(await stateOf(pending)).toBe("canceled");
    expect(await releases(pending)).toEqual([{ holdUntil: "finished", reason: "canceled" }]);
    expect((await q.enqueueWithResult("t", {}, o(pendingKey))).outcome).toBe("accepted");

    const runningKey = fresh();
    const running = await q.enqueue("t", {}, o(runningKey));
    const [claimed] = await claim(fresh("other")); // nothing of this queue
    expect(claimed).toBeUndefined();
    await claim(queue, "w~2");
    expect(await q.cancel({ jobIds: [running] }, ctx)).toMatchObject({ canceled: 0, cancelRequested: 1 });
    expect(await q.enqueueWithResult("t", {}, o(runningKey))).toMatchObject({ jobId: running, outcome: "replayed" });
    await t.sql("select * from workhorse.cancel_attempt($1, 1, 'w~2')", [running]);
    expect(await releases(running)).toEqual([{ holdUntil: "finished", reason: "canceled" }]);
    expect((await q.enqueueWithResult("t", {}, o(runningKey))).outcome).toBe("accepted");

    const purgedKey = fresh();
    const purged = await q.enqueue("t", {}, { ...o(purgedKey), runAt: new Date(Date.now() + 3_600_000) });
    expect(await q.purge({ jobId: purged }, ctx)).toEqual({ purged: 1, releasedBindings: 1 });
    expect(await releases(purged)).toEqual([{ holdUntil: "finished", reason: "purged" }]);
    expect((await q.enqueueWithResult("t", {}, o(purgedKey))).outcome).toBe("accepted");
  });

  test("a worker giving back a job whose cancel was requested ends it, and releases the key; a plain give-back keeps it", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const o = (key: string) => ({ queue, idempotency: idem(key, { holdUntil: "finished" as const }) });
    const canceledKey = fresh();
    const canceled = await q.enqueue("t", {}, o(canceledKey));
    const keptKey = fresh();
    const kept = await q.enqueue("t", {}, o(keptKey));
    expect((await claim(queue, "w~3")).map((c) => c.id).sort()).toEqual([canceled, kept].sort());
    expect(await q.cancel({ jobIds: [canceled] }, ctx)).toMatchObject({ cancelRequested: 1 });
    const given = await t.sql<{ id: string }>(
      "select id from workhorse.release_jobs(array[$1::uuid, $2::uuid], array[1, 1], array['w~3', 'w~3'], 'shutdown')",
      [canceled, kept],
    );
    expect(given.map((r) => r.id).sort()).toEqual([canceled, kept].sort());
    expect([await stateOf(canceled), await stateOf(kept)]).toEqual(["canceled", "ready"]);
    expect(await releases(canceled)).toEqual([{ holdUntil: "finished", reason: "canceled" }]);
    expect(await releases(kept)).toEqual([]);
    expect((await q.enqueueWithResult("t", {}, o(canceledKey))).outcome).toBe("accepted");
    expect(await q.enqueueWithResult("t", {}, o(keptKey))).toMatchObject({ jobId: kept, outcome: "replayed" });
  });

  test("a lapsed lease keeps the key until the job really finishes", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const options = { queue, idempotency: idem(fresh(), { holdUntil: "finished" as const }) };
    const { jobId } = await q.enqueueWithResult("t", {}, options);
    await claim(queue, "gone~1", 1);
    await new Promise((r) => setTimeout(r, 20));
    const [reaped] = await t.sql<{ n: number }>("select workhorse.reap_expired_leases(array[$1], 10) as n", [queue]);
    expect(reaped?.n).toBe(1);
    expect(await stateOf(jobId)).toBe("ready");
    expect(await releases(jobId)).toEqual([]);
    expect(await q.enqueueWithResult("t", {}, options)).toMatchObject({ jobId, outcome: "replayed" });

    expect(await claim(queue, "w~2")).toEqual([{ id: jobId, attempt: 2 }]);
    expect(await q.enqueueWithResult("t", {}, options)).toMatchObject({ jobId, outcome: "replayed" });
    expect(await complete(jobId, 2, "w~2")).toBe(1);
    expect((await q.enqueueWithResult("t", {}, options)).outcome).toBe("accepted");
  });

  test("a real worker: the key is held while the handler runs and free once it returns", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const options = { queue, idempotency: idem(fresh(), { holdUntil: "finished" as const }) };
    const startWorker = workerStarter(t.pool, { pollIntervalMs: 20, reapIntervalMs: 0 });
    let finish!: () => void;
    const running = new Promise<void>((r) => {
      finish = r;
    });
    let started = false;
    await startWorker({
      queues: [queue],
      handlers: {
        "index.rebuild": async () => {
          started = true;
          await running;
        },
      },
    });
    const { jobId } = await q.enqueueWithResult("index.rebuild", {}, options);
    await waitFor("the handler to start", async () => started);
    expect(await q.enqueueWithResult("index.rebuild", {}, options)).toMatchObject({ jobId, outcome: "replayed" });
    finish();
    await waitFor("the job to succeed", async () => (await stateOf(jobId)) === "succeeded");
    expect(await releases(jobId)).toEqual([{ holdUntil: "finished", reason: "succeeded" }]);
    expect((await q.enqueueWithResult("index.rebuild", {}, options)).outcome).toBe("accepted");
  });

  test("16 requests racing the release: each replays or is accepted, never two live jobs", async () => {
    const q = t.queue();
    for (let round = 0; round < 3; round++) {
      const queue = fresh("q");
      const options = { queue, idempotency: idem(fresh(), { holdUntil: "finished" as const }) };
      const { jobId } = await q.enqueueWithResult("t", { round }, options);
      await claim(queue);
      const racers = Array.from({ length: 16 }, () => q.enqueueWithResult("t", { round }, options));
      const [finished, ...results] = await Promise.all([complete(jobId), ...racers]);
      expect(finished).toBe(1);
      const accepted = results.filter((r) => r.outcome === "accepted");
      const replayedOld = results.filter((r) => r.outcome === "replayed" && r.jobId === jobId);
      expect(accepted.length).toBeLessThanOrEqual(1);
      // Every answer names the old job or the one new job; those after the new one replay it.
      const newId = accepted[0]?.jobId;
      for (const r of results) {
        expect(r.jobId).toBeTruthy();
        expect([jobId, newId]).toContain(r.jobId);
      }
      expect(replayedOld.length + results.filter((r) => r.jobId === newId).length).toBe(16);
      const live = await liveJobsOfKey("lifetimes", jobId);
      expect(live.length).toBeLessThanOrEqual(1);
      if (newId) expect(live).toEqual([newId]);
      // Once the release has committed, the key is free or held by the new job, never the old one.
      const after = await q.enqueueWithResult("t", { round }, options);
      expect(after.jobId).not.toBe(jobId);
    }
  });

  test("with ttlMs the key is also released when it expires", async () => {
    const q = t.queue();
    const options = {
      queue: fresh("q"),
      idempotency: idem(fresh(), { holdUntil: "finished" as const, ttlMs: 60_000 }),
    };
    const { jobId } = await q.enqueueWithResult("t", {}, options);
    const binding = await q.findBinding(options.idempotency);
    expect(binding).toMatchObject({ holdUntil: "finished", ttlMs: 60_000 });
    expect(binding!.expiresAt!.getTime() - binding!.createdAt.getTime()).toBe(60_000);
    await t.sql(
      "update workhorse.key_binding set expires_at = now() - interval '1 ms' where job_id = $1 and scope = 'lifetimes'",
      [jobId],
    );
    const next = await q.enqueueWithResult("t", {}, options);
    expect(next.outcome).toBe("accepted");
    expect(next.jobId).not.toBe(jobId);
  });
});

describe("holdUntil: started", () => {
  test("replays while pending; once a worker claims the job, one new job, which later requests replay", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const options = { queue, idempotency: idem(fresh(), { holdUntil: "started" as const }) };
    const first = await q.enqueueWithResult("index.rebuild", {}, options);
    expect(await q.enqueueWithResult("index.rebuild", {}, options)).toMatchObject({
      jobId: first.jobId,
      outcome: "replayed",
    });
    expect(await claim(queue)).toEqual([{ id: first.jobId, attempt: 1 }]);
    expect(await releases(first.jobId)).toEqual([{ holdUntil: "started", reason: "started" }]);
    const second = await q.enqueueWithResult("index.rebuild", {}, options);
    expect(second.outcome).toBe("accepted");
    expect(second.jobId).not.toBe(first.jobId);
    expect(await q.enqueueWithResult("index.rebuild", {}, options)).toMatchObject({
      jobId: second.jobId,
      outcome: "replayed",
    });
    // The first job's end changes nothing for the key the second one holds now.
    expect(await complete(first.jobId)).toBe(1);
    expect(await releases(first.jobId)).toEqual([{ holdUntil: "started", reason: "started" }]);
    expect(await q.enqueueWithResult("index.rebuild", {}, options)).toMatchObject({
      jobId: second.jobId,
      outcome: "replayed",
    });
  });

  test("a job canceled before it started releases its key", async () => {
    const q = t.queue();
    const options = { queue: fresh("q"), idempotency: idem(fresh(), { holdUntil: "started" as const }) };
    const jobId = await q.enqueue("t", {}, options);
    await q.cancel({ jobIds: [jobId] }, ctx);
    expect(await releases(jobId)).toEqual([{ holdUntil: "started", reason: "canceled" }]);
    expect((await q.enqueueWithResult("t", {}, options)).outcome).toBe("accepted");
  });

  test("debounce: one running plus one queued; later requests replace the queued one", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const key = fresh();
    const d = (windowMs: number) => ({ queue, debounce: { key, windowMs, holdUntil: "started" as const } });
    const first = await q.enqueueWithResult("index.rebuild", { v: 1 }, d(1));
    expect(first.outcome).toBe("accepted");
    await new Promise((r) => setTimeout(r, 10));
    // The window is over but the job has not started: the key is still held, the job replaceable.
    const again = await q.enqueueWithResult("index.rebuild", { v: 2 }, d(1));
    expect(again).toMatchObject({ jobId: first.jobId, outcome: "replaced" });
    await new Promise((r) => setTimeout(r, 10));
    expect(await claim(queue)).toEqual([{ id: first.jobId, attempt: 1 }]);

    const queued = await q.enqueueWithResult("index.rebuild", { v: 3 }, d(60_000));
    expect(queued.outcome).toBe("accepted");
    expect(queued.jobId).not.toBe(first.jobId);
    const replaced = await q.enqueueWithResult("index.rebuild", { v: 4 }, d(60_000));
    expect(replaced).toMatchObject({ jobId: queued.jobId, outcome: "replaced" });
    const rows = await t.sql<{ id: string; state: string; payload: unknown }>(
      "select id, state, payload from workhorse.job where queue = $1 order by id",
      [queue],
    );
    expect(rows).toEqual([
      { id: first.jobId, state: "active", payload: { v: 2 } },
      { id: queued.jobId, state: "scheduled", payload: { v: 4 } },
    ]);
  });
});

describe("jobs without a lifetime", () => {
  /** The locks this transaction holds on key_binding and its indexes (a statement that names the table takes one). */
  const bindingLocks = `select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation
                         where l.pid = pg_backend_pid()
                           and (c.oid = 'workhorse.key_binding'::regclass
                                or c.oid in (select indexrelid from pg_index where indrelid = 'workhorse.key_binding'::regclass))`;

  test("claim and complete never open key_binding; with a lifetime, complete does", async () => {
    const q = t.queue();
    for (const holdUntil of [undefined, "finished" as const]) {
      const queue = fresh("q");
      const jobId = await q.enqueue("report.nightly", { day: 1 }, { queue, idempotency: idem(fresh(), { holdUntil }) });
      const client = await t.pool.connect();
      try {
        await client.query("begin");
        const claimed = await client.query(
          "select id from workhorse.claim_jobs(array[$1], null, 'w~1', 10, 60000, false)",
          [queue],
        );
        expect(claimed.rows).toEqual([{ id: jobId }]);
        const afterClaim = (await client.query(bindingLocks)).rows[0].n;
        await client.query(
          "select id from workhorse.complete_jobs(array[$1::uuid], array[1], array['w~1'], array['null'::jsonb])",
          [jobId],
        );
        const afterComplete = (await client.query(bindingLocks)).rows[0].n;
        await client.query("commit");
        if (holdUntil) {
          expect(afterClaim).toBe(0); // held until finished: the claim releases nothing
          expect(afterComplete).toBeGreaterThan(0);
          expect(await releases(jobId)).toEqual([{ holdUntil: "finished", reason: "succeeded" }]);
        } else {
          expect([afterClaim, afterComplete]).toEqual([0, 0]);
        }
      } finally {
        client.release();
      }
    }
  });
});

describe("the fingerprint and the input rules", () => {
  test("a request that differs in holdUntil is a conflict naming holdUntil", async () => {
    const q = t.queue();
    const key = fresh();
    await q.enqueue("t", {}, { idempotency: idem(key, { holdUntil: "finished", ttlMs: 86_400_000 }) });
    const err = await q
      .enqueue("t", {}, { idempotency: idem(key, { holdUntil: "started", ttlMs: 86_400_000 }) })
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err.conflictingFields).toEqual(["holdUntil"]);

    // A key bound without a lifetime (as every client before lifetimes bound it).
    const plain = fresh();
    await q.enqueue("t", {}, { idempotency: idem(plain) });
    const err2 = await q
      .enqueue("t", {}, { idempotency: idem(plain, { holdUntil: "finished", ttlMs: 86_400_000 }) })
      .catch((e) => e);
    expect(err2).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err2.conflictingFields).toEqual(["holdUntil"]);
    // In a batch too.
    const err3 = await q
      .enqueueMany([
        { type: "t", payload: {}, options: { idempotency: idem(plain, { holdUntil: "started", ttlMs: 86_400_000 }) } },
      ])
      .catch((e) => e);
    expect(err3).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err3.conflictingFields).toEqual(["holdUntil"]);
  });

  test("a request without holdUntil keeps the request digest it always had", async () => {
    const q = t.queue();
    const key = fresh();
    const jobId = await q.enqueue("t", { a: 1 }, { idempotency: idem(key) });
    const [row] = await t.sql<{ fd: Buffer; rd: Buffer }>(
      "select field_digests as fd, request_digest as rd from workhorse.key_binding where job_id = $1",
      [jobId],
    );
    expect(row!.fd.length).toBe(88);
    expect(row!.rd).toEqual(createHash("sha256").update(row!.fd).digest());

    const held = await q.enqueue("t", { a: 1 }, { idempotency: idem(fresh(), { holdUntil: "finished" }) });
    const [h] = await t.sql<{ fd: Buffer; rd: Buffer }>(
      "select field_digests as fd, request_digest as rd from workhorse.key_binding where job_id = $1",
      [held],
    );
    const holdDigest = createHash("sha256").update('"finished"').digest().subarray(0, 8);
    expect(h!.rd).toEqual(
      createHash("sha256")
        .update(Buffer.concat([h!.fd, holdDigest]))
        .digest(),
    );
  });

  test("batches hold keys as single calls do", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const key = fresh();
    const o = { queue, idempotency: idem(key, { holdUntil: "finished" as const }) };
    const results = await q.enqueueManyWithResults([
      { type: "t", payload: {}, options: o },
      { type: "t", payload: {}, options: o },
      { type: "t", payload: {}, options: { queue } },
    ]);
    expect(results.map((r) => r.outcome)).toEqual(["accepted", "replayed", "accepted"]);
    expect(results[1]?.jobId).toBe(results[0]?.jobId);
    expect(await q.findBinding(o.idempotency)).toMatchObject({ holdUntil: "finished", expiresAt: null });
    const [claimed] = await claim(queue);
    expect(claimed).toBeDefined();
    await complete(results[0]!.jobId);
    const again = await q.enqueueManyWithResults([{ type: "t", payload: {}, options: o }]);
    expect(again[0]?.outcome).toBe(claimed?.id === results[0]?.jobId ? "accepted" : "replayed");
  });

  test("throttle refuses holdUntil; an unknown lifetime is refused", async () => {
    const q = t.queue();
    const err = await q
      .enqueue("t", {}, { throttle: { key: "k", windowMs: 1000, holdUntil: "finished" } } as unknown as EnqueueOptions)
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueValidationError);
    expect(err.issues).toEqual([
      {
        option: "options.throttle.holdUntil",
        rule: "throttle keys are held for their window only: use idempotency or debounce for a key lifetime",
      },
    ]);
    const err2 = await q
      .enqueue("t", {}, { idempotency: { key: "k", holdUntil: "done" } } as unknown as EnqueueOptions)
      .catch((e) => e);
    expect(err2).toBeInstanceOf(EnqueueValidationError);
    expect(err2.issues).toEqual([{ option: "options.idempotency.holdUntil", rule: 'must be "finished" or "started"' }]);
  });

  test("PostgreSQL refuses an unknown lifetime from a direct SQL caller; nothing is written", async () => {
    // On Citus the SQL entry point is enqueue_one_at, which takes the key's bucket first.
    const entry = distributedTests()
      ? "workhorse.enqueue_one_at(workhorse.key_bucket('sql-bound', sha256('sql-bound'::bytea)), 1, "
      : "workhorse.enqueue_one(";
    const call = `select * from ${entry}gen_random_uuid(), 'sql-bound', 't', '{}'::jsonb, null, 3, null,
      null, null, null, '{}'::text[], 'idempotency', 'sql-bound', sha256('sql-bound'::bytea), 'sq…', 9, null,
      null, false, null, null, false, null, $1)`;
    const err = await t.sql(call, ["forever"]).catch((e) => e);
    expect(err?.code).toBe("23514"); // the workhorse.key_hold_until domain's check
    expect(await t.sql("select 1 from workhorse.job where queue = 'sql-bound'")).toEqual([]);
    expect(await t.sql("select 1 from workhorse.key_binding where scope = 'sql-bound'")).toEqual([]);
    expect((await t.sql(call, ["finished"]))[0]).toMatchObject({ outcome: "accepted" });
  });

  test("a direct SQL call without a key: a bad lifetime is refused, a good one is not stored (nothing to hold)", async () => {
    const one = distributedTests() ? "workhorse.enqueue_one_at(0, 1, " : "workhorse.enqueue_one(";
    const single = (holdUntil: string) =>
      t.sql<{ job_id: string; outcome: string }>(
        `select * from ${one}gen_random_uuid(), 'sql-keyless', 't', '{}'::jsonb, null, 3, null,
          null, null, null, '{}'::text[], null, null, null, null, null, null, null, false, null, null, false, null, $1)`,
        [holdUntil],
      );
    const batch = (holdUntil: string) =>
      t.sql<{ job_id: string; outcome: string }>(
        `select b.job_id, b.outcome from workhorse.enqueue_batch(
           p_ids => array[gen_random_uuid()], p_queues => array['sql-keyless'], p_types => array['t'],
           p_payloads => '[{}]'::jsonb, p_run_ats => array[null::timestamptz], p_max_attempts => array[3],
           p_retry_policies => array[null::jsonb], p_deadlines => array[null::timestamptz],
           p_execution_timeouts => array[null::bigint], p_concurrency_keys => array[null::text],
           p_tags => '{}'::text[], p_tag_counts => array[0], p_modes => array[null::text],
           p_scopes => array[null::text], p_key_hashes => array[null::bytea], p_key_previews => array[null::text],
           p_key_lengths => array[null::integer], p_ttls => array[null::bigint], p_field_digests => array[null::bytea],
           p_legacy_key_hashes => null, p_notify => false, p_hold_untils => array[$1]) b`,
        [holdUntil],
      );
    for (const call of [single, batch]) {
      expect((await call("forever").catch((e) => e))?.code).toBe("23514");
    }
    expect(await t.sql("select 1 from workhorse.job where queue = 'sql-keyless'")).toEqual([]);
    const ids = [(await single("finished"))[0]?.job_id, (await batch("finished"))[0]?.job_id];
    const stored = await t.sql<{ id: string; key_hold_until: string | null }>(
      "select id, key_hold_until from workhorse.job where queue = 'sql-keyless' order by id",
    );
    expect(stored.map((r) => r.id).sort()).toEqual(ids.sort());
    expect(stored.map((r) => r.key_hold_until)).toEqual([null, null]);
  });
});

describe("a batch retried after its first try committed", () => {
  test("reads back the request digests the first try reported, lifetime included", async () => {
    const scope = "recall";
    const key = fresh("recall");
    const hash = createHash("sha256").update(key).digest();
    const ids = [randomUUID(), randomUUID()].map((id) => bucketedId(id, keyBucket(scope, hash)));
    // Two requests for one key in one batch: the first is accepted, the second replays it.
    const call = (retry: boolean) =>
      t.sql<{ job_id: string; outcome: string; request_digest: string | null }>(
        `select b.job_id, b.outcome, b.request_digest from workhorse.enqueue_batch(
           p_ids => $1::uuid[], p_queues => array['recall', 'recall'], p_types => array['t', 't'],
           p_payloads => '[{}, {}]'::jsonb, p_run_ats => array[null, null]::timestamptz[],
           p_max_attempts => array[3, 3], p_retry_policies => array[null, null]::jsonb[],
           p_deadlines => array[null, null]::timestamptz[], p_execution_timeouts => array[null, null]::bigint[],
           p_concurrency_keys => array[null, null]::text[], p_tags => '{}'::text[], p_tag_counts => array[0, 0],
           p_modes => array['idempotency', 'idempotency'], p_scopes => array[$2, $2],
           p_key_hashes => array[$3::bytea, $3::bytea], p_key_previews => array['re…', 're…'],
           p_key_lengths => array[9, 9], p_ttls => array[null, null]::bigint[],
           p_field_digests => array[null, null]::bytea[],
           p_legacy_key_hashes => null, p_notify => false, p_retry => $4,
           p_hold_untils => array['finished', 'finished']) b order by b.ordinal`,
        [ids, scope, hash, retry],
      );
    const first = await call(false);
    expect(first.map((r) => [r.job_id, r.outcome])).toEqual([
      [ids[0], "accepted"],
      [ids[0], "replayed"],
    ]);
    expect(first[1]?.request_digest).toMatch(/^[0-9a-f]{64}$/);
    const again = await call(true);
    expect(again.map((r) => [r.job_id, r.outcome])).toEqual([
      [ids[0], "replayed"], // its own id: the client reports it accepted
      [ids[0], "replayed"],
    ]);
    expect(again[1]?.request_digest).toBe(first[1]?.request_digest);
  });
});

describe("redrive after the release", () => {
  test("binds the released key to the redriven job when it is free, and says so", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const options = { queue, maxAttempts: 1, idempotency: idem(fresh(), { holdUntil: "finished" as const }) };
    const { jobId } = await q.enqueueWithResult("t", { x: 1 }, options);
    await claim(queue);
    expect(await fail(jobId)).toBe("failed");
    expect(await q.findBinding(options.idempotency)).toBeNull();

    const res = await q.redrive({ jobIds: [jobId], requestId: fresh("r"), requestedBy: "bob", reason: "retry" });
    const redriven = res.results[0]?.jobId as string;
    expect(res.results).toEqual([{ sourceJobId: jobId, status: "redriven", jobId: redriven, key: "bound" }]);
    expect(await q.findBinding(options.idempotency)).toMatchObject({ jobId: redriven, holdUntil: "finished" });
    expect(await q.enqueueWithResult("t", { x: 1 }, options)).toMatchObject({ jobId: redriven, outcome: "replayed" });
    // The redriven job holds the key the same way: released when it finishes.
    await claim(queue);
    expect(await complete(redriven)).toBe(1);
    expect(await releases(redriven)).toEqual([{ holdUntil: "finished", reason: "succeeded" }]);
    expect((await q.enqueueWithResult("t", { x: 1 }, options)).outcome).toBe("accepted");
  });

  test("redrives without the key when another job holds it now", async () => {
    const q = t.queue();
    const queue = fresh("q");
    const options = { queue, maxAttempts: 1, idempotency: idem(fresh(), { holdUntil: "finished" as const }) };
    const { jobId } = await q.enqueueWithResult("t", {}, options);
    await claim(queue);
    await fail(jobId);
    const taker = await q.enqueueWithResult("t", {}, options);
    expect(taker.outcome).toBe("accepted");

    const res = await q.redrive({ jobIds: [jobId], requestId: fresh("r"), requestedBy: "bob", reason: "retry" });
    expect(res.results[0]).toMatchObject({ status: "redriven", key: "taken" });
    expect(await q.findBinding(options.idempotency)).toMatchObject({ jobId: taker.jobId });
    const [row] = await t.sql<{ key_hash: Buffer | null }>("select key_hash from workhorse.job where id = $1", [
      res.results[0]?.jobId,
    ]);
    expect(row?.key_hash).toBeNull();
  });
});

describe("the console's bindings list", () => {
  test("lists keys held without a time limit last and pages past them", async () => {
    const q = t.queue();
    const scope = fresh("listed");
    const held = await q.enqueue("t", {}, { idempotency: { key: fresh(), scope, holdUntil: "finished" } });
    const timed = await q.enqueue("t", {}, { idempotency: { key: fresh(), scope, ttlMs: 60_000 } });
    const first = await bindingListRows(t.pool, { status: "live", scope }, 1);
    expect(first.map((r) => r.job_id)).toEqual([timed, held]);
    const last = first[0]!;
    const second = await bindingListRows(
      t.pool,
      { status: "live", scope, after: { expiresAtUs: last.exp_us, jobId: last.job_id } },
      1,
    );
    expect(second.map((r) => [r.job_id, r.expires_at, r.exp_us])).toEqual([[held, null, "9223372036854775807"]]);
    const after = await bindingListRows(
      t.pool,
      { status: "live", scope, after: { expiresAtUs: second[0]!.exp_us, jobId: held } },
      1,
    );
    expect(after).toEqual([]);
  });
});

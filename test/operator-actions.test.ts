import { beforeAll, describe, expect, test } from "vitest";
import {
  EnqueueValidationError,
  JobCanceledError,
  JobNotFoundError,
  RedriveIdempotencyConflictError,
} from "../lib/enqueue";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const ctx = { actor: "alice@ops", reason: "incident 7" };
const MISSING = "01900000-0000-7000-8000-000000000000";

const startWorker = workerStarter(t.pool, {
  pollIntervalMs: 25,
  reapIntervalMs: 0,
  leaseMs: 1500,
  heartbeatIntervalMs: 100,
  abortGraceMs: 500,
});

async function stateOf(id: string): Promise<string | undefined> {
  const [row] = await t.sql<{ state: string }>("select state from workhorse.job where id = $1", [id]);
  return row?.state;
}

async function eventKinds(id: string): Promise<string[]> {
  const rows = await t.sql<{ kind: string }>("select kind from workhorse.job_timeline where job_id = $1 order by seq", [
    id,
  ]);
  return rows.map((r) => r.kind);
}

async function lastAudit(action: string) {
  const [row] = await t.sql<{ actor: string; target: string; reason: string; result: Record<string, unknown> }>(
    "select actor, target, reason, result from workhorse.operator_audit where action = $1 order by at desc limit 1",
    [action],
  );
  return row;
}

/** A job that really failed: one attempt, run by a real worker whose handler throws. */
async function failedJobs(queueName: string, n: number, options: { key?: string; type?: string } = {}) {
  const q = t.queue();
  const type = options.type ?? "always.fails";
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(
      await q.enqueue(
        type,
        { i },
        {
          queue: queueName,
          maxAttempts: 1,
          tags: ["t1"],
          concurrencyKey: `ck-${queueName}-${i}`,
          retryPolicy: { type: "fixed", delayMs: 10 },
          executionTimeoutMs: 60_000,
          deadline: new Date(Date.now() + 3_600_000),
          ...(options.key ? { idempotency: { key: `${options.key}-${i}`, scope: "orders" } } : {}),
        },
      ),
    );
  }
  const w = await startWorker({
    queues: [queueName],
    concurrency: 4,
    handlers: {
      [type]: async () => {
        throw new TypeError("card declined");
      },
    },
  });
  for (const id of ids) await waitFor(`job ${id} failed`, async () => (await stateOf(id)) === "failed");
  await w.stop({ graceMs: 0 });
  return ids;
}

describe("cancel", () => {
  test("pending jobs are canceled at once, terminal and missing ones are counted as unchanged, bindings stay", async () => {
    const q = t.queue();
    const scheduled = await q.enqueue(
      "a",
      {},
      { queue: "c1", runAt: new Date(Date.now() + 3_600_000), idempotency: { key: "k-cancel", scope: "s" } },
    );
    const ready = await q.enqueue("a", {}, { queue: "c1" });
    const done = await q.enqueue("a", {}, { queue: "c1" });
    await t.sql("update workhorse.job set state = 'succeeded', finished_at = now() where id = $1", [done]);

    const res = await q.cancel({ jobIds: [scheduled, ready, done, MISSING, ready] }, ctx);
    expect(res).toEqual({ canceled: 2, cancelRequested: 0, unchanged: { succeeded: 1, missing: 1 } });
    expect(await stateOf(scheduled)).toBe("canceled");
    expect(await stateOf(ready)).toBe("canceled");
    expect(await stateOf(done)).toBe("succeeded");
    expect(await eventKinds(ready)).toEqual(["enqueued", "canceled"]);
    const job = await q.getJob(scheduled);
    expect(job).toMatchObject({ state: "canceled", cancelRequestedBy: "alice@ops", cancelReason: "incident 7" });
    expect(job?.finishedAt).toBeInstanceOf(Date);

    // Cancel keeps the key: a replay returns the canceled job.
    expect((await q.findBinding({ key: "k-cancel", scope: "s" }))?.jobId).toBe(scheduled);
    const replay = await q.enqueueWithResult(
      "a",
      {},
      { queue: "c1", runAt: job?.runAt, idempotency: { key: "k-cancel", scope: "s" } },
    );
    expect(replay).toMatchObject({ jobId: scheduled, outcome: "replayed" });

    expect(await lastAudit("cancel")).toEqual({
      actor: "alice@ops",
      target: "jobs:4",
      reason: "incident 7",
      result: { requested: 4, canceled: 2, cancelRequested: 0, unchanged: { succeeded: 1, missing: 1 } },
    });
  });

  test("an active job is canceled at its worker's next heartbeat: signal.reason is JobCanceledError, no retry", async () => {
    const q = t.queue();
    const id = await q.enqueue("slow", {}, { queue: "c2", maxAttempts: 5, retryPolicy: { type: "fixed", delayMs: 0 } });
    let reason: unknown = null;
    let started = false;
    await startWorker({
      queues: ["c2"],
      handlers: {
        slow: (_payload, c) =>
          new Promise((_resolve, reject) => {
            started = true;
            c.signal.addEventListener("abort", () => {
              reason = c.signal.reason;
              reject(c.signal.reason);
            });
          }),
      },
    });
    await waitFor("handler running", async () => started);
    const res = await q.cancel({ jobIds: [id] }, ctx);
    expect(res).toEqual({ canceled: 0, cancelRequested: 1, unchanged: {} });
    await waitFor("job canceled", async () => (await stateOf(id)) === "canceled");
    expect(reason).toBeInstanceOf(JobCanceledError);
    expect((reason as JobCanceledError).jobId).toBe(id);
    // No retry: still canceled, one attempt, a while later.
    await new Promise((r) => setTimeout(r, 300));
    const job = await q.getJob(id);
    expect(job).toMatchObject({ state: "canceled", attempt: 1, leaseExpiresAt: null });
    expect(await eventKinds(id)).toEqual(["enqueued", "claimed", "cancel_requested", "canceled"]);
  });

  test("a cancel-requested attempt that fails or loses its lease before its worker saw the request is canceled, not retried", async () => {
    const q = t.queue();
    const a = await q.enqueue("x", {}, { queue: "c3", maxAttempts: 5 });
    const b = await q.enqueue("x", {}, { queue: "c3", maxAttempts: 5 });
    const claimed = await t.sql<{ id: string; attempt: number }>(
      "select id, attempt from workhorse.claim_jobs(array['c3'], null, 'w~1', 10, 60000, false)",
    );
    expect(claimed).toHaveLength(2);
    expect(await q.cancel({ jobIds: [a, b] }, ctx)).toEqual({ canceled: 0, cancelRequested: 2, unchanged: {} });
    // a: the handler threw (attempts left, so it would have been retried).
    const [failed] = await t.sql<{ state: string }>(
      `select state from workhorse.fail_job($1, 1, 'w~1', '{"name":"Error","message":"boom"}', 'error', '{"initialDelayMs":1000,"multiplier":1,"maxDelayMs":1000}')`,
      [a],
    );
    expect(failed).toBeDefined();
    expect(await stateOf(a)).toBe("canceled");
    // b: the worker died; its lease lapses and is reaped.
    await t.sql("update workhorse.job set lease_expires_at = now() - interval '1 second' where id = $1", [b]);
    expect(await q.reapExpiredLeases()).toBe(1);
    expect(await stateOf(b)).toBe("canceled");
    expect(await eventKinds(b)).toEqual(["enqueued", "claimed", "cancel_requested", "canceled", "lease_expired"]);
  });

  test("a handler that throws after a cancel was requested (before its worker saw it): the worker reports canceled, not a retry", async () => {
    const q = t.queue();
    const id = await q.enqueue("x", {}, { queue: "c4", maxAttempts: 5, retryPolicy: { type: "fixed", delayMs: 0 } });
    let started = false;
    let fail: (err: Error) => void = () => {};
    const events: string[] = [];
    const w = await startWorker({
      queues: ["c4"],
      heartbeatIntervalMs: 1400, // the cancel lands between heartbeats
      onEvent: (e) => events.push(e.kind),
      handlers: {
        x: () =>
          new Promise((_resolve, reject) => {
            started = true;
            fail = reject;
          }),
      },
    });
    await waitFor("handler running", async () => started);
    expect(await q.cancel({ jobIds: [id] }, ctx)).toEqual({ canceled: 0, cancelRequested: 1, unchanged: {} });
    fail(new Error("boom"));
    await waitFor("job canceled", async () => (await stateOf(id)) === "canceled");
    await waitFor("the worker's report", async () => events.includes("canceled") || events.includes("retry_scheduled"));
    expect(events).toEqual(["claimed", "canceled"]);
    expect(w.stats()).toMatchObject({ canceled: 1, retried: 0, failed: 0 });
    expect(await eventKinds(id)).toEqual(["enqueued", "claimed", "cancel_requested", "canceled"]);
  });

  test("bad input is refused before anything is written; a single missing id is JobNotFoundError", async () => {
    const q = t.queue();
    const before = await t.count("operator_audit");
    await expect(q.cancel({ jobIds: [] }, ctx)).rejects.toBeInstanceOf(EnqueueValidationError);
    await expect(q.cancel({ jobIds: ["nope"] }, ctx)).rejects.toBeInstanceOf(EnqueueValidationError);
    await expect(q.cancel({ jobIds: Array.from({ length: 1001 }, () => MISSING) }, ctx)).rejects.toBeInstanceOf(
      EnqueueValidationError,
    );
    await expect(q.cancel({ jobIds: [MISSING] }, { actor: "a", reason: " " })).rejects.toBeInstanceOf(
      EnqueueValidationError,
    );
    expect(await t.count("operator_audit")).toBe(before);
    await expect(q.cancel({ jobIds: [MISSING] }, ctx)).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(q.runNow({ jobIds: [MISSING] }, ctx)).rejects.toBeInstanceOf(JobNotFoundError);
  });
});

describe("purgeJobs", () => {
  test("pending jobs become tombstones and release their keys; the rest are counted, one audit row", async () => {
    const q = t.queue();
    const keyed = await q.enqueue("a", {}, { queue: "pg1", idempotency: { key: "purge-bulk", scope: "s" } });
    const later = await q.enqueue("a", {}, { queue: "pg1", runAt: new Date(Date.now() + 3_600_000) });
    const done = await q.enqueue("a", {}, { queue: "pg1" });
    await t.sql("update workhorse.job set state = 'succeeded', finished_at = now() where id = $1", [done]);
    expect(await q.purgeJobs({ jobIds: [keyed, later, done, MISSING] }, ctx)).toEqual({
      purged: 2,
      releasedBindings: 1,
      unchanged: { succeeded: 1, missing: 1 },
    });
    expect(await stateOf(keyed)).toBe("purged");
    expect(await stateOf(later)).toBe("purged");
    expect(await stateOf(done)).toBe("succeeded");
    expect(await q.findBinding({ key: "purge-bulk", scope: "s" })).toBeNull();
    expect(await eventKinds(later)).toEqual(["enqueued", "purged"]);
    expect(await lastAudit("purge_job")).toEqual({
      actor: "alice@ops",
      target: "jobs:4",
      reason: "incident 7",
      result: { status: "ok", requested: 4, purged: 2, releasedBindings: 1, unchanged: { succeeded: 1, missing: 1 } },
    });
  });
});

describe("runNow", () => {
  test("scheduled jobs become ready and due now; others are counted as unchanged", async () => {
    const q = t.queue();
    const later = new Date(Date.now() + 3_600_000);
    const a = await q.enqueue("a", {}, { queue: "r1", runAt: later });
    const b = await q.enqueue("a", {}, { queue: "r1", runAt: later });
    const c = await q.enqueue("a", {}, { queue: "r1" });
    expect(await q.runNow({ jobIds: [a, b, c] }, ctx)).toEqual({ updated: 2, unchanged: { ready: 1 } });
    const job = await q.getJob(a);
    expect(job?.state).toBe("ready");
    expect(job!.runAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(await eventKinds(a)).toEqual(["enqueued", "run_now"]);
    expect((await lastAudit("run_now"))?.result).toEqual({ requested: 3, updated: 2, unchanged: { ready: 1 } });
  });
});

describe("redrive", () => {
  test("dry run, redrive, replay and conflict", async () => {
    const q = t.queue();
    const [failed] = (await failedJobs("rd1", 1)) as [string];
    const pending = await q.enqueue("x", {}, { queue: "rd1", runAt: new Date(Date.now() + 3_600_000) });
    const request = { requestId: "req-1", requestedBy: "bob", reason: "PSP back up" };
    const jobsBefore = await t.count("job");
    const auditBefore = await t.count("operator_audit");

    const dry = await q.redrive({ jobIds: [failed, pending, MISSING], ...request, dryRun: true });
    expect(dry.results).toEqual([
      { sourceJobId: failed, status: "eligible" },
      { sourceJobId: pending, status: "not_failed" },
      { sourceJobId: MISSING, status: "not_found" },
    ]);
    expect(await t.count("job")).toBe(jobsBefore);
    expect(await t.count("operator_audit")).toBe(auditBefore);

    const res = await q.redrive({ jobIds: [failed, pending, MISSING], ...request });
    const jobId = res.results[0]?.jobId as string;
    expect(res.results).toEqual([
      { sourceJobId: failed, status: "redriven", jobId },
      { sourceJobId: pending, status: "not_failed" },
      { sourceJobId: MISSING, status: "not_found" },
    ]);
    expect(await t.count("job")).toBe(jobsBefore + 1);
    const source = await q.getJob(failed);
    const copy = await q.getJob(jobId);
    expect(source).toMatchObject({ state: "failed", redriveJobIds: [jobId], redrivenFrom: null });
    expect(copy).toMatchObject({
      state: "ready",
      attempt: 0,
      queue: "rd1",
      type: "always.fails",
      payload: { i: 0 },
      tags: ["t1"],
      concurrencyKey: "ck-rd1-0",
      maxAttempts: 1,
      retryPolicy: source?.retryPolicy,
      executionTimeoutMs: 60_000,
      deadline: null,
      redrivenFrom: failed,
      redriveJobIds: [],
    });
    expect(await eventKinds(failed)).toEqual(["enqueued", "claimed", "failed", "redriven"]);
    // A redriven dead letter leaves the default list; asked for, it shows where it went.
    expect((await q.listDeadLetters({ queue: "rd1" })).jobs).toEqual([]);
    expect(
      (await q.listDeadLetters({ queue: "rd1", includeRedriven: true })).jobs.map((j) => [j.id, j.redriveJobIds]),
    ).toEqual([[failed, [jobId]]]);
    expect(await eventKinds(jobId)).toEqual(["enqueued"]);
    expect(await lastAudit("redrive")).toEqual({
      actor: "bob",
      target: "jobs:3",
      reason: "PSP back up",
      result: { requested: 3, movedKeys: 0, redriven: 1, not_failed: 1, not_found: 1 },
    });

    // The same request again: the same answer, nothing new.
    const again = await q.redrive({ jobIds: [failed], ...request });
    expect(again.results).toEqual([{ sourceJobId: failed, status: "replayed", jobId }]);
    expect(await t.count("job")).toBe(jobsBefore + 1);

    // The same request id with another reason or requester: a conflict, nothing written.
    const auditNow = await t.count("operator_audit");
    const err = await q.redrive({ jobIds: [failed], ...request, reason: "something else" }).catch((e) => e);
    expect(err).toBeInstanceOf(RedriveIdempotencyConflictError);
    expect(err).toMatchObject({ sourceJobId: failed, existingJobId: jobId, conflictingFields: ["reason"] });
    const err2 = await q.redrive({ jobIds: [failed], ...request, requestedBy: "carol" }).catch((e) => e);
    expect(err2).toMatchObject({ conflictingFields: ["requestedBy"] });
    expect(await t.count("job")).toBe(jobsBefore + 1);
    expect(await t.count("operator_audit")).toBe(auditNow);

    // A new request id does not redrive it twice: the answer names the job the first redrive made,
    // in a dry run too, and nothing is written but the audit row.
    const jobsNow = await t.count("job");
    const dryAgain = await q.redrive({ jobIds: [failed], ...request, requestId: "req-2", dryRun: true });
    expect(dryAgain.results).toEqual([{ sourceJobId: failed, status: "already_redriven", jobId }]);
    const refused = await q.redrive({ jobIds: [failed], ...request, requestId: "req-2" });
    expect(refused.results).toEqual([{ sourceJobId: failed, status: "already_redriven", jobId }]);
    expect(await t.count("job")).toBe(jobsNow);
    expect((await lastAudit("redrive"))?.result).toEqual({ requested: 1, movedKeys: 0, already_redriven: 1 });
    expect(await eventKinds(failed)).toEqual(["enqueued", "claimed", "failed", "redriven"]);

    // Asked for explicitly, a new request id redrives again; the answer after that names the newest.
    const dryExplicit = await q.redrive({
      jobIds: [failed],
      ...request,
      requestId: "req-3",
      again: true,
      dryRun: true,
    });
    expect(dryExplicit.results).toEqual([{ sourceJobId: failed, status: "eligible" }]);
    const second = await q.redrive({ jobIds: [failed], ...request, requestId: "req-3", again: true });
    expect(second.results[0]?.status).toBe("redriven");
    const refusedAfter = await q.redrive({ jobIds: [failed], ...request, requestId: "req-4" });
    expect(refusedAfter.results).toEqual([
      { sourceJobId: failed, status: "already_redriven", jobId: second.results[0]?.jobId },
    ]);
    expect((await q.getJob(failed))?.redriveJobIds).toEqual([jobId, second.results[0]?.jobId].sort());

    // The raw request id is stored nowhere.
    const stored = await t.sql<{ t: string }>(
      "select row_to_json(r)::text as t from workhorse.redrive_request r union all select row_to_json(a)::text from workhorse.operator_audit a",
    );
    expect(stored.length).toBeGreaterThan(0);
    for (const row of stored) expect(row.t).not.toContain("req-1");
  });

  test("a live key of the source moves to the redriven job: a replay of the original request returns it", async () => {
    const q = t.queue();
    const [failed] = (await failedJobs("rd2", 1, { key: "order-9" })) as [string];
    expect((await q.findBinding({ key: "order-9-0", scope: "orders" }))?.jobId).toBe(failed);
    const res = await q.redrive({ jobIds: [failed], requestId: "r", requestedBy: "bob", reason: "retry" });
    const jobId = res.results[0]?.jobId as string;
    expect(res.results[0]?.status).toBe("redriven");
    expect((await q.findBinding({ key: "order-9-0", scope: "orders" }))?.jobId).toBe(jobId);
    expect((await lastAudit("redrive"))?.result).toMatchObject({ movedKeys: 1, redriven: 1 });
    // The original keyed request (with its original definition) now replays to the redriven job.
    const [binding] = await t.sql<{ request_digest: string }>(
      "select request_digest from workhorse.idempotency_binding where job_id = $1",
      [jobId],
    );
    expect(binding).toBeDefined();
    const deadline = (await q.getJob(failed))?.deadline as Date;
    const replay = await q.enqueueWithResult(
      "always.fails",
      { i: 0 },
      {
        queue: "rd2",
        maxAttempts: 1,
        tags: ["t1"],
        concurrencyKey: "ck-rd2-0",
        retryPolicy: { type: "fixed", delayMs: 10 },
        executionTimeoutMs: 60_000,
        deadline,
        idempotency: { key: "order-9-0", scope: "orders" },
      },
    );
    expect(replay).toMatchObject({ jobId, outcome: "replayed" });
    // The redriven job owns the key now: its purge releases it, and a new request takes the key.
    expect(await q.purge({ jobId }, { actor: "bob", reason: "done" })).toEqual({ purged: 1, releasedBindings: 1 });
    expect(await q.findBinding({ key: "order-9-0", scope: "orders" })).toBeNull();
    const again = await q.enqueueWithResult(
      "always.fails",
      { i: 1 },
      { idempotency: { key: "order-9-0", scope: "orders" } },
    );
    expect(again.outcome).toBe("accepted");
  });

  test("concurrent redrives with different request ids: one redrives, the other names the job it made", async () => {
    const q = t.queue();
    const ids = await failedJobs("rd4", 3);
    const [a, b] = await Promise.all([
      q.redrive({ jobIds: ids, requestId: "first", requestedBy: "bob", reason: "race" }),
      q.redrive({ jobIds: [...ids].reverse(), requestId: "second", requestedBy: "carol", reason: "race" }),
    ]);
    const byA = new Map(a.results.map((r) => [r.sourceJobId, r]));
    const byB = new Map(b.results.map((r) => [r.sourceJobId, r]));
    for (const id of ids) {
      expect([byA.get(id)?.status, byB.get(id)?.status].sort()).toEqual(["already_redriven", "redriven"]);
      expect(byA.get(id)?.jobId).toBe(byB.get(id)?.jobId);
    }
    expect(await t.count("job", `redriven_from = any('{${ids.join(",")}}'::uuid[])`)).toBe(3);
  });

  test("concurrent identical bulk redrives: one redrives, the other replays the same jobs", async () => {
    const q = t.queue();
    const ids = await failedJobs("rd3", 3);
    const request = { requestId: "same", requestedBy: "bob", reason: "race" };
    const [a, b] = await Promise.all([
      q.redrive({ jobIds: ids, ...request }),
      q.redrive({ jobIds: [...ids].reverse(), ...request }),
    ]);
    const byA = new Map(a.results.map((r) => [r.sourceJobId, r]));
    const byB = new Map(b.results.map((r) => [r.sourceJobId, r]));
    for (const id of ids) {
      expect([byA.get(id)?.status, byB.get(id)?.status].sort()).toEqual(["redriven", "replayed"]);
      expect(byA.get(id)?.jobId).toBe(byB.get(id)?.jobId);
    }
    expect(await t.count("job", `redriven_from = any('{${ids.join(",")}}'::uuid[])`)).toBe(3);
  });

  test("bad input is EnqueueValidationError", async () => {
    const q = t.queue();
    const base = { jobIds: [MISSING], requestId: "r", requestedBy: "bob", reason: "x" };
    await expect(q.redrive({ ...base, requestId: "" })).rejects.toBeInstanceOf(EnqueueValidationError);
    await expect(q.redrive({ ...base, requestId: "x".repeat(513) })).rejects.toBeInstanceOf(EnqueueValidationError);
    await expect(q.redrive({ ...base, requestedBy: "" })).rejects.toBeInstanceOf(EnqueueValidationError);
    await expect(q.redrive({ ...base, jobIds: [] })).rejects.toBeInstanceOf(EnqueueValidationError);
  });
});

describe("listDeadLetters", () => {
  test("failed jobs newest first, filtered and keyset-paged", async () => {
    const q = t.queue();
    const ids = await failedJobs("dl1", 5, { type: "dl.fail" });
    // Times computed here: Citus runs no STABLE function on a column inside an UPDATE.
    const now = Date.now();
    await t.sql(
      "update workhorse.job set finished_at = u.at from unnest($1::uuid[], $2::timestamptz[]) u(id, at) where job.id = u.id",
      [ids, ids.map((_, i) => new Date(now - (i + 1) * 60_000))],
    );
    const expected = [...ids]; // ord 1 is newest
    const page1 = await q.listDeadLetters({ queue: "dl1", limit: 2 });
    expect(page1.jobs.map((j) => j.id)).toEqual(expected.slice(0, 2));
    expect(page1.nextCursor).toBeTypeOf("string");
    const page2 = await q.listDeadLetters({ queue: "dl1", limit: 2, cursor: page1.nextCursor as string });
    expect(page2.jobs.map((j) => j.id)).toEqual(expected.slice(2, 4));
    const page3 = await q.listDeadLetters({ queue: "dl1", limit: 2, cursor: page2.nextCursor as string });
    expect(page3.jobs.map((j) => j.id)).toEqual(expected.slice(4));
    expect(page3.nextCursor).toBeNull();
    expect((await q.listDeadLetters({ queue: "dl1", errorName: "TypeError" })).jobs).toHaveLength(5);
    expect((await q.listDeadLetters({ queue: "dl1", errorName: "RangeError" })).jobs).toHaveLength(0);
    expect((await q.listDeadLetters({ queue: "dl1", type: "other" })).jobs).toHaveLength(0);
    await expect(q.listDeadLetters({ cursor: "garbage" })).rejects.toBeInstanceOf(EnqueueValidationError);
  });
});

describe("pause", () => {
  test("a paused queue is not claimed; resume lets its jobs run; both are audited", async () => {
    const q = t.queue();
    let ran = 0;
    await startWorker({ queues: ["p1"], handlers: { p: async () => void ran++ } });
    expect(await q.pauseQueue("p1", ctx)).toEqual({ paused: true });
    expect(await q.pauseQueue("p1", ctx)).toEqual({ paused: false });
    const id = await q.enqueue("p", {}, { queue: "p1" });
    // Several poll intervals (25 ms) and the wake-up pass: nothing is claimed.
    await new Promise((r) => setTimeout(r, 400));
    expect(await stateOf(id)).toBe("ready");
    expect(ran).toBe(0);
    expect((await q.listPausedQueues()).map((p) => [p.queue, p.pausedBy])).toEqual([["p1", "alice@ops"]]);
    expect(await q.resumeQueue("p1", ctx)).toEqual({ resumed: true });
    await waitFor("job ran", async () => (await stateOf(id)) === "succeeded");
    expect(ran).toBe(1);
    expect(await q.resumeQueue("p1", ctx)).toEqual({ resumed: false });
    expect(await lastAudit("pause_queue")).toMatchObject({
      target: "queue:p1",
      result: { paused: 0, status: "already_paused" },
    });
    expect(await lastAudit("resume_queue")).toMatchObject({ result: { resumed: 0, status: "not_paused" } });
  });
});

describe("retention", () => {
  test("old terminal jobs and their events go in batches; a job owning a live key, a recent one and a pending one stay", async () => {
    const q = t.queue();
    const old: string[] = [];
    for (let i = 0; i < 5; i++) old.push(await q.enqueue("r", {}, { queue: "ret" }));
    const keyed = await q.enqueue("r", {}, { queue: "ret", idempotency: { key: "keep-me", scope: "ret" } });
    const recent = await q.enqueue("r", {}, { queue: "ret" });
    const pending = await q.enqueue("r", {}, { queue: "ret" });
    await t.sql(
      "update workhorse.job set state = 'succeeded', finished_at = now() - interval '8 days', updated_at = now() - interval '8 days' where id = any($1::uuid[])",
      [[...old, keyed]],
    );
    await t.sql("update workhorse.job set state = 'failed', finished_at = now(), updated_at = now() where id = $1", [
      recent,
    ]);
    await t.sql("update workhorse.job set updated_at = now() - interval '8 days' where id = $1", [pending]);
    // Since migration 006 an accept writes no event row (the job carries its `enqueued` entry), so
    // give each old job the event its finishing would have written.
    await t.sql(
      "insert into workhorse.job_event (job_id, kind, data) select id, 'succeeded', '{}' from unnest($1::uuid[]) id",
      [old],
    );

    const res = await q.pruneFinishedJobs({ limit: 2 });
    expect(res).toEqual({ jobsDeleted: 5, eventsDeleted: 5 });
    expect(await t.count("job", `id = any('{${old.join(",")}}'::uuid[])`)).toBe(0);
    expect(await t.count("job_event", `job_id = any('{${old.join(",")}}'::uuid[])`)).toBe(0);
    expect(await stateOf(keyed)).toBe("succeeded");
    expect(await stateOf(recent)).toBe("failed");
    expect(await stateOf(pending)).toBe("ready");

    // Once the key expires the job may go; maintenance does it and records the run.
    await t.sql("update workhorse.key_binding set expires_at = now() - interval '1 second' where job_id = $1", [keyed]);
    const m = await q.runMaintenance({ trigger: "manual" });
    expect(m.finishedJobsDeleted).toBe(1);
    expect(await stateOf(keyed)).toBeUndefined();
    const [run] = await t.sql<{ removed: string }>(
      "select removed from workhorse.maintenance_run where task = 'prune_finished_jobs' order by started_at desc limit 1",
    );
    expect(Number(run?.removed)).toBe(1);
  });
});

import { beforeAll, describe, expect, test } from "vitest";
import {
  DeadlineExceededError,
  ExecutionTimeoutError,
  type HandlerContext,
  LeaseLostError,
  type WorkerEvent,
  WorkerStoppingError,
} from "../lib/enqueue";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const startWorker = workerStarter(t.pool, { pollIntervalMs: 25, reapIntervalMs: 0, leaseMs: 2000, abortGraceMs: 200 });

async function jobRow(id: string) {
  const [row] = await t.sql<{
    state: string;
    attempt: number;
    result: unknown;
    last_error: { name: string; message: string; stack?: string } | null;
    lease_owner: string | null;
    lease_expires_at: Date | null;
    run_at: Date;
  }>(
    "select state, attempt, result, last_error, lease_owner, lease_expires_at, run_at from workhorse.job where id = $1",
    [id],
  );
  if (!row) throw new Error(`no job ${id}`);
  return row;
}

async function events(id: string) {
  return t.sql<{ kind: string; data: Record<string, unknown>; at: Date }>(
    "select kind, data, at from workhorse.job_timeline where job_id = $1 order by seq",
    [id],
  );
}

async function kinds(id: string): Promise<string[]> {
  return (await events(id)).map((e) => e.kind);
}

function untilState(id: string, state: string) {
  return waitFor(`job ${id} to be ${state}`, async () => (await jobRow(id)).state === state);
}

describe("outcomes", () => {
  test("a handler's result is stored and the job succeeds with claimed and succeeded events", async () => {
    const q = t.queue();
    const id = await q.enqueue("outcome.ok", { n: 21 }, { queue: "outcomes" });
    const seen: WorkerEvent["kind"][] = [];
    const w = await startWorker({
      queues: ["outcomes"],
      handlers: {
        "outcome.ok": (p: { n: number }, ctx: HandlerContext) => ({ doubled: p.n * 2, attempt: ctx.attempt }),
      },
      onEvent: (e) => seen.push(e.kind),
    });
    await untilState(id, "succeeded");
    const row = await jobRow(id);
    expect(row.result).toEqual({ doubled: 42, attempt: 1 });
    expect(row.attempt).toBe(1);
    expect(row.lease_owner?.startsWith(`${w.workerId}~`)).toBe(true);
    expect(row.lease_expires_at).toBeNull();
    expect(await kinds(id)).toEqual(["enqueued", "claimed", "succeeded"]);
    const [, claimed] = await events(id);
    expect(claimed?.data).toMatchObject({ attempt: 1, worker: row.lease_owner });
    await waitFor("succeeded event", async () => seen.includes("succeeded"));
    expect(seen).toEqual(["claimed", "succeeded"]);
  });

  test("a handler that throws is retried at the exponential policy's run_at until maxAttempts, then fails", async () => {
    const q = t.queue();
    const id = await q.enqueue(
      "outcome.flaky",
      {},
      {
        queue: "retry-exp",
        maxAttempts: 4,
        retryPolicy: { type: "exponential", initialDelayMs: 1000, multiplier: 3, maxDelayMs: 5000 },
      },
    );
    await startWorker({
      queues: ["retry-exp"],
      handlers: {
        "outcome.flaky": (_p: unknown, ctx: HandlerContext) => {
          throw new TypeError(`boom on attempt ${ctx.attempt}`);
        },
      },
    });
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      await waitFor(`retry ${attempt}`, async () => {
        const row = await jobRow(id);
        return row.attempt === attempt && row.state === "scheduled";
      });
      const evs = await events(id);
      const retry = evs.filter((e) => e.kind === "retry_scheduled").at(-1);
      const row = await jobRow(id);
      // run_at is now() + delay, in the same transaction as the event: exact, no wall-clock sleeps.
      expect(row.run_at.getTime() - (retry as { at: Date }).at.getTime()).toBe(retry?.data.delayMs);
      expect(new Date(retry?.data.runAt as string).getTime()).toBe(row.run_at.getTime());
      expect(row.last_error).toMatchObject({ name: "TypeError", message: `boom on attempt ${attempt}` });
      expect(row.last_error?.stack).toContain("TypeError: boom");
      delays.push(retry?.data.delayMs as number);
      await t.sql("update workhorse.job set run_at = now() where id = $1", [id]); // make it due now
    }
    expect(delays).toEqual([1000, 3000, 5000]);
    await untilState(id, "failed");
    const row = await jobRow(id);
    expect(row.attempt).toBe(4);
    expect(row.last_error).toMatchObject({ name: "TypeError", message: "boom on attempt 4" });
    expect(await kinds(id)).toEqual([
      "enqueued",
      "claimed",
      "retry_scheduled",
      "claimed",
      "retry_scheduled",
      "claimed",
      "retry_scheduled",
      "claimed",
      "failed",
    ]);
    const failed = (await events(id)).at(-1);
    expect(failed?.data).toMatchObject({ attempt: 4, reason: "max_attempts", cause: "error" });
  });

  test("without a policy the default is exponential from 1 s doubling; a fixed policy repeats its delay", async () => {
    const q = t.queue();
    const plain = await q.enqueue("outcome.fail", {}, { queue: "retry-default", maxAttempts: 3 });
    const fixed = await q.enqueue(
      "outcome.fail",
      {},
      { queue: "retry-default", maxAttempts: 3, retryPolicy: { type: "fixed", delayMs: 250 } },
    );
    await startWorker({
      queues: ["retry-default"],
      handlers: {
        "outcome.fail": () => {
          throw new Error("no");
        },
      },
    });
    const observed = new Map<string, number[]>([
      [plain, []],
      [fixed, []],
    ]);
    for (const id of [plain, fixed]) {
      for (let attempt = 1; attempt <= 2; attempt++) {
        // The retry's own event records when it was scheduled and for when (runAt): read the delay
        // there, not from the row, which the worker may already have claimed again (a 250 ms delay
        // is shorter than a poll on a loaded machine or on Citus).
        // At least `attempt` of them: the fixed job's 250 ms retries may all have happened while the
        // loop was still waiting on the other job; its `attempt`-th event is the one to read.
        await waitFor(
          "its retry event",
          async () => (await events(id)).filter((e) => e.kind === "retry_scheduled").length >= attempt,
        );
        const retry = (await events(id)).filter((e) => e.kind === "retry_scheduled")[attempt - 1] as unknown as {
          at: Date;
          data: { runAt: string };
        };
        observed.get(id)?.push(Date.parse(retry.data.runAt) - retry.at.getTime());
        await t.sql("update workhorse.job set run_at = now() where id = $1", [id]);
      }
      await untilState(id, "failed");
    }
    expect(observed.get(plain)).toEqual([1000, 2000]);
    expect(observed.get(fixed)).toEqual([250, 250]);
  });

  test("a result that JSON cannot hold fails the attempt with a bounded, JSON-safe error summary", async () => {
    const q = t.queue();
    const id = await q.enqueue("outcome.bigint", {}, { queue: "bad-result", maxAttempts: 1 });
    const long = await q.enqueue("outcome.long", {}, { queue: "bad-result", maxAttempts: 1 });
    await startWorker({
      queues: ["bad-result"],
      handlers: {
        "outcome.bigint": () => ({ n: 1n }),
        "outcome.long": () => {
          throw new RangeError(`x\u0000${"y".repeat(5000)}`, { cause: { code: 7 } });
        },
      },
    });
    await untilState(id, "failed");
    expect((await jobRow(id)).last_error).toMatchObject({ name: "NotStorableError" });
    await untilState(long, "failed");
    const err = (await jobRow(long)).last_error as unknown as Record<string, unknown>;
    expect(err.name).toBe("RangeError");
    expect((err.message as string).length).toBe(1000);
    expect((err.message as string).startsWith("x\uFFFDyyy")).toBe(true);
    expect((err.stack as string).length).toBeLessThanOrEqual(4000);
    expect(err.cause).toEqual({ name: "NonError", message: '{"code":7}' });
  });
});

describe("leases and fencing", () => {
  test("a stale attempt's late completion is ignored; the new attempt's result stands", async () => {
    const q = t.queue();
    const id = await q.enqueue("lease.slow", {}, { queue: "stale" });
    let releaseFirst: () => void = () => {};
    const firstMayFinish = new Promise<void>((r) => {
      releaseFirst = r;
    });
    const seenA: WorkerEvent["kind"][] = [];
    // A is saturated (concurrency 1) and heartbeats rarely, so the lease the test expires below
    // stays expired until B reaps it: what a long GC pause or a partition looks like.
    const a = await startWorker({
      queues: ["stale"],
      leaseMs: 60_000,
      heartbeatIntervalMs: 30_000,
      handlers: {
        "lease.slow": async () => {
          await firstMayFinish;
          return { by: "A" };
        },
      },
      onEvent: (e) => seenA.push(e.kind),
    });
    await untilState(id, "active");
    await t.sql("update workhorse.job set lease_expires_at = now() - interval '1 millisecond' where id = $1", [id]);
    const b = await startWorker({ queues: ["stale"], handlers: { "lease.slow": () => ({ by: "B" }) } });
    await untilState(id, "succeeded");
    releaseFirst();
    await waitFor("A's answer to be fenced out", async () => seenA.includes("stale"));
    const row = await jobRow(id);
    expect(row.result).toEqual({ by: "B" });
    expect(row.attempt).toBe(2);
    expect(row.lease_owner?.startsWith(`${b.workerId}~`)).toBe(true);
    expect(await kinds(id)).toEqual(["enqueued", "claimed", "lease_expired", "claimed", "succeeded"]);
    const [, claimedByA, expired, claimedByB] = await events(id);
    const tokenA = claimedByA?.data.worker as string;
    expect(tokenA.startsWith(`${a.workerId}~`)).toBe(true);
    expect(expired?.data).toMatchObject({ attempt: 1, worker: tokenA });
    expect(claimedByB?.data).toMatchObject({ attempt: 2, worker: row.lease_owner });
    expect(seenA).toEqual(["claimed", "stale"]);
    expect(a.stats()).toMatchObject({ claimed: 1, succeeded: 0, stale: 1 });

    // The same fence, straight at the SQL: attempt 1's outcomes match nothing now.
    const late = await t.sql("select * from workhorse.complete_jobs($1::uuid[], $2::int[], $3::text[], $4::jsonb[])", [
      [id],
      [1],
      [tokenA],
      ['{"by":"A"}'],
    ]);
    expect(late).toEqual([]);
    const lateFail = await t.sql("select * from workhorse.fail_job($1, 1, $2, '{}'::jsonb, 'error', null)", [
      id,
      tokenA,
    ]);
    expect(lateFail).toEqual([]);
    // The right attempt number with another claim's token (a lost claim re-taken, or a reused worker id).
    const wrongOwner = await t.sql(
      "select * from workhorse.complete_jobs($1::uuid[], $2::int[], $3::text[], $4::jsonb[])",
      [[id], [2], [tokenA], ['{"by":"A"}']],
    );
    expect(wrongOwner).toEqual([]);
    expect((await jobRow(id)).result).toEqual({ by: "B" });
    expect(await kinds(id)).toEqual(["enqueued", "claimed", "lease_expired", "claimed", "succeeded"]);
  });

  test("a lapsed lease on the last attempt fails the job; otherwise the job is ready again with run_at kept", async () => {
    const q = t.queue();
    const last = await q.enqueue("lapse", {}, { queue: "reap", maxAttempts: 1 });
    const more = await q.enqueue("lapse", {}, { queue: "reap", maxAttempts: 2 });
    const runAtBefore = (await jobRow(more)).run_at;
    const claimed = await t.sql<{ id: string }>(
      "select id from workhorse.claim_jobs(array['reap'], null, 'gone~1', 10, 60000, false)",
    );
    expect(claimed.map((r) => r.id).sort()).toEqual([last, more].sort());
    await t.sql("update workhorse.job set lease_expires_at = now() - interval '1 second' where queue = 'reap'");
    const [reaped] = await t.sql<{ n: number }>("select workhorse.reap_expired_leases(array['reap'], 100) as n");
    expect(reaped?.n).toBe(2);
    expect(await jobRow(last)).toMatchObject({ state: "failed", attempt: 1, lease_owner: null });
    expect((await jobRow(last)).last_error).toMatchObject({ name: "LeaseExpired" });
    expect(await kinds(last)).toEqual(["enqueued", "claimed", "lease_expired", "failed"]);
    expect((await events(last)).at(-1)?.data).toMatchObject({ attempt: 1, reason: "max_attempts" });
    expect(await jobRow(more)).toMatchObject({ state: "ready", attempt: 1, lease_owner: null, run_at: runAtBefore });
    expect(await kinds(more)).toEqual(["enqueued", "claimed", "lease_expired"]);
  });

  test("a claim lost in a crash and re-taken by the same worker with the same attempt number is told apart", async () => {
    const q = t.queue();
    const id = await q.enqueue("lost.claim", {}, { queue: "lost-claim" });
    const runs: Array<{ attempt: number; signal: AbortSignal }> = [];
    const gates: Array<() => void> = [];
    const w = await startWorker({
      queues: ["lost-claim"],
      concurrency: 2,
      heartbeatIntervalMs: 50,
      handlers: {
        "lost.claim": async (_p: unknown, ctx: HandlerContext) => {
          const run = runs.push({ attempt: ctx.attempt, signal: ctx.signal });
          await new Promise<void>((r) => gates.push(r));
          return { run };
        },
      },
    });
    await waitFor("the first run", async () => runs.length === 1);
    // What a server crash that lost the (asynchronously committed) claim leaves behind.
    await t.sql(
      "update workhorse.job set state = 'ready', attempt = 0, lease_owner = null, lease_expires_at = null where id = $1",
      [id],
    );
    await waitFor("the second run", async () => runs.length === 2);
    expect(runs.map((r) => r.attempt)).toEqual([1, 1]);
    await waitFor("the first run to lose its lease", async () => runs[0]?.signal.aborted === true);
    expect(runs[0]?.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(runs[1]?.signal.aborted).toBe(false);
    for (const open of gates) open();
    await untilState(id, "succeeded");
    expect((await jobRow(id)).result).toEqual({ run: 2 });
    expect(await kinds(id)).toEqual(["enqueued", "claimed", "claimed", "succeeded"]);
    await waitFor("both runs to be accounted for", async () => w.stats().succeeded + w.stats().stale === 2);
    expect(w.stats()).toMatchObject({ claimed: 2, succeeded: 1, stale: 1 });
  });

  test("heartbeats keep a lease alive past its length; a lost lease fires the signal with LeaseLostError", async () => {
    const q = t.queue();
    const id = await q.enqueue("lease.long", {}, { queue: "heartbeat" });
    let ctxSeen: HandlerContext | null = null;
    let finish: () => void = () => {};
    const gate = new Promise<void>((r) => {
      finish = r;
    });
    await startWorker({
      queues: ["heartbeat"],
      leaseMs: 400,
      heartbeatIntervalMs: 100,
      // No reaping after the first poll: once the lease is taken over below, a reaper on a slow
      // machine could return the job and this worker claim it again (then it would succeed).
      reapIntervalMs: 3_600_000,
      handlers: {
        "lease.long": async (_p: unknown, ctx: HandlerContext) => {
          ctxSeen = ctx;
          await gate;
          return "done";
        },
      },
    });
    await untilState(id, "active");
    const first = (await jobRow(id)).lease_expires_at as Date;
    // Three lease lengths later the attempt still holds the job, with a later expiry.
    await new Promise((r) => setTimeout(r, 1200));
    const row = await jobRow(id);
    expect(row.state).toBe("active");
    expect(row.attempt).toBe(1);
    expect((row.lease_expires_at as Date).getTime()).toBeGreaterThan(first.getTime());
    const ctx = ctxSeen as unknown as HandlerContext;
    await ctx.heartbeat();
    // Someone else takes the job over (as a reaper plus another claimer would).
    await t.sql(
      "update workhorse.job set lease_owner = 'someone-else', attempt = 2, lease_expires_at = now() + interval '1 hour' where id = $1",
      [id],
    );
    await expect(ctx.heartbeat()).rejects.toBeInstanceOf(LeaseLostError);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBeInstanceOf(LeaseLostError);
    finish();
    await new Promise((r) => setTimeout(r, 100));
    expect((await jobRow(id)).state).toBe("active");
    expect(await kinds(id)).toEqual(["enqueued", "claimed"]);
  });
});

describe("deadlines and execution timeouts", () => {
  test("executionTimeoutMs fires the handler's signal and the attempt fails with execution_timed_out", async () => {
    const q = t.queue();
    const retried = await q.enqueue(
      "slow.forever",
      {},
      { queue: "timeouts", executionTimeoutMs: 150, maxAttempts: 2, retryPolicy: { type: "fixed", delayMs: 60_000 } },
    );
    const last = await q.enqueue("slow.forever", {}, { queue: "timeouts", executionTimeoutMs: 150, maxAttempts: 1 });
    const reasons: unknown[] = [];
    await startWorker({
      queues: ["timeouts"],
      concurrency: 2,
      handlers: {
        "slow.forever": (_p: unknown, ctx: HandlerContext) =>
          new Promise((_resolve, reject) => {
            ctx.signal.addEventListener("abort", () => {
              reasons.push(ctx.signal.reason);
              reject(ctx.signal.reason);
            });
          }),
      },
    });
    await untilState(last, "failed");
    await untilState(retried, "scheduled");
    expect(reasons).toHaveLength(2);
    for (const r of reasons) expect(r).toBeInstanceOf(ExecutionTimeoutError);
    expect(await kinds(last)).toEqual(["enqueued", "claimed", "execution_timed_out", "failed"]);
    expect((await events(last)).at(-1)?.data).toMatchObject({ reason: "max_attempts", cause: "execution_timed_out" });
    expect((await jobRow(last)).last_error).toMatchObject({ name: "ExecutionTimeoutError" });
    expect(await kinds(retried)).toEqual(["enqueued", "claimed", "execution_timed_out", "retry_scheduled"]);
  });

  test("a deadline passing mid-run fails the job with deadline_exceeded; an overdue job is never started", async () => {
    const q = t.queue();
    const overdue = await q.enqueue(
      "slow.forever",
      {},
      // 2 s ahead: the deadline must still be after the job's run_at (the server's now() at the insert),
      // and a loaded Citus cluster took more than 50 ms to insert it.
      { queue: "deadlines-late", deadline: new Date(Date.now() + 2000), maxAttempts: 5 },
    );
    let started = 0;
    const reasons: unknown[] = [];
    const handler = (_p: unknown, ctx: HandlerContext) => {
      started++;
      ctx.signal.addEventListener("abort", () => reasons.push(ctx.signal.reason));
      return new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
    };
    // The worker is up (and woken by the enqueue) before the clock starts on a 1 s deadline.
    const early = await startWorker({ queues: ["deadlines"], handlers: { "slow.forever": handler } });
    const runningDeadline = new Date(Date.now() + 1000);
    const running = await q.enqueue(
      "slow.forever",
      {},
      { queue: "deadlines", deadline: runningDeadline, maxAttempts: 5 },
    );
    await untilState(running, "failed");
    expect(await kinds(running)).toEqual(["enqueued", "claimed", "deadline_exceeded", "failed"]);
    expect((await events(running)).at(-1)?.data).toMatchObject({ reason: "deadline_exceeded", attempt: 1 });
    expect((await jobRow(running)).last_error).toMatchObject({
      name: "DeadlineExceededError",
      message: `The job's deadline (${runningDeadline.toISOString()}) passed.`,
      code: "DEADLINE_EXCEEDED",
    });
    expect(early.stats().failed).toBe(1);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(DeadlineExceededError);

    await waitFor(
      "the deadline to pass",
      async () => (await t.sql("select now() > deadline as past from workhorse.job where id = $1", [overdue]))[0]?.past,
    );
    const late = await startWorker({ queues: ["deadlines-late"], handlers: { "slow.forever": handler } });
    await untilState(overdue, "failed");
    expect(started).toBe(1);
    expect(await kinds(overdue)).toEqual(["enqueued", "deadline_exceeded", "failed"]);
    expect((await jobRow(overdue)).attempt).toBe(0);
    // One cause, one name and one message format (one dead-letter group), counted by the worker too.
    const overdueJob = await q.getJob(overdue);
    expect((await jobRow(overdue)).last_error).toEqual({
      name: "DeadlineExceededError",
      message: `The job's deadline (${overdueJob?.deadline?.toISOString()}) passed.`,
      code: "DEADLINE_EXCEEDED",
    });
    await waitFor("the late worker's stats", async () => late.stats().failed === 1);
  });

  test("a retry that would land after the deadline fails the job with deadline_exceeded instead", async () => {
    const q = t.queue();
    const id = await q.enqueue(
      "fail.once",
      {},
      {
        queue: "deadline-retry",
        deadline: new Date(Date.now() + 60_000),
        retryPolicy: { type: "fixed", delayMs: 120_000 },
      },
    );
    await startWorker({
      queues: ["deadline-retry"],
      handlers: {
        "fail.once": () => {
          throw new Error("nope");
        },
      },
    });
    await untilState(id, "failed");
    expect(await kinds(id)).toEqual(["enqueued", "claimed", "deadline_exceeded", "failed"]);
    expect((await jobRow(id)).last_error).toMatchObject({ message: "nope" });
  });
});

describe("checkpoints", () => {
  test("a checkpointed stage runs once; a later attempt gets its stored value back", async () => {
    const q = t.queue();
    const id = await q.enqueue(
      "stages",
      { order: "A-1" },
      { queue: "checkpoints", retryPolicy: { type: "fixed", delayMs: 0 } },
    );
    const charged: number[] = [];
    const shipped: number[] = [];
    await startWorker({
      queues: ["checkpoints"],
      handlers: {
        stages: async (p: { order: string }, ctx: HandlerContext) => {
          const charge = await ctx.checkpoint("charge", async () => {
            charged.push(ctx.attempt);
            return { chargeId: `ch_${p.order}`, at: new Date(0) };
          });
          const nothing = await ctx.checkpoint("note", () => undefined);
          if (ctx.attempt === 1) throw new Error("shipping API down");
          shipped.push(ctx.attempt);
          return { charge, nothing };
        },
      },
    });
    await untilState(id, "succeeded");
    expect(charged).toEqual([1]);
    expect(shipped).toEqual([2]);
    // The value is what JSON keeps of it, on the first attempt and the second alike.
    expect((await jobRow(id)).result).toEqual({
      charge: { chargeId: "ch_A-1", at: "1970-01-01T00:00:00.000Z" },
      nothing: null,
    });
    expect(await kinds(id)).toEqual([
      "enqueued",
      "claimed",
      "checkpoint_saved",
      "checkpoint_saved",
      "retry_scheduled",
      "claimed",
      "succeeded",
    ]);
    const rows = await t.sql(
      "select name, attempt, value from workhorse.job_checkpoint where job_id = $1 order by name",
      [id],
    );
    expect(rows).toEqual([
      { name: "charge", attempt: 1, value: { chargeId: "ch_A-1", at: "1970-01-01T00:00:00.000Z" } },
      { name: "note", attempt: 1, value: null },
    ]);
  });
});

describe("keys and states", () => {
  test("claiming, retrying and finishing leave the binding alone: a replay after success returns the same job", async () => {
    const q = t.queue();
    const opts = {
      queue: "bound",
      retryPolicy: { type: "fixed" as const, delayMs: 0 },
      idempotency: { key: "capture:INV-77", scope: "invoice-capture", ttlMs: 3_600_000 },
    };
    const first = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-77" }, opts);
    expect(first.outcome).toBe("accepted");
    const before = await q.findBinding({ key: "capture:INV-77", scope: "invoice-capture" });
    await startWorker({
      queues: ["bound"],
      handlers: {
        "invoice.capture": async (_p: unknown, ctx: HandlerContext) => {
          if (ctx.attempt === 1) throw new Error("PSP timeout");
          const mid = await q.findBinding({ key: "capture:INV-77", scope: "invoice-capture" });
          return { bindingJob: mid?.jobId };
        },
      },
    });
    await untilState(first.jobId, "succeeded");
    expect((await jobRow(first.jobId)).result).toEqual({ bindingJob: first.jobId });
    const replay = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-77" }, opts);
    expect(replay).toMatchObject({ jobId: first.jobId, outcome: "replayed" });
    const after = await q.findBinding({ key: "capture:INV-77", scope: "invoice-capture" });
    expect(after).toEqual(before);
    expect(await t.count("job", "type = 'invoice.capture' and queue = 'bound'")).toBe(1);
    expect(await kinds(first.jobId)).toEqual(["enqueued", "claimed", "retry_scheduled", "claimed", "succeeded"]);
  });
});

describe("shutdown", () => {
  test("stop waits for running handlers, then releases the ones past the grace period uncounted", async () => {
    const q = t.queue();
    const quick = await q.enqueue("stop.quick", {}, { queue: "stopping" });
    const stuck = await q.enqueue("stop.stuck", {}, { queue: "stopping" });
    let quickMayFinish: () => void = () => {};
    const quickGate = new Promise<void>((r) => {
      quickMayFinish = r;
    });
    const reasons: unknown[] = [];
    const w = await startWorker({
      queues: ["stopping"],
      concurrency: 2,
      handlers: {
        "stop.quick": async () => {
          await quickGate;
          return "finished during grace";
        },
        "stop.stuck": (_p: unknown, ctx: HandlerContext) =>
          new Promise((_resolve, reject) =>
            ctx.signal.addEventListener("abort", () => {
              reasons.push(ctx.signal.reason);
              reject(ctx.signal.reason);
            }),
          ),
      },
    });
    await untilState(quick, "active");
    await untilState(stuck, "active");
    const stopped = w.stop({ graceMs: 300 });
    quickMayFinish();
    await stopped;
    expect((await jobRow(quick)).state).toBe("succeeded");
    const row = await jobRow(stuck);
    expect(row.state).toBe("ready");
    expect(row.attempt).toBe(0);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(WorkerStoppingError);
    expect((reasons[0] as WorkerStoppingError).graceMs).toBe(300);
    expect((reasons[0] as Error).message).toContain("300 ms grace period ran out");
    expect(await kinds(stuck)).toEqual(["enqueued", "claimed", "released"]);
    expect(w.stats()).toMatchObject({ claimed: 2, succeeded: 1, released: 1, running: 0 });
  });
});

/**
 * The worker runtime (docs/worker.md): claims due jobs with leases, runs their handlers, heartbeats, and
 * records fenced outcomes. Delivery is at least once: a handler may run again after a crash, a
 * lost lease or a lost acknowledgement, so handlers must tolerate repeats (checkpoints help).
 */
import type pg from "pg";
import {
  DeadlineExceededError,
  ExecutionTimeoutError,
  JobCanceledError,
  LeaseLostError,
  NotStorableError,
  WorkerConfigError,
  WorkerStoppingError,
} from "../errors";
import { type ErrorSummary, isTransientDbError, summarizeError, toJsonText } from "./error-summary";
import { Listener } from "./listener";
import { workerSettings } from "./settings";
import * as sql from "./sql";
import { longTimeout, sleep } from "./timing";
import type {
  ClaimedJob,
  FailureCause,
  HandlerContext,
  JobHandler,
  WorkerEvent,
  WorkerOptions,
  WorkerStats,
} from "./types";

export type { ClaimedJob, FailureCause, HandlerContext, JobHandler, WorkerEvent, WorkerOptions, WorkerStats };

type StopCause = "execution_timed_out" | "deadline_exceeded" | "lease_lost" | "shutdown" | "canceled";

/** What became of one completion write: recorded, fenced out (stale), or refused for this job alone. */
type CompleteOutcome = "recorded" | "stale" | { refused: unknown };

interface Running {
  key: string;
  job: ClaimedJob;
  controller: AbortController;
  cause: StopCause | null;
  /** The handler returned or threw (or was abandoned): lease loss no longer matters to it. */
  settled: boolean;
  startedAt: number;
}

const COMPLETE_BATCH = 500;

/** A refused write's reason in words (the driver error's message, bounded by the error summary). */
function describeRefusal(err: unknown): string {
  const summary = summarizeError(err);
  return summary.code ? `${summary.message} (SQLSTATE ${summary.code})` : summary.message;
}

/**
 * Runs jobs from PostgreSQL.
 *
 * ```ts
 * const worker = new Worker({
 *   pool, queues: ["billing"], concurrency: 4,
 *   handlers: {
 *     "invoice.capture": async (payload, ctx) => {
 *       const charge = await ctx.checkpoint("charge", () => psp.charge(payload, { idempotencyKey: ctx.jobId }));
 *       return { chargeId: charge.id };
 *     },
 *   },
 * });
 * await worker.start();
 * // ...
 * await worker.stop({ graceMs: 10_000 });
 * ```
 *
 * Claiming: `workhorse.claim_jobs` takes due `scheduled`/`ready` jobs oldest `run_at` first with
 * `FOR UPDATE SKIP LOCKED` and sets the lease in the same statement. Wake-ups come from
 * `LISTEN workhorse_jobs` (a dedicated connection, reconnected with backoff) and a poll every
 * `pollIntervalMs`. Outcomes are fenced by (job id, attempt, worker id).
 */
export class Worker {
  readonly workerId: string;
  private readonly pool: pg.Pool;
  private readonly queues: string[];
  private readonly handlers: Map<string, JobHandler<unknown>>;
  private readonly types: string[] | null;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly heartbeatIntervalMs: number;
  private readonly pollIntervalMs: number;
  private readonly reapIntervalMs: number;
  private readonly abortGraceMs: number;
  private readonly maxResultBytes: number;
  private readonly defaultPolicyJson: string;
  private readonly listenEnabled: boolean;
  private readonly onEvent: (e: WorkerEvent) => void;
  private readonly onError: (e: Error) => void;

  private state: "idle" | "running" | "stopping" | "stopped" = "idle";
  /** Attempts this worker holds: handler running, or its outcome being written. */
  private readonly running = new Map<string, Running>();
  /** Attempts whose handler is running (what `concurrency` bounds). */
  private busy = 0;
  /** Finished attempts whose outcome is not written yet, at most; then claiming pauses. */
  private readonly maxPendingOutcomes: number;
  private readonly done = new Map<string, Promise<void>>();
  private wanted = true;
  private wakeUp: (() => void) | null = null;
  private loopDone: Promise<void> = Promise.resolve();
  private lastReap = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private heartbeating = false;
  private giveUp = false;
  private completeQueue: Array<{ r: Running; result: string; resolve: (outcome: CompleteOutcome) => void }> = [];
  private completing = false;
  private listener: Listener | null = null;
  private stopping: Promise<void> | null = null;
  private readonly counters: Omit<WorkerStats, "running"> = {
    claimed: 0,
    succeeded: 0,
    retried: 0,
    failed: 0,
    stale: 0,
    released: 0,
    canceled: 0,
  };
  private readonly onPoolError = (err: Error) => this.report(err);
  /** Claim calls so far, from a random start: the `<claim>` part of lease tokens. */
  private claimSeq = Math.floor(Math.random() * 2 ** 40);

  /** A lease token for one claim call (see `ClaimedJob.leaseOwner`). */
  private leaseToken(): string {
    this.claimSeq++;
    return `${this.workerId}~${this.claimSeq.toString(36)}`;
  }

  /** @throws WorkerConfigError an option is missing or out of range */
  constructor(options: WorkerOptions) {
    const settings = workerSettings(options);
    this.pool = settings.pool;
    this.queues = settings.queues;
    this.handlers = settings.handlers;
    this.types = settings.types;
    this.concurrency = settings.concurrency;
    this.maxPendingOutcomes = Math.max(this.concurrency, 32);
    this.leaseMs = settings.leaseMs;
    this.heartbeatIntervalMs = settings.heartbeatIntervalMs;
    this.pollIntervalMs = settings.pollIntervalMs;
    this.reapIntervalMs = settings.reapIntervalMs;
    this.abortGraceMs = settings.abortGraceMs;
    this.maxResultBytes = settings.maxResultBytes;
    this.defaultPolicyJson = settings.defaultPolicyJson;
    this.workerId = settings.workerId;
    this.listenEnabled = options.listen ?? true;
    const onEvent = options.onEvent;
    this.onEvent = onEvent
      ? (e) => {
          try {
            onEvent(e);
          } catch (err) {
            this.report(err);
          }
        }
      : () => {};
    this.onError = options.onError ?? ((e) => console.warn(`[workhorse worker ${this.workerId}] ${e.message}`));
  }

  /** Starts claiming. Resolves once the loop runs (the LISTEN connection comes up in the background). */
  async start(): Promise<void> {
    if (this.state !== "idle") throw new WorkerConfigError("start", `cannot start a worker that is ${this.state}`);
    this.state = "running";
    this.pool.on("error", this.onPoolError);
    if (this.listenEnabled) {
      this.listener = new Listener(
        this.pool,
        (queue) => {
          if (this.queues.includes(queue)) this.want();
        },
        () => this.want(),
        (err) => this.report(err),
      );
      this.listener.start();
    }
    this.pollTimer = setInterval(() => this.want(), this.pollIntervalMs);
    this.heartbeatTimer = setInterval(() => void this.heartbeatAll(), this.heartbeatIntervalMs);
    this.heartbeatTimer.unref();
    this.loopDone = this.loop();
  }

  /**
   * Stops claiming, waits up to `graceMs` (default 30,000) for running attempts, then fires their
   * signals (`WorkerStoppingError`), waits up to `abortGraceMs`, and releases what is still running
   * back to `ready` without counting the attempt. Never ends the pool.
   */
  stop(options: { graceMs?: number } = {}): Promise<void> {
    if (this.stopping) return this.stopping;
    const graceMs = options.graceMs ?? 30_000;
    this.stopping = this.shutdown(graceMs);
    return this.stopping;
  }

  private async shutdown(graceMs: number): Promise<void> {
    if (this.state === "idle") {
      this.state = "stopped";
      return;
    }
    this.state = "stopping";
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    this.kick();
    await this.loopDone;
    await this.listener?.stop();
    const allDone = () => Promise.all([...this.done.values()]).then(() => {});
    if (this.done.size > 0) await Promise.race([allDone(), sleep(graceMs)]);
    for (const r of this.running.values()) this.interrupt(r, "shutdown", new WorkerStoppingError());
    if (this.done.size > 0) await Promise.race([allDone(), sleep(this.abortGraceMs + 5000)]);
    this.giveUp = true; // outcome writes still retrying (database down) stop trying; leases lapse instead
    await allDone();
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    this.pool.off("error", this.onPoolError);
    this.state = "stopped";
  }

  /** Counters since start. */
  stats(): WorkerStats {
    return { ...this.counters, running: this.busy };
  }

  private report(err: unknown): void {
    try {
      this.onError(err instanceof Error ? err : new Error(String(err)));
    } catch {
      // An error reporter that throws must not take the worker down.
    }
  }

  private want(): void {
    this.wanted = true;
    this.kick();
  }

  private kick(): void {
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }

  private waitForKick(ms?: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      this.wakeUp = () => {
        if (timer) clearTimeout(timer);
        resolve();
      };
      if (ms !== undefined) timer = setTimeout(() => this.kick(), ms);
    });
  }

  private async loop(): Promise<void> {
    let backoff = 0;
    while (this.state === "running") {
      // A slot is a running handler. Attempts whose outcome is still being written do not hold one
      // (so the next claims overlap that write and completions batch up), but only so many may pile up.
      const free = this.concurrency - this.busy;
      const writing = this.running.size - this.busy;
      if (free <= 0 || !this.wanted || writing >= this.maxPendingOutcomes) {
        await this.waitForKick();
        continue;
      }
      this.wanted = false;
      const reap = Date.now() - this.lastReap >= this.reapIntervalMs;
      let jobs: ClaimedJob[];
      try {
        jobs = await sql.claimJobs(this.pool, {
          queues: this.queues,
          types: this.types,
          leaseToken: this.leaseToken(),
          limit: free,
          leaseMs: this.leaseMs,
          reap,
        });
        if (reap) this.lastReap = Date.now();
        backoff = 0;
      } catch (err) {
        this.report(err);
        this.wanted = true;
        backoff = Math.min(backoff ? backoff * 2 : 100, 5000);
        await this.waitForKick(backoff);
        continue;
      }
      for (const job of jobs) {
        this.counters.claimed++;
        if (this.state !== "running") {
          // stop() began while the claim was in flight: give the job straight back.
          const key = `${job.id}:${job.leaseOwner}`;
          this.done.set(
            key,
            this.releaseUnstarted(job).finally(() => this.done.delete(key)),
          );
          continue;
        }
        this.launch(job);
      }
      if (jobs.length === free) this.wanted = true;
    }
  }

  private async releaseUnstarted(job: ClaimedJob): Promise<void> {
    await this.persist(() => sql.releaseJob(this.pool, job, "shutdown")).catch((err) => this.report(err));
  }

  private launch(job: ClaimedJob): void {
    // Keyed by lease token, not attempt: after a claim lost in a server crash the same worker can
    // claim the job again with the same attempt number while the first run is still winding down.
    const key = `${job.id}:${job.leaseOwner}`;
    const r: Running = {
      key,
      job,
      controller: new AbortController(),
      cause: null,
      settled: false,
      startedAt: Date.now(),
    };
    this.running.set(key, r);
    this.busy++;
    this.onEvent({ kind: "claimed", job });
    const p = this.execute(r)
      .catch((err) => this.report(err))
      .finally(() => {
        if (!r.settled) {
          r.settled = true;
          this.busy--;
        }
        this.running.delete(key);
        this.done.delete(key);
        this.kick();
      });
    this.done.set(key, p);
  }

  private interrupt(r: Running, cause: StopCause, reason: Error): void {
    if (r.cause) return;
    r.cause = cause;
    r.controller.abort(reason);
  }

  private loseLease(r: Running): void {
    if (r.cause === "lease_lost") return;
    if (!r.settled) this.onEvent({ kind: "lease_lost", job: r.job });
    r.cause = null; // lease loss overrides a timeout: the attempt may not record anything now
    this.interrupt(r, "lease_lost", new LeaseLostError(r.job.id, r.job.attempt));
  }

  private async execute(r: Running): Promise<void> {
    const { job } = r;
    const handler = this.handlers.get(job.type) ?? this.handlers.get("*");
    const cancels: Array<() => void> = [];
    if (job.executionTimeoutMs !== null) {
      const ms = job.executionTimeoutMs;
      cancels.push(longTimeout(() => this.interrupt(r, "execution_timed_out", new ExecutionTimeoutError(ms)), ms));
    }
    if (job.deadline) {
      const deadline = job.deadline;
      cancels.push(
        longTimeout(
          () => this.interrupt(r, "deadline_exceeded", new DeadlineExceededError(deadline)),
          deadline.getTime() - Date.now(),
        ),
      );
    }
    // Settles abortGraceMs after the signal fires: a handler that ignores its signal cannot hold
    // the slot (or stop()) forever.
    const abandoned = new Promise<"abandoned">((resolve) => {
      const onAbort = () => {
        const t = setTimeout(() => resolve("abandoned"), this.abortGraceMs);
        t.unref();
      };
      if (r.controller.signal.aborted) onAbort();
      else r.controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
    const run: Promise<Outcome> = (async () => {
      if (!handler) throw new Error(`no handler for job type ${JSON.stringify(job.type)}`);
      return handler(job.payload, this.context(r));
    })().then(
      (value) => ({ ok: true, value }),
      (error) => ({ ok: false, error }),
    );
    const outcome = await Promise.race([run, abandoned]);
    r.settled = true;
    this.busy--;
    this.kick();
    for (const cancel of cancels) cancel();
    if (outcome === "abandoned") {
      this.onEvent({ kind: "abandoned", job });
      this.report(new Error(`handler for job ${job.id} (attempt ${job.attempt}) ignored its abort signal`));
    }

    const cause = r.cause;
    if (cause === "lease_lost") {
      this.counters.stale++;
      this.onEvent({ kind: "stale", job });
      return;
    }
    if (cause === "shutdown" && (outcome === "abandoned" || !outcome.ok)) {
      await this.release(r);
      return;
    }
    if (cause === "execution_timed_out" || cause === "deadline_exceeded") {
      const reason = r.controller.signal.reason as Error;
      await this.fail(r, summarizeError(reason), cause);
      return;
    }
    if (cause === "canceled" && (outcome === "abandoned" || !outcome.ok)) {
      await this.recordCanceled(r);
      return;
    }
    if (outcome === "abandoned") return; // unreachable: only an aborted attempt can be abandoned
    if (!outcome.ok) {
      await this.fail(r, summarizeError(outcome.error), "error");
      return;
    }
    let text: string;
    try {
      text = toJsonText(outcome.value, `the result of job ${job.id}`, this.maxResultBytes);
    } catch (err) {
      await this.fail(r, summarizeError(err), "error");
      return;
    }
    const written = await this.complete(r, text);
    if (written === "recorded") {
      this.counters.succeeded++;
      this.onEvent({ kind: "succeeded", job, durationMs: Date.now() - r.startedAt });
    } else if (written === "stale") {
      this.counters.stale++;
      this.onEvent({ kind: "stale", job });
    } else {
      // PostgreSQL refused this result (it passed our checks, so the rules disagree somewhere):
      // the attempt fails with the reason instead of waiting for its lease to lapse.
      await this.fail(
        r,
        summarizeError(new NotStorableError(`the result of job ${job.id}`, describeRefusal(written.refused))),
        "error",
      );
    }
  }

  private context(r: Running): HandlerContext {
    const { job } = r;
    return {
      jobId: job.id,
      attempt: job.attempt,
      signal: r.controller.signal,
      job,
      workerId: this.workerId,
      heartbeat: async () => {
        if (r.cause === "lease_lost") throw new LeaseLostError(job.id, job.attempt);
        const rows = await sql.heartbeat(this.pool, [job], this.leaseMs);
        if (rows.length === 0) {
          this.loseLease(r);
          throw new LeaseLostError(job.id, job.attempt);
        }
        if (rows[0]?.cancelRequested) this.interrupt(r, "canceled", new JobCanceledError(job.id));
      },
      checkpoint: async <T>(name: string, fn: () => T | Promise<T>): Promise<T> => {
        if (typeof name !== "string" || name.length < 1 || name.length > 128 || /\p{Cc}/u.test(name)) {
          throw new TypeError("checkpoint name must be 1..128 characters without control characters");
        }
        if (typeof fn !== "function") throw new TypeError("checkpoint(name, fn): fn must be a function");
        if (r.cause === "lease_lost") throw new LeaseLostError(job.id, job.attempt);
        const stored = await this.retrying(r, () => sql.readCheckpoint(this.pool, job.id, name));
        if (stored) return stored.value as T;
        const valueJson = toJsonText(await fn(), `checkpoint ${JSON.stringify(name)}`, this.maxResultBytes);
        const row = await this.retrying(r, () =>
          sql.saveCheckpoint(this.pool, job, { name, valueJson, leaseMs: this.leaseMs }),
        );
        if (!row || row.status === "stale") {
          this.loseLease(r);
          throw new LeaseLostError(job.id, job.attempt);
        }
        if (row.status === "saved") this.onEvent({ kind: "checkpoint_saved", job, name });
        return row.value as T;
      },
    };
  }

  /** Retries a handler-side query through transient failures until the attempt is told to stop. */
  private async retrying<T>(r: Running, op: () => Promise<T>): Promise<T> {
    let delay = 100;
    for (;;) {
      try {
        return await op();
      } catch (err) {
        if (!isTransientDbError(err) || r.controller.signal.aborted || this.giveUp) throw err;
        this.report(err);
        await sleep(delay);
        delay = Math.min(delay * 2, 2000);
      }
    }
  }

  /**
   * Runs an outcome write until it lands. Transient failures (connection lost, server restarting)
   * are retried with backoff: the write is fenced, so repeating it is safe. Gives up when the error
   * is not transient or stop() ran out of patience; the lease then lapses and the job runs again.
   */
  private async persist<T>(op: () => Promise<T>): Promise<T> {
    let delay = 100;
    for (;;) {
      try {
        return await op();
      } catch (err) {
        if (!isTransientDbError(err) || this.giveUp) throw err;
        this.report(err);
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  private complete(r: Running, result: string): Promise<CompleteOutcome> {
    return new Promise((resolve) => {
      this.completeQueue.push({ r, result, resolve });
      if (!this.completing) void this.drainCompletions();
    });
  }

  /**
   * One completion statement in flight at a time, carrying everything that finished meanwhile. If
   * PostgreSQL refuses the batch (not a lost connection, which `persist` retries), each job is
   * written alone, so one bad row costs no other job anything.
   */
  private async drainCompletions(): Promise<void> {
    this.completing = true;
    try {
      while (this.completeQueue.length > 0) {
        const batch = this.completeQueue.splice(0, COMPLETE_BATCH);
        try {
          const recorded = await this.writeCompletions(batch);
          for (const b of batch) b.resolve(recorded.has(b.r.job.id) ? "recorded" : "stale");
        } catch (err) {
          if (batch.length === 1 || isTransientDbError(err)) {
            this.report(err);
            for (const b of batch)
              b.resolve(batch.length === 1 && !isTransientDbError(err) ? { refused: err } : "stale");
            continue;
          }
          for (const b of batch) {
            try {
              const recorded = await this.writeCompletions([b]);
              b.resolve(recorded.has(b.r.job.id) ? "recorded" : "stale");
            } catch (one) {
              this.report(one);
              b.resolve(isTransientDbError(one) ? "stale" : { refused: one });
            }
          }
        }
      }
    } finally {
      this.completing = false;
    }
  }

  /** `workhorse.complete_jobs` for these attempts; the ids whose outcome was recorded (fenced by lease). */
  private async writeCompletions(batch: Array<{ r: Running; result: string }>): Promise<Set<string>> {
    return this.persist(() =>
      sql.completeJobs(
        this.pool,
        batch.map((b) => ({ attempt: b.r.job, result: b.result })),
      ),
    );
  }

  /** Records an operator-canceled attempt as `canceled` (fenced: a stale attempt changes nothing). */
  private async recordCanceled(r: Running): Promise<void> {
    const { job } = r;
    try {
      if (await this.persist(() => sql.cancelAttempt(this.pool, job))) {
        this.counters.canceled++;
        this.onEvent({ kind: "canceled", job });
      } else {
        this.counters.stale++;
        this.onEvent({ kind: "stale", job });
      }
    } catch (err) {
      this.report(err);
    }
  }

  private async fail(r: Running, error: ErrorSummary, cause: FailureCause): Promise<void> {
    const { job } = r;
    let row: Awaited<ReturnType<typeof sql.failJob>>;
    try {
      row = await this.persist(() =>
        sql.failJob(this.pool, job, {
          errorJson: JSON.stringify(error),
          cause,
          defaultPolicyJson: this.defaultPolicyJson,
        }),
      );
    } catch (err) {
      this.report(err);
      return;
    }
    if (!row) {
      this.counters.stale++;
      this.onEvent({ kind: "stale", job });
    } else if (row.state === "failed") {
      this.counters.failed++;
      this.onEvent({ kind: "failed", job, cause, error });
    } else if (row.state === "canceled") {
      // An operator's cancel arrived before this worker's next heartbeat: the would-be retry became
      // `canceled` (the job's cancel trigger), and that is what happened.
      this.counters.canceled++;
      this.onEvent({ kind: "canceled", job });
    } else {
      this.counters.retried++;
      this.onEvent({
        kind: "retry_scheduled",
        job,
        cause,
        error,
        runAt: row.runAt as Date,
        delayMs: Number(row.delayMs),
      });
    }
  }

  private async release(r: Running): Promise<void> {
    const { job } = r;
    try {
      if (await this.persist(() => sql.releaseJob(this.pool, job, "shutdown"))) {
        this.counters.released++;
        this.onEvent({ kind: "released", job });
      }
    } catch (err) {
      this.report(err);
    }
  }

  /** One statement extends every running attempt's lease; attempts missing from the answer lost theirs. */
  private async heartbeatAll(): Promise<void> {
    if (this.heartbeating) return;
    const list = [...this.running.values()].filter((r) => r.cause !== "lease_lost");
    if (list.length === 0) return;
    this.heartbeating = true;
    try {
      const rows = await sql.heartbeat(
        this.pool,
        list.map((r) => r.job),
        this.leaseMs,
      );
      const held = new Set(rows.map((row) => `${row.id}:${row.leaseOwner}`));
      const canceled = new Set(rows.filter((row) => row.cancelRequested).map((row) => `${row.id}:${row.leaseOwner}`));
      for (const r of list) {
        // A settled attempt may be missing because its own outcome just landed; its write is fenced anyway.
        if (!held.has(r.key) && !r.settled) this.loseLease(r);
        else if (canceled.has(r.key) && !r.settled) this.interrupt(r, "canceled", new JobCanceledError(r.job.id));
      }
    } catch (err) {
      this.report(err);
    } finally {
      this.heartbeating = false;
    }
  }
}

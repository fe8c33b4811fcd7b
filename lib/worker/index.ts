/**
 * The worker runtime (docs/worker.md): claims due jobs with leases, runs their handlers, heartbeats, and
 * records fenced outcomes. Delivery is at least once: a handler may run again after a crash, a
 * lost lease or a lost acknowledgement, so handlers must tolerate repeats (checkpoints help).
 */
import {
  DeadlineExceededError,
  ExecutionTimeoutError,
  LeaseLostError,
  NotStorableError,
  WorkerConfigError,
  WorkerStoppingError,
} from "../enqueue/errors";
import * as sql from "../store/worker/claims";
import { type AttemptDeps, handlerContext, heartbeatAttempts, type Running, type StopCause } from "./attempt";
import { CheckIns } from "./check-in";
import { summarizeError, toJsonText } from "./error-summary";
import { Listener } from "./listener";
import { describeRefusal, OutcomeWriter } from "./outcomes";
import { type WorkerSettings, workerSettings } from "./settings";
import { WorkerTelemetry } from "./telemetry";
import { longTimeout, sleep, untilDone, zeroCounters } from "./timing";
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
  /** The options, checked and defaulted. */
  private readonly settings: WorkerSettings;
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
  private listener: Listener | null = null;
  private stopping: Promise<void> | null = null;
  private readonly counters = zeroCounters();
  private readonly onPoolError = (err: Error) => this.report(err);
  private readonly outcomes: OutcomeWriter;
  private readonly telemetry: WorkerTelemetry;
  private readonly checkIns: CheckIns;
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
    this.settings = settings;
    this.maxPendingOutcomes = Math.max(this.settings.concurrency, 32);
    this.workerId = settings.workerId;
    this.listenEnabled = options.listen ?? true;
    const onEvent = options.onEvent;
    this.telemetry = new WorkerTelemetry(options.telemetry, this.workerId);
    this.onEvent = (e) => {
      this.telemetry.observe(e);
      try {
        onEvent?.(e);
      } catch (err) {
        this.report(err);
      }
    };
    this.onError = options.onError ?? ((e) => console.warn(`[workhorse worker ${this.workerId}] ${e.message}`));
    this.outcomes = new OutcomeWriter({
      pool: this.settings.pool,
      defaultPolicyJson: settings.defaultPolicyJson,
      counters: this.counters,
      onEvent: this.onEvent,
      report: (err) => this.report(err),
      givenUp: () => this.giveUp,
    });
    const held = () => ({ running: this.busy, jobIds: [...this.running.values()].map((r) => r.job.id) });
    this.checkIns = new CheckIns({ ...settings, snapshot: held, report: (err) => this.report(err) });
  }

  /** Starts claiming. Resolves once the loop runs (the LISTEN connection comes up in the background). */
  async start(): Promise<void> {
    if (this.state !== "idle") throw new WorkerConfigError("start", `cannot start a worker that is ${this.state}`);
    this.state = "running";
    this.settings.pool.on("error", this.onPoolError);
    if (this.listenEnabled) {
      this.listener = new Listener(
        this.settings.pool,
        (queue) => {
          if (this.settings.queues.includes(queue)) this.want();
        },
        () => this.want(),
        (err) => this.report(err),
      );
      this.listener.start();
    }
    this.pollTimer = setInterval(() => this.want(), this.settings.pollIntervalMs);
    this.heartbeatTimer = setInterval(() => void this.heartbeatAll(), this.settings.heartbeatIntervalMs);
    this.heartbeatTimer.unref();
    this.checkIns.start();
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
    this.checkIns.stopping();
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    this.kick();
    await this.loopDone;
    await this.listener?.stop();
    const allDone = () => Promise.all([...this.done.values()]).then(() => {});
    if (this.done.size > 0) await Promise.race([allDone(), sleep(graceMs)]);
    for (const r of this.running.values()) this.interrupt(r, "shutdown", new WorkerStoppingError(graceMs));
    if (this.done.size > 0) await Promise.race([allDone(), sleep(this.settings.abortGraceMs + 5000)]);
    this.giveUp = true; // outcome writes still retrying (database down) stop trying; leases lapse instead
    await allDone();
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    await this.checkIns.stop();
    this.settings.pool.off("error", this.onPoolError);
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
      const free = this.settings.concurrency - this.busy;
      const writing = this.running.size - this.busy;
      if (free <= 0 || !this.wanted || writing >= this.maxPendingOutcomes) {
        await this.waitForKick();
        continue;
      }
      this.wanted = false;
      const reap = Date.now() - this.lastReap >= this.settings.reapIntervalMs;
      let jobs: ClaimedJob[];
      try {
        const claim = await sql.claimJobs(this.settings.pool, {
          queues: this.settings.queues,
          types: this.settings.types,
          leaseToken: this.leaseToken(),
          limit: free,
          leaseMs: this.settings.leaseMs,
          reap,
        });
        jobs = claim.jobs;
        // Jobs this claim failed because their deadline passed before they ran: failures too.
        this.counters.failed += claim.overdue;
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
            this.outcomes.releaseUnstarted(job).finally(() => this.done.delete(key)),
          );
          continue;
        }
        this.launch(job);
      }
      if (jobs.length === free) this.wanted = true;
    }
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
        this.telemetry.settle(job);
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
    const handler = this.settings.handlers.get(job.type) ?? this.settings.handlers.get("*");
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
        const t = setTimeout(() => resolve("abandoned"), this.settings.abortGraceMs);
        t.unref();
      };
      if (r.controller.signal.aborted) onAbort();
      else r.controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
    const run: Promise<Outcome> = (async () => {
      if (!handler) throw new Error(`no handler for job type ${JSON.stringify(job.type)}`);
      return this.telemetry.within(job, () => handler(job.payload, handlerContext(r, this.attemptDeps())));
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
      await this.outcomes.release(job);
      return;
    }
    if (cause === "execution_timed_out" || cause === "deadline_exceeded") {
      const reason = r.controller.signal.reason as Error;
      await this.outcomes.fail(job, summarizeError(reason), cause);
      return;
    }
    if (cause === "canceled" && (outcome === "abandoned" || !outcome.ok)) {
      await this.outcomes.canceled(job);
      return;
    }
    if (outcome === "abandoned") return; // unreachable: only an aborted attempt can be abandoned
    if (!outcome.ok) {
      await this.outcomes.fail(job, summarizeError(outcome.error), "error");
      return;
    }
    let text: string;
    try {
      text = toJsonText(outcome.value, `the result of job ${job.id}`, this.settings.maxResultBytes);
    } catch (err) {
      await this.outcomes.fail(job, summarizeError(err), "error");
      return;
    }
    const written = await this.outcomes.complete(job, text);
    if (written === "recorded") {
      this.counters.succeeded++;
      this.onEvent({ kind: "succeeded", job, durationMs: Date.now() - r.startedAt });
    } else if (written === "stale") {
      this.counters.stale++;
      this.onEvent({ kind: "stale", job });
    } else {
      // PostgreSQL refused this result (it passed our checks, so the rules disagree somewhere):
      // the attempt fails with the reason instead of waiting for its lease to lapse.
      await this.outcomes.fail(
        job,
        summarizeError(new NotStorableError(`the result of job ${job.id}`, describeRefusal(written.refused))),
        "error",
      );
    }
  }

  private attemptDeps(): AttemptDeps {
    return {
      pool: this.settings.pool,
      workerId: this.workerId,
      leaseMs: this.settings.leaseMs,
      maxResultBytes: this.settings.maxResultBytes,
      onEvent: this.onEvent,
      loseLease: (x) => this.loseLease(x),
      interrupt: (x, cause, reason) => this.interrupt(x, cause, reason),
      retrying: (x, op) => this.retrying(x, op),
    };
  }

  /** Retries a handler-side query through transient failures until the attempt is told to stop. */
  private retrying<T>(r: Running, op: () => Promise<T>): Promise<T> {
    return untilDone(op, {
      maxDelayMs: 2000,
      stop: () => r.controller.signal.aborted || this.giveUp,
      report: (err) => this.report(err),
    });
  }

  /** One statement extends every running attempt's lease (skipped while the last one is in flight). */
  private async heartbeatAll(): Promise<void> {
    if (this.heartbeating) return;
    this.heartbeating = true;
    try {
      await heartbeatAttempts([...this.running.values()], this.attemptDeps());
    } catch (err) {
      this.report(err);
    } finally {
      this.heartbeating = false;
    }
  }
}

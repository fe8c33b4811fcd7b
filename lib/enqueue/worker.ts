/**
 * The worker runtime (docs/worker.md): claims due jobs with leases, runs their handlers, heartbeats, and
 * records fenced outcomes. Delivery is at least once: a handler may run again after a crash, a
 * lost lease or a lost acknowledgement, so handlers must tolerate repeats (checkpoints help).
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import pg from "pg";
import { JobCanceledError } from "./errors";
import { WAKE_CHANNEL } from "./queue";
import type { NormalizedRetryPolicy, RetryPolicy } from "./types";
import { LIMITS, normalizeRetryPolicy } from "./validate";
import {
  DEFAULT_RETRY_POLICY,
  DeadlineExceededError,
  type ErrorSummary,
  ExecutionTimeoutError,
  isTransientDbError,
  LeaseLostError,
  longTimeout,
  NotStorableError,
  sleep,
  summarizeError,
  toJsonText,
  WorkerConfigError,
  WorkerStoppingError,
} from "./worker-support";

/** A job as its handler receives it: the claimed attempt. */
export interface ClaimedJob {
  id: string;
  queue: string;
  type: string;
  payload: unknown;
  /** 1-based attempt number of this run. */
  attempt: number;
  maxAttempts: number;
  runAt: Date;
  deadline: Date | null;
  executionTimeoutMs: number | null;
  concurrencyKey: string | null;
  tags: string[];
  createdAt: Date;
  /** When the lease lapses unless heartbeats extend it (PostgreSQL's clock). */
  leaseExpiresAt: Date;
  /** The lease token stored as `lease_owner`: `<workerId>~<claim>`, new for every claim call. */
  leaseOwner: string;
}

/** What a handler gets besides the payload. */
export interface HandlerContext {
  readonly jobId: string;
  /** 1-based attempt number. */
  readonly attempt: number;
  /**
   * Fires when the attempt should stop: `ExecutionTimeoutError` (executionTimeoutMs elapsed),
   * `DeadlineExceededError` (the job's deadline passed), `LeaseLostError` (another attempt owns the
   * job now), `WorkerStoppingError` (shutdown grace ran out) or `JobCanceledError` (an operator
   * canceled the job; seen at the next heartbeat). `signal.reason` says which.
   */
  readonly signal: AbortSignal;
  readonly job: ClaimedJob;
  readonly workerId: string;
  /**
   * Extends this attempt's lease now (the worker also heartbeats on its own every
   * `heartbeatIntervalMs`). Throws `LeaseLostError` when the attempt no longer holds the job.
   */
  heartbeat(): Promise<void>;
  /**
   * Runs `fn` once per job: its JSON result is stored in `workhorse.job_checkpoint` (with a
   * `checkpoint_saved` event, in one transaction), and a later attempt gets the stored value back
   * without running `fn`. The value is returned as JSON round-trips it (`undefined` -> `null`, Dates
   * -> strings), the same on every attempt. Crash window: if the process dies after `fn`'s external
   * effect but before the checkpoint commits, the next attempt runs `fn` again, so give the effect
   * its own idempotency key (e.g. `${jobId}:${name}`). Names: 1..128 characters.
   * Throws `LeaseLostError` (nothing stored) when the attempt lost the job meanwhile.
   */
  checkpoint<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
}

/**
 * Runs one attempt. Resolve with a JSON-serialisable result (stored; `undefined` -> `null`), or
 * throw to fail the attempt (retried per the job's retry policy until maxAttempts).
 */
export type JobHandler<P = unknown> = (payload: P, ctx: HandlerContext) => unknown;

/** Why an attempt failed. */
export type FailureCause = "error" | "execution_timed_out" | "deadline_exceeded";

/** What the worker reports about its own attempts (`onEvent`); the durable record is `workhorse.job_event`. */
export type WorkerEvent =
  | { kind: "claimed"; job: ClaimedJob }
  | { kind: "succeeded"; job: ClaimedJob; durationMs: number }
  | {
      kind: "retry_scheduled";
      job: ClaimedJob;
      cause: FailureCause;
      error: ErrorSummary;
      runAt: Date;
      delayMs: number;
    }
  | { kind: "failed"; job: ClaimedJob; cause: FailureCause; error: ErrorSummary }
  | { kind: "checkpoint_saved"; job: ClaimedJob; name: string }
  /** Another attempt owns the job now; this one's outcome will not be recorded. */
  | { kind: "lease_lost"; job: ClaimedJob }
  /** The attempt finished but its outcome was fenced out (the lease had been lost). */
  | { kind: "stale"; job: ClaimedJob }
  /** Shutdown grace ran out: the attempt was given back uncounted. */
  | { kind: "released"; job: ClaimedJob }
  /** After its signal fired the handler did not settle within `abortGraceMs`; its slot was freed anyway. */
  | { kind: "abandoned"; job: ClaimedJob }
  /** An operator canceled the job while it ran; the attempt was recorded `canceled` (no retry). */
  | { kind: "canceled"; job: ClaimedJob };

export interface WorkerOptions {
  /** Caller-owned pool; `stop()` never ends it. The worker adds one dedicated LISTEN connection. */
  pool: pg.Pool;
  /** Queues to take jobs from. Default `["default"]`. */
  queues?: string[];
  /** Handlers by job `type`; `"*"` catches every other type. Only types with a handler are claimed. */
  handlers: Record<string, JobHandler<never>>;
  /** Attempts run at once, 1..1000. Default 1. */
  concurrency?: number;
  /** Prefix of the lease tokens stored as `lease_owner` (`<workerId>~<claim>`). Default `<host>/<pid>/<random>`. */
  workerId?: string;
  /** Lease length in ms, 200..86,400,000. Default 30,000. */
  leaseMs?: number;
  /** Heartbeat period in ms, below `leaseMs`. Default `leaseMs / 3`. */
  heartbeatIntervalMs?: number;
  /** Polling fallback in ms (a lost notification delays a job by at most this). Default 1,000. */
  pollIntervalMs?: number;
  /** How often this worker looks for lapsed leases, in ms. Default 1,000. */
  reapIntervalMs?: number;
  /** After a handler's signal fires, how long to wait for it to settle, in ms. Default 5,000. */
  abortGraceMs?: number;
  /**
   * Largest handler result (and checkpoint value) stored, in bytes of JSON, 2..268,435,456. Default
   * 1 MiB, as for payloads. A larger or unstorable result fails the attempt with `NotStorableError`.
   */
  maxResultBytes?: number;
  /** Retry policy for jobs enqueued without one. Default exponential: 1 s, x2, capped at 1 h. */
  defaultRetryPolicy?: RetryPolicy;
  /** LISTEN for wake-ups (`WAKE_CHANNEL`). Default true; false means polling only. */
  listen?: boolean;
  /** Called for every attempt transition this worker makes. Must not throw. */
  onEvent?: (event: WorkerEvent) => void;
  /** Unexpected errors (database outages while retrying, handler misbehaviour). Default: console.warn. */
  onError?: (error: Error) => void;
}

/** Counters since `start()`. */
export interface WorkerStats {
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  stale: number;
  released: number;
  canceled: number;
  running: number;
}

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

interface ClaimRow {
  id: string;
  queue: string;
  type: string;
  payload: unknown;
  attempt: number;
  max_attempts: number;
  run_at: Date;
  deadline: Date | null;
  execution_timeout_ms: string | null;
  concurrency_key: string | null;
  tags: string[];
  created_at: Date;
  lease_expires_at: Date;
  lease_owner: string;
}

const SQL = {
  claim: `select id, queue, type, payload, attempt, max_attempts, run_at, deadline, execution_timeout_ms,
                 concurrency_key, tags, created_at, lease_expires_at, $3::text as lease_owner
            from workhorse.claim_jobs($1::text[], $2::text[], $3::text, $4::integer, $5::integer, $6::boolean)`,
  heartbeat:
    "select id, lease_owner, cancel_requested from workhorse.heartbeat_jobs($1::uuid[], $2::integer[], $3::text[], $4::integer)",
  cancelAttempt: "select id from workhorse.cancel_attempt($1::uuid, $2::integer, $3::text)",
  complete: "select id from workhorse.complete_jobs($1::uuid[], $2::integer[], $3::text[], $4::jsonb[])",
  fail: "select state, run_at, delay_ms from workhorse.fail_job($1::uuid, $2::integer, $3::text, $4::jsonb, $5::text, $6::jsonb)",
  release: "select id from workhorse.release_jobs($1::uuid[], $2::integer[], $3::text[], $4::text)",
  readCheckpoint: "select value from workhorse.job_checkpoint where job_id = $1::uuid and name = $2::text",
  saveCheckpoint:
    "select status, value from workhorse.save_checkpoint($1::uuid, $2::integer, $3::text, $4::text, $5::jsonb, $6::integer)",
} as const;

const COMPLETE_BATCH = 500;

function int(option: string, value: number | undefined, fallback: number, min: number, max: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new WorkerConfigError(option, `must be an integer ${min}..${max} (got ${String(value)})`);
  }
  return v;
}

/** A refused write's reason in words (the driver error's message, bounded by the error summary). */
function describeRefusal(err: unknown): string {
  const summary = summarizeError(err);
  return summary.code ? `${summary.message} (SQLSTATE ${summary.code})` : summary.message;
}

function jobFromClaim(r: ClaimRow): ClaimedJob {
  return {
    id: r.id,
    queue: r.queue,
    type: r.type,
    payload: r.payload,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    runAt: r.run_at,
    deadline: r.deadline,
    executionTimeoutMs: r.execution_timeout_ms === null ? null : Number(r.execution_timeout_ms),
    concurrencyKey: r.concurrency_key,
    tags: r.tags,
    createdAt: r.created_at,
    leaseExpiresAt: r.lease_expires_at,
    leaseOwner: r.lease_owner,
  };
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
    if (!options || typeof options.pool?.connect !== "function")
      throw new WorkerConfigError("pool", "must be a pg.Pool");
    this.pool = options.pool;
    const queues = options.queues ?? ["default"];
    if (!Array.isArray(queues) || queues.length === 0 || queues.some((q) => typeof q !== "string" || !q)) {
      throw new WorkerConfigError("queues", "must be a non-empty array of queue names");
    }
    this.queues = [...new Set(queues)];
    if (!options.handlers || typeof options.handlers !== "object") {
      throw new WorkerConfigError("handlers", 'must map job types (or "*") to functions');
    }
    this.handlers = new Map();
    for (const [type, fn] of Object.entries(options.handlers)) {
      if (typeof fn !== "function") throw new WorkerConfigError(`handlers.${type}`, "must be a function");
      this.handlers.set(type, fn as JobHandler<unknown>);
    }
    if (this.handlers.size === 0) throw new WorkerConfigError("handlers", "must have at least one handler");
    this.types = this.handlers.has("*") ? null : [...this.handlers.keys()];
    this.concurrency = int("concurrency", options.concurrency, 1, 1, 1000);
    this.maxPendingOutcomes = Math.max(this.concurrency, 32);
    this.leaseMs = int("leaseMs", options.leaseMs, 30_000, 200, 86_400_000);
    this.heartbeatIntervalMs = int(
      "heartbeatIntervalMs",
      options.heartbeatIntervalMs,
      Math.floor(this.leaseMs / 3),
      10,
      this.leaseMs - 1,
    );
    this.pollIntervalMs = int("pollIntervalMs", options.pollIntervalMs, 1000, 10, 3_600_000);
    this.reapIntervalMs = int("reapIntervalMs", options.reapIntervalMs, 1000, 0, 3_600_000);
    this.abortGraceMs = int("abortGraceMs", options.abortGraceMs, 5000, 0, 3_600_000);
    this.maxResultBytes = int(
      "maxResultBytes",
      options.maxResultBytes,
      LIMITS.defaultPayloadBytes,
      2,
      256 * 1024 * 1024,
    );
    const policy: NormalizedRetryPolicy = options.defaultRetryPolicy
      ? (normalizeRetryPolicy(options.defaultRetryPolicy) as NormalizedRetryPolicy)
      : DEFAULT_RETRY_POLICY;
    for (const [k, v] of Object.entries(policy)) {
      if (!Number.isInteger(v) || v < 0 || v > 31_536_000_000) {
        throw new WorkerConfigError(`defaultRetryPolicy.${k}`, "must be an integer 0..31536000000");
      }
    }
    this.defaultPolicyJson = JSON.stringify(policy);
    this.workerId = options.workerId ?? `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
    if (typeof this.workerId !== "string" || this.workerId.length < 1 || this.workerId.length > 200) {
      throw new WorkerConfigError("workerId", "must be 1..200 characters");
    }
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
      let rows: ClaimRow[];
      try {
        const res = await this.pool.query<ClaimRow>({
          name: "workhorse_claim_jobs",
          text: SQL.claim,
          values: [this.queues, this.types, this.leaseToken(), free, this.leaseMs, reap],
        });
        rows = res.rows;
        if (reap) this.lastReap = Date.now();
        backoff = 0;
      } catch (err) {
        this.report(err);
        this.wanted = true;
        backoff = Math.min(backoff ? backoff * 2 : 100, 5000);
        await this.waitForKick(backoff);
        continue;
      }
      for (const row of rows) {
        const job = jobFromClaim(row);
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
      if (rows.length === free) this.wanted = true;
    }
  }

  private async releaseUnstarted(job: ClaimedJob): Promise<void> {
    await this.persist(() =>
      this.pool.query({ text: SQL.release, values: [[job.id], [job.attempt], [job.leaseOwner], "shutdown"] }),
    ).catch((err) => this.report(err));
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
        const { rows } = await this.pool.query<{ id: string; cancel_requested: boolean }>({
          name: "workhorse_heartbeat_jobs",
          text: SQL.heartbeat,
          values: [[job.id], [job.attempt], [job.leaseOwner], this.leaseMs],
        });
        if (rows.length === 0) {
          this.loseLease(r);
          throw new LeaseLostError(job.id, job.attempt);
        }
        if (rows[0]?.cancel_requested) this.interrupt(r, "canceled", new JobCanceledError(job.id));
      },
      checkpoint: async <T>(name: string, fn: () => T | Promise<T>): Promise<T> => {
        if (typeof name !== "string" || name.length < 1 || name.length > 128 || /\p{Cc}/u.test(name)) {
          throw new TypeError("checkpoint name must be 1..128 characters without control characters");
        }
        if (typeof fn !== "function") throw new TypeError("checkpoint(name, fn): fn must be a function");
        if (r.cause === "lease_lost") throw new LeaseLostError(job.id, job.attempt);
        const stored = await this.retrying(r, () =>
          this.pool.query<{ value: unknown }>({
            name: "workhorse_read_checkpoint",
            text: SQL.readCheckpoint,
            values: [job.id, name],
          }),
        );
        if (stored.rows[0]) return stored.rows[0].value as T;
        const text = toJsonText(await fn(), `checkpoint ${JSON.stringify(name)}`, this.maxResultBytes);
        const saved = await this.retrying(r, () =>
          this.pool.query<{ status: "saved" | "exists" | "stale"; value: unknown }>({
            name: "workhorse_save_checkpoint",
            text: SQL.saveCheckpoint,
            values: [job.id, job.attempt, job.leaseOwner, name, text, this.leaseMs],
          }),
        );
        const row = saved.rows[0];
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
    const { rows } = await this.persist(() =>
      this.pool.query<{ id: string }>({
        name: "workhorse_complete_jobs",
        text: SQL.complete,
        values: [
          batch.map((b) => b.r.job.id),
          batch.map((b) => b.r.job.attempt),
          batch.map((b) => b.r.job.leaseOwner),
          batch.map((b) => b.result),
        ],
      }),
    );
    return new Set(rows.map((row) => row.id));
  }

  /** Records an operator-canceled attempt as `canceled` (fenced: a stale attempt changes nothing). */
  private async recordCanceled(r: Running): Promise<void> {
    const { job } = r;
    try {
      const { rows } = await this.persist(() =>
        this.pool.query({
          name: "workhorse_cancel_attempt",
          text: SQL.cancelAttempt,
          values: [job.id, job.attempt, job.leaseOwner],
        }),
      );
      if (rows.length > 0) {
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
    let rows: Array<{ state: string; run_at: Date | null; delay_ms: string | null }>;
    try {
      rows = (
        await this.persist(() =>
          this.pool.query<{ state: string; run_at: Date | null; delay_ms: string | null }>({
            name: "workhorse_fail_job",
            text: SQL.fail,
            values: [job.id, job.attempt, job.leaseOwner, JSON.stringify(error), cause, this.defaultPolicyJson],
          }),
        )
      ).rows;
    } catch (err) {
      this.report(err);
      return;
    }
    const row = rows[0];
    if (!row) {
      this.counters.stale++;
      this.onEvent({ kind: "stale", job });
    } else if (row.state === "failed") {
      this.counters.failed++;
      this.onEvent({ kind: "failed", job, cause, error });
    } else {
      this.counters.retried++;
      this.onEvent({
        kind: "retry_scheduled",
        job,
        cause,
        error,
        runAt: row.run_at as Date,
        delayMs: Number(row.delay_ms),
      });
    }
  }

  private async release(r: Running): Promise<void> {
    const { job } = r;
    try {
      const { rows } = await this.persist(() =>
        this.pool.query({ text: SQL.release, values: [[job.id], [job.attempt], [job.leaseOwner], "shutdown"] }),
      );
      if (rows.length > 0) {
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
      const { rows } = await this.pool.query<{ id: string; lease_owner: string; cancel_requested: boolean }>({
        name: "workhorse_heartbeat_jobs",
        text: SQL.heartbeat,
        values: [
          list.map((r) => r.job.id),
          list.map((r) => r.job.attempt),
          list.map((r) => r.job.leaseOwner),
          this.leaseMs,
        ],
      });
      const held = new Set(rows.map((row) => `${row.id}:${row.lease_owner}`));
      const canceled = new Set(rows.filter((row) => row.cancel_requested).map((row) => `${row.id}:${row.lease_owner}`));
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

/** The dedicated LISTEN connection, reconnected with backoff; `onReconnect` covers notifications missed meanwhile. */
class Listener {
  private client: pg.Client | null = null;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private backoff = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly onWake: (queue: string) => void,
    private readonly onReconnect: () => void,
    private readonly onError: (err: Error) => void,
  ) {}

  start(): void {
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client(this.pool.options);
    this.client = client;
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      if (err && !this.stopped) this.onError(new Error(`LISTEN connection lost: ${err.message}`, { cause: err }));
      if (this.client === client) this.client = null;
      client.end().catch(() => {});
      this.scheduleReconnect();
    };
    client.on("error", (err) => onLost(err));
    client.on("end", () => onLost());
    client.on("notification", (msg) => {
      if (msg.channel === WAKE_CHANNEL && msg.payload) this.onWake(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`listen ${WAKE_CHANNEL}`);
      this.backoff = 0;
      this.onReconnect();
    } catch (err) {
      onLost(err as Error);
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer) return;
    this.backoff = Math.min(this.backoff ? this.backoff * 2 : 100, 5000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, this.backoff);
    this.retryTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }
}

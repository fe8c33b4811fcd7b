/** The worker's public types: what a handler receives and what `new Worker(options)` accepts. */

import type pg from "pg";
import type { TelemetryOptions } from "../enqueue/telemetry";
import type { ClaimedJob, RetryPolicy } from "../enqueue/types";

export type { ClaimedJob };

import type { ErrorSummary } from "./error-summary";

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
  /**
   * Metrics and spans (docs/observability.md): by default through the global OpenTelemetry
   * providers, read when the Worker is made. `scopes` is not used by the worker.
   */
  telemetry?: TelemetryOptions;
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

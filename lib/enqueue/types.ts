import type { EnqueueOutcome, JobState, KeyMode, NonReplaceableReason, ObservationOutcome } from "./vocabulary";

// The word lists (states, modes, outcomes, reasons) live in vocabulary.ts.
export type { EnqueueOutcome, JobState, KeyMode, NonReplaceableReason };

/** Retry policy as given by the caller. Integers, delays in milliseconds, 0..31,536,000,000. */
export type RetryPolicy =
  | { type: "fixed"; delayMs: number }
  | { type: "exponential"; initialDelayMs: number; multiplier: number; maxDelayMs: number };

/** The one shape every retry policy is stored and compared in. A fixed delay has multiplier 1. */
export interface NormalizedRetryPolicy {
  initialDelayMs: number;
  multiplier: number;
  maxDelayMs: number;
}

/**
 * How long a key is held besides (or instead of) its TTL (docs/enqueue.md, "Key lifetimes"):
 * `"finished"`: released in the transaction that makes its job terminal (succeeded, dead-lettered,
 * canceled, purged; an attempt that will be retried keeps it); `"started"`: released in the
 * transaction in which a worker claims its job (or when the job ends without starting). A lapsed
 * lease releases nothing. Part of the fingerprint (a differing value conflicts naming `holdUntil`).
 */
export type KeyLifetime = "finished" | "started";

/**
 * Scoped idempotency key. `key`: 1..512 UTF-8 bytes (hashed here, never stored or sent);
 * `scope`: 1..256 UTF-8 bytes, default `"default"`; `ttlMs`: 1..31,536,000,000, default 86,400,000
 * (24 h) without `holdUntil`; with `holdUntil` it has no default: given, the key is also released
 * when it runs out; omitted, only the job's state change releases it.
 */
export interface IdempotencyOptions {
  key: string;
  scope?: string;
  ttlMs?: number;
  holdUntil?: KeyLifetime;
}

/**
 * Debounce: repeats inside the window replace the pending job's definition in place (same id).
 * `key`/`scope` as for idempotency. `windowMs`: 1..31,536,000,000; the job runs when the window
 * closes (no `runAt` with debounce). `schedule`: `reset` (default) moves the run time and the window
 * to now + `windowMs` on every replacement; `preserve` keeps both. `maxWaitMs` (>= `windowMs`,
 * <= 31,536,000,000): `reset` never moves the run time past the first acceptance + `maxWaitMs`.
 * Outcomes: `accepted`, `replaced`, `non_replaceable` (see `NonReplaceableReason`). docs/decisions.md.
 */
export interface DebounceOptions {
  key: string;
  scope?: string;
  windowMs: number;
  schedule?: "reset" | "preserve";
  maxWaitMs?: number;
  /**
   * The key's lifetime (`KeyLifetime`): held until the job starts or finishes instead of until the
   * window closes, and replaceable while the job is pending. With `"started"`: one running job plus
   * one queued, later requests replacing the queued one.
   */
  holdUntil?: KeyLifetime;
}

/**
 * Throttle: at most one job per key per window. `windowMs`: 1..31,536,000,000 (the binding's
 * lifetime); `runAt` is allowed and is part of the fingerprint. An equivalent request inside the
 * window is `coalesced` (the first job's id, whatever its state, nothing written); a different one
 * is an `EnqueueIdempotencyConflictError`.
 */
export interface ThrottleOptions {
  key: string;
  scope?: string;
  windowMs: number;
}

/** Every option is optional; unknown names are rejected. At most one of idempotency/debounce/throttle. */
export interface EnqueueOptions {
  /** 1..128 characters, no control characters. Default `"default"`. */
  queue?: string;
  /** When the job becomes runnable. Omitted: now (and omitted from the fingerprint). */
  runAt?: Date;
  /** Integer 1..1000, default 25. */
  maxAttempts?: number;
  retryPolicy?: RetryPolicy;
  /** After this instant the job fails with `deadline_exceeded`. Must be after `runAt`. */
  deadline?: Date;
  /** Integer 1..31,536,000,000 ms per attempt. */
  executionTimeoutMs?: number;
  /** At most one active job per concurrency key. 1..256 characters. */
  concurrencyKey?: string;
  /** At most 32 tags of 1..128 characters; duplicates removed, sorted bytewise. */
  tags?: string[];
  idempotency?: IdempotencyOptions;
  debounce?: DebounceOptions;
  throttle?: ThrottleOptions;
  /** Label written with this call's observations (not part of the fingerprint). 1..128 characters. */
  source?: string;
}

export interface EnqueueRequest {
  type: string;
  payload: unknown;
  options?: EnqueueOptions;
}

/**
 * What PostgreSQL decided for one request; `jobId` is always the job that holds (or now holds) the
 * key. `reason` exists only on `non_replaceable`, so `if (r.outcome === "non_replaceable") r.reason`.
 */
export type EnqueueResult =
  | ({ jobId: string; outcome: "accepted" | "replayed" | "replaced" | "coalesced" } & ResultKey)
  | ({ jobId: string; outcome: "non_replaceable"; reason: NonReplaceableReason } & ResultKey);

/**
 * What operators may see of a keyed request's key, as the core computed it for the request (the
 * same values as `describeKey`): present on keyed requests' results only, never the key itself.
 */
export interface ResultKey {
  /** The first min(8, floor(n / 3)) code points, then "…" (never the tail). */
  keyPreview?: string;
  /** The first 12 hex characters of the keyed hash. */
  keyDigest?: string;
  /** The key's length in Unicode code points. */
  keyLength?: number;
}

/** How a job is to be run, as its request set it (defaults filled): shared by `Job` and the normalised request. */
export interface JobDefinition {
  queue: string;
  type: string;
  maxAttempts: number;
  retryPolicy: NormalizedRetryPolicy | null;
  deadline: Date | null;
  executionTimeoutMs: number | null;
  concurrencyKey: string | null;
  tags: string[];
}

export interface Job extends JobDefinition {
  id: string;
  payload: unknown;
  state: JobState;
  runAt: Date;
  attempt: number;
  createdAt: Date;
  updatedAt: Date;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  result: unknown;
  lastError: unknown;
  purgedAt: Date | null;
  purgedBy: string | null;
  purgeReason: string | null;
  /** When an operator asked to cancel this job (at once for pending jobs; at the next heartbeat for active ones). */
  cancelRequestedAt: Date | null;
  cancelRequestedBy: string | null;
  cancelReason: string | null;
  /** The failed job this one was redriven from, or null. */
  redrivenFrom: string | null;
  /** Jobs redriven from this one, oldest first (filled by `getJob` and `listDeadLetters`). */
  redriveJobIds: string[];
}

/** A binding as operators may see it: never the raw key. */
export interface BindingInfo {
  scope: string;
  keyPreview: string;
  keyDigest: string;
  keyLength: number;
  jobId: string;
  mode: KeyMode;
  requestDigest: string;
  /** Debounce only (null otherwise): `reset` or `preserve`. */
  schedule: "reset" | "preserve" | null;
  /** Debounce only: the cap on resets; null without one. The max-wait deadline is `createdAt + maxWaitMs`. */
  maxWaitMs: number | null;
  /** Null for a key held by its lifetime alone (no time limit). */
  ttlMs: number | null;
  /** The key's lifetime, or null (held for `ttlMs` only). */
  holdUntil: KeyLifetime | null;
  createdAt: Date;
  /** Null when the key has no time limit (a lifetime without `ttlMs`). */
  expiresAt: Date | null;
  /** `expiresAt <= now()` by PostgreSQL's clock: awaiting cleanup, no longer owning the key. */
  expired: boolean;
}

export interface PurgeResult {
  purged: number;
  releasedBindings: number;
}

/** Who purges and why: both required; stored in the tombstone, the event and the audit log. */
export interface OperatorContext {
  actor: string;
  reason: string;
}

/** Jobs an operator acts on: 1..1,000 job ids (duplicates count once). */
export interface JobSelection {
  jobIds: string[];
}

/**
 * What a bulk action did not change, by reason: the job's state (`succeeded`, `active`, ...) or
 * `missing` (no such job), each with a count.
 */
export type Unchanged = Partial<Record<JobState | "missing", number>>;

export interface CancelResult {
  /** `scheduled`/`ready` jobs now `canceled`. */
  canceled: number;
  /** `active` jobs flagged; their worker stops them at its next heartbeat. */
  cancelRequested: number;
  unchanged: Unchanged;
}

export interface PurgeJobsResult {
  /** `ready`/`scheduled` jobs now tombstones (state `purged`). */
  purged: number;
  /** Bindings those jobs owned, released. */
  releasedBindings: number;
  unchanged: Unchanged;
}

export interface DeleteFailedJobsResult {
  /** `failed` jobs deleted, with their events, checkpoints and redrive requests. */
  deleted: number;
  /** Live bindings released first (only with `releaseKeys: true`). */
  releasedBindings: number;
  /** Failed jobs kept because they own a live key binding (a replay would find no job): pass `releaseKeys: true` to delete them too. */
  keptOwningLiveKey: string[];
  unchanged: Unchanged;
}

export interface RunNowResult {
  /** `scheduled` jobs now `ready`, due now. */
  updated: number;
  unchanged: Unchanged;
}

export interface RedriveRequest {
  /** Failed jobs to redrive: 1..1,000 ids. */
  jobIds: string[];
  /** The caller's id for this redrive, 1..512 UTF-8 bytes; only its keyed hash is stored. */
  requestId: string;
  /** Who asks (the audit actor), 1..200 characters. */
  requestedBy: string;
  /** Why, 1..1,000 characters. */
  reason: string;
  /** Say what would be redriven, write nothing. */
  dryRun?: boolean;
  /**
   * Redrive sources that an earlier request (another `requestId`) already redrove. Without it such a
   * source is left alone and answered `already_redriven`, naming the job the earlier redrive made.
   */
  again?: boolean;
}

/**
 * `already_redriven`: the source was redriven before by another request and `again` was not set;
 * nothing was written for it, and `jobId` is the job its latest redrive made.
 */
export type RedriveStatus = "redriven" | "replayed" | "already_redriven" | "eligible" | "not_found" | "not_failed";

/**
 * What a redrive did with the key of a source that had one (`redriven` entries only):
 * `moved`: its live binding names the new job now; `bound`: its key had been released with it (a key
 * lifetime) and was free, and is bound to the new job as it was; `taken`: released, and another job
 * holds it now, so the new job runs without it; `expired`: its binding had expired, so the new job
 * runs without it.
 */
export type RedriveKeyStatus = "moved" | "bound" | "taken" | "expired";

export interface RedriveResult {
  /**
   * One entry per distinct source job, in input order. `jobId`: the redriven job (for `redriven`,
   * `replayed`), or the job the earlier redrive made (for `already_redriven`).
   */
  results: Array<{ sourceJobId: string; status: RedriveStatus; jobId?: string; key?: RedriveKeyStatus }>;
}

export interface DeadLetterQuery {
  queue?: string;
  type?: string;
  /** `lastError.name` of the failed job, e.g. `TypeError`, `LeaseExpired`, `DeadlineExceededError`. */
  errorName?: string;
  finishedAfter?: Date;
  finishedBefore?: Date;
  /** `nextCursor` of the previous page. */
  cursor?: string;
  /** 1..500, default 50. */
  limit?: number;
  /** Also list failed jobs that were redriven already (left out by default). */
  includeRedriven?: boolean;
}

export interface DeadLetterPage {
  /** Failed jobs, newest `finishedAt` first (then id, descending). */
  jobs: Job[];
  /** Null on the last page. */
  nextCursor: string | null;
}

export interface PruneFinishedJobsResult {
  jobsDeleted: number;
  eventsDeleted: number;
}

/** What a maintenance run removed or wrote, by task (each task's count is also recorded in `workhorse.maintenance_run`). */
export interface MaintenanceResult {
  expiredBindingsDeleted: number;
  observationsDeleted: number;
  /** Active jobs whose lease had lapsed (their worker died or stalled), given back for a new attempt or failed. */
  expiredLeasesReaped: number;
  /** Terminal jobs past retention deleted (with their events); never one owning a live key. */
  finishedJobsDeleted: number;
  /** Heartbeat rows of workers gone (no check-in) for longer than `GONE_WORKER_RETENTION_MS`. */
  goneWorkersDeleted: number;
  /** Rows of the hourly run-time rollup written (finished hours not rolled up yet). */
  runTimeRowsRolledUp: number;
}

/** One replay, conflict, coalesce or non-replaceable decision, as operators see it (docs/enqueue.md, observations). */
export interface Observation {
  at: Date;
  outcome: ObservationOutcome;
  reason?: string | null;
  queue: string;
  type: string;
  scope: string;
  keyPreview: string;
  keyDigest: string;
  keyLength: number;
  jobId: string | null;
  conflictingFields?: string[] | null;
  payloadPaths?: string[] | null;
  storedRequestDigest?: string | null;
  rejectedRequestDigest?: string | null;
  source?: string | null;
  /**
   * How many identical decisions this is (>= 1; default 1): the observation log stores decisions
   * alike in every field above but `at`, recorded within one flush, as one row.
   */
  count?: number;
  /** When the last of `count` identical decisions was made; null for a single decision. */
  lastAt?: Date | null;
}

/** An observation as `workhorse.enqueue_observation` holds it: every field present, `null` when absent. */
export type StoredObservation = { id: string } & { [K in keyof Observation]-?: Exclude<Observation[K], undefined> };

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
  /**
   * The W3C `traceparent` of the enqueue call that made the job, when that call ran in a sampled
   * OpenTelemetry span (docs/observability.md, "Traces"); the attempt's span links to it. Else null.
   */
  traceContext: string | null;
}

/** What operators may see of a scoped key (`describeKey`): never the key or the installation secret. */
export interface KeyDescription {
  scope: string;
  /** Bounded, redacted preview (docs/enqueue.md, "Keys are never stored"). */
  keyPreview: string;
  /** Hex digest of this installation's keyed hash. */
  keyDigest: string;
  /** Length of the raw key in code points. */
  keyLength: number;
  /** The digest the key had before the HMAC upgrade (bindings and events made before it carry that one). */
  legacyKeyDigest: string;
}

/** A paused queue (`listPausedQueues`): who paused it, when and why. */
export interface PausedQueue {
  queue: string;
  pausedAt: Date;
  pausedBy: string;
  reason: string;
}

/** One `workhorse.operator_audit` row (`recordOperatorAction`); `actor` comes from an authenticated session. */
export interface OperatorAuditEntry {
  actor: string;
  /** Such as `enqueue_test`. */
  action: string;
  /** Such as `job:<id>` or `queue:billing`. */
  target: string;
  reason?: string | null;
  /** Any JSON object. */
  result: Record<string, unknown>;
}

/** `deleteFailedJobs`'s context: `releaseKeys` also deletes failed jobs that still own a live key binding. */
export type DeleteFailedJobsContext = OperatorContext & { releaseKeys?: boolean };

/** `pruneFinishedJobs`: `olderThanMs` integer ms (at least 60,000; default 7 days), `limit` 1..100,000 per statement. */
export interface PruneFinishedJobsOptions {
  olderThanMs?: number;
  limit?: number;
  maxBatches?: number;
}

/** `runMaintenance`: who started the pass, and the retentions it applies (integer ms). */
export interface MaintenanceOptions {
  trigger?: "schedule" | "manual";
  observationRetentionMs?: number;
  jobRetentionMs?: number;
}

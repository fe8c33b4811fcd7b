/**
 * Wire types of the console: what server components hand to client components and what the
 * `app/api/*` routes return as JSON. Dates are ISO strings; no raw idempotency key ever appears here.
 * Shared by server and client code (type-only imports on the client).
 */

// The core's client-safe entry (no pg, no node:crypto), unlike lib/enqueue's index.
import {
  JOB_STATES,
  type JobState,
  KEY_MODES,
  type KeyMode,
  OBSERVATION_OUTCOMES,
  type ObservationOutcome,
  type StoredObservation,
} from "@workhorse/core/client";
import type { CheckIn } from "@/lib/store/console/core";
import type { AuditRow } from "@/lib/store/console/lists";

export type { ObservationOutcome };
export { JOB_STATES, OBSERVATION_OUTCOMES };
export const BINDING_MODES = KEY_MODES;
export type JobStateName = JobState;
type BindingMode = KeyMode;

export interface JobRowDto {
  id: string;
  queue: string;
  type: string;
  state: JobStateName;
  attempt: number;
  maxAttempts: number;
  tags: string[];
  runAt: string;
  createdAt: string;
  /** An error is recorded (last_error): with state scheduled, the job is retrying. */
  hasError: boolean;
}

/** The jobs list's filter as its URL's search params carry it (`error` and `due` are "1" when set). */
export interface JobFilterParams {
  queue?: string;
  type?: string;
  state?: string;
  tag?: string;
  error?: string;
  due?: string;
}

/** A count for a tab: exact, or the planner's estimate. */
export interface TabCount {
  value: number;
  estimated: boolean;
}

export interface Page<T> {
  rows: T[];
  /** Cursor for the next (older / later) page, or null at the end. */
  next: string | null;
  /** Cursor for the previous (newer / earlier) page, or null at the start. */
  prev: string | null;
  /** Server clock when read (ISO), so countdowns are not skewed by the browser's clock. */
  now: string;
  /**
   * Lists that read a bounded number of entries per page: how many this page looked at when it
   * stopped at that bound with fewer matches than a page (`next` goes on from there).
   */
  stoppedAfter?: number;
}

export interface BindingDto {
  scope: string;
  keyPreview: string;
  keyDigest: string;
  keyLength: number;
  jobId: string;
  mode: BindingMode;
  requestDigest: string;
  /** The TTL (idempotency) or the window (debounce, throttle); null for a key held by its lifetime alone. */
  ttlMs: number | null;
  /** The key's lifetime (docs/enqueue.md, "Key lifetimes"): held until its job finishes or starts. */
  holdUntil: "finished" | "started" | null;
  /** When the key was bound: for debounce, the first acceptance (a replacement never moves it). */
  createdAt: string;
  /** Null when the key has no time limit (a lifetime without a TTL). */
  expiresAt: string | null;
  expired: boolean;
  /** Debounce only: `reset` or `preserve`. */
  schedule: "reset" | "preserve" | null;
  /** Debounce only: the cap on resets (ms), null without one. */
  maxWaitMs: number | null;
  /** Debounce with a cap: first acceptance + maxWaitMs (ISO); the job never runs later than this. */
  maxWaitUntil: string | null;
}

interface JobEventDto {
  seq: number;
  at: string;
  kind: string;
  data: unknown;
}

/** A job's page: its list row's fields (but `hasError`: the error itself is here) and the rest of the job. */
export interface JobDetailDto extends Omit<JobRowDto, "hasError"> {
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  deadline: string | null;
  executionTimeoutMs: number | null;
  concurrencyKey: string | null;
  retryPolicy: unknown;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  lastErrorJson: string | null;
  resultJson: string | null;
  purgedAt: string | null;
  purgedBy: string | null;
  purgeReason: string | null;
  /** An operator asked to cancel this job (for an active job: its worker stops it at the next heartbeat). */
  cancelRequestedAt: string | null;
  cancelRequestedBy: string | null;
  redrivenFrom: string | null;
  redriveJobIds: string[];
  binding: BindingDto | null;
  events: JobEventDto[];
  now: string;
}

/**
 * What the conflicts page lists: the observations (replayed, conflict, coalesced, non_replaceable)
 * and, beside them, debounce `replaced` decisions (from `debounced` job events).
 */
export const LISTED_OUTCOMES = [...OBSERVATION_OUTCOMES, "replaced"] as const;

/**
 * An observation as the core maps it (lib/store/rows.ts), its time as an ISO string. A `replaced`
 * row is a `debounced` job event: `storedRequestDigest` is the request it replaced,
 * `rejectedRequestDigest` the one that replaced it; no source; `keyPreview` and `keyLength` come from
 * the job row (kept after its binding is cleaned up).
 */
export type ObservationDto = Omit<StoredObservation, "at" | "outcome" | "lastAt"> & {
  at: string;
  outcome: (typeof LISTED_OUTCOMES)[number];
  /** The last of `count` identical decisions stored as one row; null for one decision. */
  lastAt: string | null;
};

/** An operator audit entry (lib/store/console/lists.ts), its time as an ISO string. */
export type AuditDto = Omit<AuditRow, "at"> & { at: string };

/** A capped count: `value` is exact unless `capped`, in which case there are at least `value`. */
export interface CappedCount {
  value: number;
  capped: boolean;
}

export interface OverviewDto {
  now: string;
  /** When the state x queue counts were computed (they are cached briefly; see lib/console/reads/overview.ts). */
  countsAsOf: string;
  byQueue: { queue: string; counts: Partial<Record<JobStateName, number>>; total: number }[];
  byState: Partial<Record<JobStateName, number>>;
  liveBindings: CappedCount;
  expiringWithinHour: CappedCount;
  expiredAwaitingCleanup: CappedCount;
}

interface MaintenanceRunDto {
  id: string;
  task: string;
  startedAt: string;
  finishedAt: string;
  removed: number;
  trigger: string;
}

export interface MaintenanceDto {
  now: string;
  runs: MaintenanceRunDto[];
  expiredAwaitingCleanup: CappedCount;
  oldestExpiredAt: string | null;
}

export const SERIES_WINDOWS = ["1h", "24h"] as const;
export type SeriesWindow = (typeof SERIES_WINDOWS)[number];

/** One minute of the health chart. `t` is the minute's start (ISO, UTC). */
export interface SeriesPoint {
  t: string;
  accepted: number;
  replayed: number;
  conflicts: number;
  /** Debounce repeats that replaced a pending job in place. */
  replaced: number;
  /** Throttle repeats answered with the window's job. */
  coalesced: number;
  /** Debounce repeats that could not replace the job (any reason). */
  nonReplaceable: number;
  succeeded: number;
  failed: number;
}

export type SeriesName = Exclude<keyof SeriesPoint, "t">;

export interface SeriesDto {
  window: SeriesWindow;
  queue: string | null;
  now: string;
  points: SeriesPoint[];
  totals: Record<SeriesName, number>;
}

export interface DigestLookupDto {
  digest: string;
  bindings: { binding: BindingDto; job: { state: JobStateName; queue: string; type: string } | null }[];
  /** False when there were more scopes than the walk visits (see lib/console/reads/digest.ts). */
  scopesSearchedAll: boolean;
  observations: ObservationDto[];
  /** False when the observation search hit its time limit. */
  observationsComplete: boolean;
  /** Purged jobs whose key had this digest: their purge released it (newest first, at most 5). */
  released: { jobId: string; scope: string; purgedAt: string }[];
  /** False when the search for purged jobs hit its time limit. */
  releasedComplete: boolean;
  now: string;
}

export interface QueueHealthDto {
  queue: string;
  /** Set while the queue is paused: workers claim nothing from it. */
  paused: { pausedBy: string; pausedAt: string; reason: string } | null;
  /** Jobs by state (as of the shared state counts, at most 15 s old). */
  counts: Partial<Record<JobStateName, number>>;
  /** Scheduled jobs with an error: a failed attempt waiting for its retry. Part of counts.scheduled. */
  retrying: number;
  total: number;
  /** Ready plus scheduled, counted now. */
  pending: CappedCount;
  /**
   * The pending jobs counted now, split as `/metrics` splits its depth: `ready` is due (run time now
   * or past, whatever the state column says: a due scheduled job is claimed like a ready one),
   * `scheduled` not due yet.
   */
  waiting: { ready: CappedCount; scheduled: CappedCount };
  /** Run time of the oldest job that is due and not started: its age is the queue's latency. */
  oldestDueAt: string | null;
  /** The soonest run time still in the future. */
  nextRunAt: string | null;
  /** Due for longer than OVERDUE_AFTER_MS and not started. */
  overdue: CappedCount;
  /** Active jobs whose lease has lapsed (their worker stopped renewing; another will run them). */
  lapsedLeases: number;
  lastHour: { succeeded: number; failed: number };
  /** failed / (succeeded + failed) over the last hour, or null when nothing finished. */
  failureRate: number | null;
}

/** A worker's last check-in as the Workers page lists it, its times as ISO strings. */
type WorkerDto = Omit<CheckIn, "workerId" | "status" | "startedAt"> & {
  /** The worker id. */
  worker: string;
  /** `busy`: running a job; `idle`; `stopping`: shutting down; `gone`: missed its last check-ins. */
  state: "busy" | "idle" | "stopping" | "gone";
  startedAt: string;
  /** Its last check-in (PostgreSQL's clock). */
  checkedAt: string;
};

export interface WorkersDto {
  now: string;
  workers: WorkerDto[];
}

/**
 * A key or digest looked up in every configured database: per database, in the configured order,
 * whether it is held there (`found`, with the owning job), not (`none`), or could not be asked
 * (`down` with the error, `slow` past the timeout).
 */
export type KeyEverywhere = {
  database: string;
  status: "found" | "none" | "down" | "slow";
  jobId: string | null;
  jobState: string | null;
  queue: string | null;
  message: string | null;
}[];

/** The jobs page's state tabs: every state, plus "retrying" (scheduled again after a failed attempt). */
export const STATE_TABS = [...JOB_STATES, "retrying"] as const;
export type StateTab = (typeof STATE_TABS)[number];

export interface StateTabCounts {
  counts: Record<StateTab | "all", TabCount>;
  now: string;
}

export interface PayloadPreview {
  /** The pretty JSON (2-space indent), cut at PAYLOAD_PREVIEW_CHARS characters. */
  preview: string;
  truncated: boolean;
  /** UTF-8 bytes of the whole pretty JSON (what the download serves). */
  bytes: number;
}

export interface QueuePauseDto {
  queue: string;
  pausedAt: string;
  pausedBy: string;
  reason: string;
}

export interface DeadLetterGroupDto {
  queue: string;
  type: string;
  errorName: string;
  count: number;
  newestFinishedAt: string;
  newestMessage: string | null;
  newestJobId: string;
}

/** What a `/queues/<name>` path names: a queue name, or something that is not one. */
export type QueuePath = { kind: "name"; queue: string } | { kind: "invalid" };

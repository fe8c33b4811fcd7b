/**
 * The project's vocabulary, each list in one place: the states a job can be in, the modes a key can
 * be held in, the outcomes of a decision, what operators and maintenance record. TypeScript types
 * are derived from these lists; the SQL domains and CHECK constraints that store them are compared
 * with them by test/vocabulary.test.ts. Pure data: client components may import this module directly.
 * The words are explained in docs/enqueue.md and docs/worker.md.
 */

/** Job states (docs/worker.md, lifecycle). */
export const JOB_STATES = ["scheduled", "ready", "active", "succeeded", "failed", "canceled", "purged"] as const;
export type JobState = (typeof JOB_STATES)[number];

/** States whose jobs have not started: the ones purge takes (and run now, for `scheduled`). */
export const PENDING_STATES = ["scheduled", "ready"] as const satisfies readonly JobState[];

/** Whether purge may take a job in this state (the SQL functions test `state in ('ready', 'scheduled')`). */
export function canPurge(state: JobState): boolean {
  return (PENDING_STATES as readonly JobState[]).includes(state);
}

/**
 * What counts as the same request (docs/enqueue.md), in the order their 8-byte digests are stored
 * (`workhorse.fingerprint_fields()`; a conflict names the fields whose digests differ). `holdUntil`
 * is last, out of name order: PostgreSQL appends its digest only for a request with a key lifetime
 * (`workhorse.hold_until_digest`), so requests without one keep the 88 bytes they always had.
 */
export const FINGERPRINT_FIELDS = [
  "concurrencyKey",
  "deadline",
  "executionTimeoutMs",
  "maxAttempts",
  "payload",
  "queue",
  "retryPolicy",
  "runAt",
  "tags",
  "ttlMs",
  "type",
  "holdUntil",
] as const;
export type FingerprintField = (typeof FINGERPRINT_FIELDS)[number];

/** How long a key is held besides its TTL (docs/enqueue.md, "Key lifetimes"). */
export const KEY_LIFETIMES = ["finished", "started"] as const;

/** How a key is held (docs/enqueue.md, words). */
export const KEY_MODES = ["idempotency", "debounce", "throttle"] as const;
export type KeyMode = (typeof KEY_MODES)[number];

/** What PostgreSQL decided for one request (docs/enqueue.md, the decision; docs/debounce-throttle.md). */
export const ENQUEUE_OUTCOMES = ["accepted", "replayed", "replaced", "non_replaceable", "coalesced"] as const;
export type EnqueueOutcome = (typeof ENQUEUE_OUTCOMES)[number];

/**
 * Why a debounce request could not replace the job holding its key:
 * - `incompatible_key_mode`: the live key is held by idempotency or throttle;
 * - `not_pending`: the window is open but the job is active, has started before, or has ended;
 * - `window_elapsed_pending`: the window is over but the job has not started yet (a new job would
 *   do the work twice; it runs as it was last replaced).
 */
export const NON_REPLACEABLE_REASONS = ["incompatible_key_mode", "not_pending", "window_elapsed_pending"] as const;
export type NonReplaceableReason = (typeof NON_REPLACEABLE_REASONS)[number];

/** Decisions appended to the observation log (`workhorse.enqueue_observation.outcome`). */
export const OBSERVATION_OUTCOMES = ["replayed", "conflict", "coalesced", "non_replaceable"] as const;
export type ObservationOutcome = (typeof OBSERVATION_OUTCOMES)[number];

/** `workhorse.operator_audit.action`: what the core and the console record. */
export const AUDIT_ACTIONS = [
  "cancel",
  "delete_failed_jobs",
  "enqueue_test",
  "pause_queue",
  "purge_job",
  "purge_queue",
  "redrive",
  "resume_queue",
  "run_maintenance",
  "run_now",
  "sign_in",
  "sign_out",
  "sign_out_everywhere",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * `workhorse.maintenance_run.task`: what one `runMaintenance()` does, in this order, each with the
 * name operators see for it on the console.
 */
export const MAINTENANCE_TASK_NAMES = {
  prune_expired_bindings: "Expired-binding cleanup",
  prune_observations: "Observation retention",
  reap_expired_leases: "Lapsed leases given back",
  prune_finished_jobs: "Finished-job retention",
  prune_gone_workers: "Gone workers removed",
  rollup_run_times: "Run-time history rolled up",
} as const;
export type MaintenanceTask = keyof typeof MAINTENANCE_TASK_NAMES;
/** The tasks of `MAINTENANCE_TASK_NAMES`, in the order one run does them. */
export const MAINTENANCE_TASKS = Object.keys(MAINTENANCE_TASK_NAMES) as readonly MaintenanceTask[];

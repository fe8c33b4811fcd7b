/**
 * Workhorse enqueue core: scoped idempotent enqueue on PostgreSQL. The only public surface.
 *
 * ```ts
 * import { Queue, migrate, EnqueueIdempotencyConflictError } from "@/lib/enqueue";
 * await migrate(pool);                       // idempotent; safe when N processes start at once
 * const queue = new Queue({ pool });         // pool: pg.Pool, owned by the caller
 * const { jobId, outcome } = await queue.enqueueWithResult("invoice.capture", { invoiceId: "INV-42" }, {
 *   queue: "billing",
 *   idempotency: { key: "capture:INV-42", scope: "invoice-capture", ttlMs: 86_400_000 },
 * });                                        // outcome: "accepted", then "replayed" on a repeat
 * await queue.close();
 * ```
 */

/** How a read model tells the Citus layout from one node (one row: `distributed boolean`). */
export { LAYOUT_SQL } from "./enqueue-sql";
export {
  DeadlineExceededError,
  EnqueueIdempotencyConflictError,
  EnqueueValidationError,
  ExecutionTimeoutError,
  type IdempotencyConflictDetails,
  isRetryableDbError,
  JobCanceledError,
  JobNotFoundError,
  LeaseLostError,
  NotStorableError,
  PurgeNotAllowedError,
  QueueClosedError,
  RedriveIdempotencyConflictError,
  SqlState,
  type ValidationIssue,
  WorkerConfigError,
  WorkerStoppingError,
  WorkhorseDatabaseError,
  WorkhorseError,
} from "./errors";
export { keyDigestOf, keyLengthOf, keyPreviewOf } from "./keys";
export { DEFAULT_QUEUE, DEFAULT_RETRY_POLICY, DEFAULT_SCOPE, LIMITS, MAX_JOB_IDS } from "./limits";
export { type MigrateOptions, type MigrateResult, migrate } from "./migrate";
export type { Observation, ObservationRecorderOptions, ObservationStats } from "./observations";
export { answeredByServer, withPoolClient } from "./pool-client";
export {
  type MaintenanceResult,
  Queue,
  QueueOperations,
  type QueueOptions,
  type RetryStats,
  WAKE_CHANNEL,
} from "./queue";
/** For read models (the console): binding and observation rows mapped as the core maps them. */
export {
  BINDING_COLUMNS,
  type BindingRow,
  bindingFromRow,
  type ObservationRow,
  observationFromRow,
} from "./rows";
export type {
  BindingInfo,
  CancelResult,
  DeadLetterPage,
  DeadLetterQuery,
  DebounceOptions,
  EnqueueOptions,
  EnqueueOutcome,
  EnqueueRequest,
  EnqueueResult,
  IdempotencyOptions,
  Job,
  JobSelection,
  JobState,
  KeyMode,
  NonReplaceableReason,
  NormalizedRetryPolicy,
  OperatorContext,
  PruneFinishedJobsResult,
  PurgeJobsResult,
  PurgeResult,
  RedriveRequest,
  RedriveResult,
  RedriveStatus,
  RetryPolicy,
  RunNowResult,
  ThrottleOptions,
  Unchanged,
} from "./types";
export {
  AUDIT_ACTIONS,
  type AuditAction,
  canPurge,
  ENQUEUE_OUTCOMES,
  JOB_STATES,
  KEY_MODES,
  MAINTENANCE_TASKS,
  type MaintenanceTask,
  NON_REPLACEABLE_REASONS,
  OBSERVATION_OUTCOMES,
  type ObservationOutcome,
  PENDING_STATES,
} from "./vocabulary";
export { type ErrorSummary, summarizeError } from "./worker/error-summary";
export {
  type ClaimedJob,
  type FailureCause,
  type HandlerContext,
  type JobHandler,
  Worker,
  type WorkerEvent,
  type WorkerOptions,
  type WorkerStats,
} from "./worker/index";
export { retryDelayMs } from "./worker/timing";

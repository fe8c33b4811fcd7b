/**
 * The part of the core's surface that browser code may import: the vocabulary, the bounds and
 * defaults, the result and option types, and the typed errors. Nothing here needs `pg` or
 * `node:crypto` (index.ts re-exports all of it, beside the classes that talk to PostgreSQL).
 * test/module-graph.test.ts checks that nothing this file reaches imports a Node or database module.
 */
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
export { isQueueName } from "./input-rules";
export {
  DEFAULT_QUEUE,
  DEFAULT_RETRY_POLICY,
  DEFAULT_SCOPE,
  LIMITS,
  MAX_JOB_IDS,
  ONE_DAY_MS,
  ONE_YEAR_MS,
  RETENTION,
} from "./limits";
export { MIGRATE_COMMAND, SchemaBehindError } from "./schema-errors";
export type * from "./types";
export {
  AUDIT_ACTIONS,
  type AuditAction,
  canPurge,
  ENQUEUE_OUTCOMES,
  FINGERPRINT_FIELDS,
  type FingerprintField,
  JOB_STATES,
  KEY_MODES,
  MAINTENANCE_TASK_NAMES,
  MAINTENANCE_TASKS,
  type MaintenanceTask,
  NON_REPLACEABLE_REASONS,
  OBSERVATION_OUTCOMES,
  type ObservationOutcome,
  PENDING_STATES,
} from "./vocabulary";

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
export { LAYOUT_SQL } from "../store/layout";
export { answeredByServer, withPoolClient } from "../store/pool-client";
/** For read models (the console): binding and observation rows mapped as the core maps them. */
export {
  BINDING_COLUMNS,
  type BindingRow,
  bindingFromRow,
  type ObservationRow,
  observationFromRow,
} from "../store/rows";
export { type ErrorSummary, summarizeError } from "../worker/error-summary";
export {
  type ClaimedJob,
  type FailureCause,
  type HandlerContext,
  type JobHandler,
  Worker,
  type WorkerEvent,
  type WorkerOptions,
  type WorkerStats,
} from "../worker/index";
export { retryDelayMs } from "../worker/timing";
/** Vocabulary, bounds, result types and typed errors: also importable alone, from browser code (client.ts). */
export * from "./client";
export type { CoalesceStats } from "./coalesce";
export {
  DECISION_COUNTS,
  DECISION_FIRST_SPAN_MAX_MS,
  DECISION_SETTLE_MS,
  type DecisionOutcome,
  KEY_RELEASE_COUNTS,
} from "./decision-counts";
export { keyDigestOf, keyLengthOf, keyPreviewOf } from "./keys";
export { type MigrateOptions, type MigrateResult, migrate, type SchemaStatus, schemaStatus } from "./migrate";
export type { Observation, ObservationRecorderOptions, ObservationStats } from "./observations";
export {
  type MaintenanceResult,
  Queue,
  QueueOperations,
  type QueueOptions,
  type RetryStats,
  WAKE_CHANNEL,
} from "./queue";
export {
  STATE_GAUGE_VIEWS,
  STATE_GAUGES,
  type StateGaugeOptions,
  StateGauges,
  type StateSnapshot,
} from "./state-gauges";
/** Metrics and traces through @opentelemetry/api (docs/observability.md): the options and the names. */
export { ATTR as TELEMETRY_ATTRIBUTES, METRICS as TELEMETRY_METRICS, type TelemetryOptions } from "./telemetry";

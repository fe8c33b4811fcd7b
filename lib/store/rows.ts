/**
 * Rows of the core's tables as the public types (Job, ClaimedJob, BindingInfo, …): each row type,
 * column list and mapping written once, for the core's own reads, the worker's claim and read
 * models such as the console's (exported from index.ts).
 */
import type {
  BindingInfo,
  ClaimedJob,
  Job,
  JobState,
  NormalizedRetryPolicy,
  StoredObservation,
} from "../enqueue/types";

/** `workhorse.key_binding` (alias `b`) as a `BindingRow`: digests as hex, `expired` by the server's clock. */
export const BINDING_COLUMNS = `b.scope, b.key_hash, b.job_id, b.mode, b.key_preview, b.key_length,
  encode(b.request_digest, 'hex') as request_digest, b.ttl_ms, b.hold_until,
  b.created_at, nullif(b.expires_at, 'infinity') as expires_at, b.expires_at <= now() as expired, b.schedule,
  b.max_wait_ms`;

export interface BindingRow {
  scope: string;
  key_hash: Buffer;
  job_id: string;
  mode: BindingInfo["mode"];
  key_preview: string;
  key_length: number;
  request_digest: string;
  ttl_ms: string | null;
  hold_until: BindingInfo["holdUntil"];
  created_at: Date;
  expires_at: Date | null;
  expired: boolean;
  schedule: "reset" | "preserve" | null;
  max_wait_ms: string | null;
}

export function bindingFromRow(r: BindingRow): BindingInfo {
  return {
    scope: r.scope,
    keyPreview: r.key_preview,
    keyDigest: r.key_hash.toString("hex", 0, 6),
    keyLength: r.key_length,
    jobId: r.job_id,
    mode: r.mode,
    requestDigest: r.request_digest,
    ttlMs: r.ttl_ms === null ? null : Number(r.ttl_ms),
    holdUntil: r.hold_until,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    expired: r.expired,
    schedule: r.schedule,
    maxWaitMs: r.max_wait_ms === null ? null : Number(r.max_wait_ms),
  };
}

/** A `workhorse.enqueue_observation` row (`select *`). */
export interface ObservationRow {
  id: string;
  at: Date;
  outcome: StoredObservation["outcome"];
  reason: string | null;
  queue: string;
  type: string;
  scope: string;
  key_preview: string;
  key_digest: string;
  key_length: number;
  job_id: string | null;
  conflicting_fields: string[] | null;
  payload_paths: string[] | null;
  stored_request_digest: string | null;
  rejected_request_digest: string | null;
  source: string | null;
  count: number;
  last_at: Date | null;
}

export function observationFromRow(r: ObservationRow): StoredObservation {
  return {
    id: String(r.id),
    at: r.at,
    outcome: r.outcome,
    reason: r.reason,
    queue: r.queue,
    type: r.type,
    scope: r.scope,
    keyPreview: r.key_preview,
    keyDigest: r.key_digest,
    keyLength: r.key_length,
    jobId: r.job_id,
    conflictingFields: r.conflicting_fields,
    payloadPaths: r.payload_paths,
    storedRequestDigest: r.stored_request_digest,
    rejectedRequestDigest: r.rejected_request_digest,
    source: r.source,
    count: r.count,
    lastAt: r.last_at,
  };
}

function toDate(v: Date | string | null): Date | null {
  if (v === null) return null;
  return v instanceof Date ? v : new Date(v);
}

export interface JobRow {
  id: string;
  queue: string;
  type: string;
  payload: unknown;
  state: JobState;
  run_at: Date;
  attempt: number;
  max_attempts: number;
  retry_policy: NormalizedRetryPolicy | null;
  deadline: Date | null;
  execution_timeout_ms: string | null;
  concurrency_key: string | null;
  tags: string[];
  created_at: Date;
  updated_at: Date;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  result: unknown;
  last_error: unknown;
  purged_at: Date | null;
  purged_by: string | null;
  purge_reason: string | null;
  cancel_requested_at?: Date | null;
  cancel_requested_by?: string | null;
  cancel_reason?: string | null;
  redriven_from?: string | null;
  /** Only from getJob. */
  redrive_job_ids?: string[];
}

/** The columns a job and a claimed attempt share, mapped once. */
function jobCommon(r: Omit<ClaimRow, "lease_expires_at" | "lease_owner" | "trace_context">) {
  return {
    id: r.id,
    queue: r.queue,
    type: r.type,
    payload: r.payload,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    runAt: r.run_at,
    deadline: toDate(r.deadline),
    executionTimeoutMs: r.execution_timeout_ms === null ? null : Number(r.execution_timeout_ms),
    concurrencyKey: r.concurrency_key,
    tags: r.tags,
    createdAt: r.created_at,
  };
}

/** Maps a `workhorse.job` row to the domain type. The one place wire rows become `Job`s. */
export function jobFromRow(r: JobRow): Job {
  return {
    ...jobCommon(r),
    state: r.state,
    retryPolicy: r.retry_policy,
    updatedAt: r.updated_at,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: toDate(r.lease_expires_at),
    startedAt: toDate(r.started_at),
    finishedAt: toDate(r.finished_at),
    result: r.result,
    lastError: r.last_error,
    purgedAt: toDate(r.purged_at),
    purgedBy: r.purged_by,
    purgeReason: r.purge_reason,
    cancelRequestedAt: toDate(r.cancel_requested_at ?? null),
    cancelRequestedBy: r.cancel_requested_by ?? null,
    cancelReason: r.cancel_reason ?? null,
    redrivenFrom: r.redriven_from ?? null,
    redriveJobIds: r.redrive_job_ids ?? [],
  };
}

/** What `workhorse.claim_jobs` returns of a job, with the lease it took (CLAIM_COLUMNS). */
export type ClaimRow = Pick<
  JobRow,
  | "id"
  | "queue"
  | "type"
  | "payload"
  | "attempt"
  | "max_attempts"
  | "run_at"
  | "deadline"
  | "execution_timeout_ms"
  | "concurrency_key"
  | "tags"
  | "created_at"
> & { lease_expires_at: Date; lease_owner: string; trace_context: string | null };

/** A claimed row as the handler's `ClaimedJob`: the job's own columns mapped as `jobFromRow` maps them. */
export function claimedJobFromRow(r: ClaimRow): ClaimedJob {
  return {
    ...jobCommon(r),
    leaseExpiresAt: r.lease_expires_at,
    leaseOwner: r.lease_owner,
    traceContext: r.trace_context ?? null,
  };
}

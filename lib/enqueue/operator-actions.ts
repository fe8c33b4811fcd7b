/**
 * Operator actions (docs/operator-actions.md) and purge: each one round trip to one SQL function
 * (sql/migrations 007, 008), audited there. The public methods and their docs are on
 * `QueueOperations` (queue.ts); these are their bodies, over the view's `OperationsDb`;
 * the statements are in store/core/operator-actions.ts.
 */

import { selectDeadLetters } from "../store/core/jobs";
import * as store from "../store/core/operator-actions";
import {
  EnqueueValidationError,
  JobNotFoundError,
  PurgeNotAllowedError,
  QueueClosedError,
  RedriveIdempotencyConflictError,
  SqlState,
  sqlStateOf,
  WorkhorseDatabaseError,
} from "./errors";
import {
  encodeDeadLetterCursor,
  parseDeadLetterQuery,
  parseJobId,
  parseJobSelection,
  parseOperatorContext,
  parseOperatorEntry,
  parseQueueName,
  parseRedriveRequest,
} from "./operator-input";
import type { OperationsDb } from "./queue-context";
import type * as T from "./types";

/** The scope a redrive request id is hashed under (kept apart from every caller's key scope by the 0x1F separator and name). */
const REDRIVE_SCOPE = "workhorse.redrive";

export async function purge(
  db: OperationsDb,
  target: { jobId: string },
  context: T.OperatorContext,
): Promise<T.PurgeResult> {
  const jobId = parseJobId(target?.jobId);
  const ctx = parseOperatorContext(context);
  const row = await purgeCall(db, [jobId], null, ctx);
  if (row.refused_state === "missing") throw new JobNotFoundError(jobId);
  if (row.refused_state) throw new PurgeNotAllowedError(jobId, row.refused_state);
  db.context.telemetry.operatorAction("purge", row.purged);
  return { purged: row.purged, releasedBindings: row.released_bindings };
}

export async function purgeQueue(db: OperationsDb, queue: string, context: T.OperatorContext): Promise<T.PurgeResult> {
  const name = parseQueueName(queue);
  const ctx = parseOperatorContext(context);
  const row = await purgeCall(db, null, name, ctx);
  db.context.telemetry.operatorAction("purge", row.purged);
  return { purged: row.purged, releasedBindings: row.released_bindings };
}

/** One SQL function over a selection of job ids with who and why; a single unknown id is `JobNotFoundError` when `missingIsError`. */
async function overSelection<R extends { unchanged: T.Unchanged }>(
  db: OperationsDb,
  what: string,
  call: { fn: "cancel_jobs" | "purge_job_list" | "run_jobs_now"; missingIsError: boolean },
  selection: T.JobSelection,
  context: T.OperatorContext,
): Promise<R> {
  const ids = parseJobSelection(selection);
  const ctx = parseOperatorContext(context);
  const row = await store.callOverSelection<R>(db.store(what), call.fn, ids, ctx);
  if (call.missingIsError && ids.length === 1 && row.unchanged.missing === 1) {
    throw new JobNotFoundError(ids[0] as string);
  }
  return row;
}

/** An operator action over a selection: `overSelection` with its call; the row is the result. */
function selectionAction<Out extends { unchanged: T.Unchanged }>(
  what: string,
  call: Parameters<typeof overSelection>[2],
) {
  return (db: OperationsDb, selection: T.JobSelection, context: T.OperatorContext): Promise<Out> =>
    overSelection<Out>(db, what, call, selection, context);
}

const cancelCall = selectionAction<T.CancelResult>("cancel", { fn: "cancel_jobs", missingIsError: true });
export async function cancel(db: OperationsDb, selection: T.JobSelection, context: T.OperatorContext) {
  const r = await cancelCall(db, selection, context);
  db.context.telemetry.operatorAction("cancel", r.canceled);
  db.context.telemetry.operatorAction("cancel_requested", r.cancelRequested);
  return r;
}

const purgeJobsCall = selectionAction<T.PurgeJobsResult>("purgeJobs", {
  fn: "purge_job_list",
  missingIsError: false,
});
export async function purgeJobs(db: OperationsDb, selection: T.JobSelection, context: T.OperatorContext) {
  const r = await purgeJobsCall(db, selection, context);
  db.context.telemetry.operatorAction("purge", r.purged);
  return r;
}

const runNowCall = selectionAction<T.RunNowResult>("runNow", { fn: "run_jobs_now", missingIsError: true });
export async function runNow(db: OperationsDb, selection: T.JobSelection, context: T.OperatorContext) {
  const r = await runNowCall(db, selection, context);
  db.context.telemetry.operatorAction("run_now", r.updated);
  return r;
}

export async function deleteFailedJobs(
  db: OperationsDb,
  selection: T.JobSelection,
  context: T.OperatorContext & { releaseKeys?: boolean },
): Promise<T.DeleteFailedJobsResult> {
  const ids = parseJobSelection(selection);
  const releaseKeys = context?.releaseKeys ?? false;
  if (typeof releaseKeys !== "boolean") {
    throw new EnqueueValidationError([{ option: "releaseKeys", rule: "must be true or false" }]);
  }
  const ctx = parseOperatorContext({ actor: context?.actor, reason: context?.reason });
  const r = await store.deleteFailedJobs(db.store("deleteFailedJobs"), ids, ctx, releaseKeys);
  db.context.telemetry.operatorAction("delete_failed", r.deleted);
  return r;
}

export async function redrive(db: OperationsDb, request: T.RedriveRequest): Promise<T.RedriveResult> {
  const r = parseRedriveRequest(request);
  if (!db.context.config.keys.loaded) await db.loadKeys();
  const requestHash = db.context.config.keys.hash(REDRIVE_SCOPE, r.requestId);
  let rows: Awaited<ReturnType<typeof store.redriveJobs>>;
  try {
    rows = await store.redriveJobs(db.rawStore, { ...r, requestHash });
  } catch (err) {
    if (err instanceof QueueClosedError) throw err;
    if (sqlStateOf(err) === SqlState.redriveConflict) {
      const d = JSON.parse((err as { detail?: string }).detail ?? "{}") as {
        sourceJobId: string;
        existingJobId: string;
        conflictingFields: string[];
      };
      throw new RedriveIdempotencyConflictError(d, { cause: err });
    }
    throw new WorkhorseDatabaseError(`redrive failed: ${(err as Error)?.message ?? String(err)}`, err);
  }
  const results = rows.map((row) => ({
    sourceJobId: row.source_job_id,
    status: row.status,
    ...(row.job_id ? { jobId: row.job_id } : {}),
    ...(row.key_status ? { key: row.key_status } : {}),
  }));
  db.context.telemetry.operatorAction("redrive", rows.filter((row) => row.status === "redriven").length);
  return { results };
}

export async function listDeadLetters(db: OperationsDb, query: T.DeadLetterQuery = {}): Promise<T.DeadLetterPage> {
  const q = parseDeadLetterQuery(query);
  const rows = await selectDeadLetters(db.store("listDeadLetters"), q);
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    jobs: page.map((r) => r.job),
    nextCursor:
      rows.length > q.limit && last
        ? encodeDeadLetterCursor({ finishedAt: last.finishedAtText, id: last.job.id })
        : null,
  };
}

/** pause_queue / resume_queue: whether the queue's state changed (one audit row either way). */
async function setPaused(
  db: OperationsDb,
  fn: "pause_queue" | "resume_queue",
  queue: string,
  context: T.OperatorContext,
): Promise<boolean> {
  const name = parseQueueName(queue);
  const ctx = parseOperatorContext(context);
  return store.setQueuePaused(db.store(fn === "pause_queue" ? "pauseQueue" : "resumeQueue"), fn, name, ctx);
}

export async function pauseQueue(db: OperationsDb, queue: string, context: T.OperatorContext) {
  return { paused: await setPaused(db, "pause_queue", queue, context) };
}

export async function resumeQueue(db: OperationsDb, queue: string, context: T.OperatorContext) {
  return { resumed: await setPaused(db, "resume_queue", queue, context) };
}

export async function listPausedQueues(db: OperationsDb): Promise<T.PausedQueue[]> {
  return store.selectPausedQueues(db.store("listPausedQueues"));
}

async function purgeCall(db: OperationsDb, ids: string[] | null, queue: string | null, ctx: T.OperatorContext) {
  try {
    return await store.purgeJobs(db.rawStore, ids, queue, ctx);
  } catch (err) {
    throw new WorkhorseDatabaseError(`purge failed: ${(err as Error).message}`, err);
  }
}

export async function recordOperatorAction(db: OperationsDb, entry: T.OperatorAuditEntry): Promise<void> {
  await store.insertAudit(db.store("recordOperatorAction"), parseOperatorEntry(entry));
}

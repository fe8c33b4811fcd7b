/**
 * Operator actions (docs/operator-actions.md) and purge: each one round trip to one SQL function
 * (sql/migrations 007, 008), audited there. The public methods and their docs are on
 * `QueueOperations` (queue.ts); these are their bodies, over the `QueueView` they are called on;
 * the statements are in store/core/operator-actions.ts.
 */

import { selectDeadLetters } from "../store/core/jobs";
import * as store from "../store/core/operator-actions";
import { loadKeys, type QueueView, rawStoreOf, storeOf } from "./enqueue-call";
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
import type * as T from "./types";

/** The scope a redrive request id is hashed under (kept apart from every caller's key scope by the 0x1F separator and name). */
const REDRIVE_SCOPE = "workhorse.redrive";

export async function purge(
  view: QueueView,
  target: { jobId: string },
  context: T.OperatorContext,
): Promise<T.PurgeResult> {
  const jobId = parseJobId(target?.jobId);
  const ctx = parseOperatorContext(context);
  const row = await purgeCall(view, [jobId], null, ctx);
  if (row.refused_state === "missing") throw new JobNotFoundError(jobId);
  if (row.refused_state) throw new PurgeNotAllowedError(jobId, row.refused_state);
  view.context.telemetry.operatorAction("purge", row.purged);
  return { purged: row.purged, releasedBindings: row.released_bindings };
}

export async function purgeQueue(view: QueueView, queue: string, context: T.OperatorContext): Promise<T.PurgeResult> {
  const name = parseQueueName(queue);
  const ctx = parseOperatorContext(context);
  const row = await purgeCall(view, null, name, ctx);
  view.context.telemetry.operatorAction("purge", row.purged);
  return { purged: row.purged, releasedBindings: row.released_bindings };
}

/** One SQL function over a selection of job ids with who and why; a single unknown id is `JobNotFoundError` when `missingIsError`. */
async function overSelection<R extends { unchanged: T.Unchanged }>(
  view: QueueView,
  what: string,
  call: { fn: "cancel_jobs" | "purge_job_list" | "run_jobs_now"; missingIsError: boolean },
  selection: T.JobSelection,
  context: T.OperatorContext,
): Promise<R> {
  const ids = parseJobSelection(selection);
  const ctx = parseOperatorContext(context);
  const row = await store.callOverSelection<R>(storeOf(view, what), call.fn, ids, ctx);
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
  return (view: QueueView, selection: T.JobSelection, context: T.OperatorContext): Promise<Out> =>
    overSelection<Out>(view, what, call, selection, context);
}

const cancelCall = selectionAction<T.CancelResult>("cancel", { fn: "cancel_jobs", missingIsError: true });
export async function cancel(view: QueueView, selection: T.JobSelection, context: T.OperatorContext) {
  const r = await cancelCall(view, selection, context);
  view.context.telemetry.operatorAction("cancel", r.canceled);
  view.context.telemetry.operatorAction("cancel_requested", r.cancelRequested);
  return r;
}

const purgeJobsCall = selectionAction<T.PurgeJobsResult>("purgeJobs", {
  fn: "purge_job_list",
  missingIsError: false,
});
export async function purgeJobs(view: QueueView, selection: T.JobSelection, context: T.OperatorContext) {
  const r = await purgeJobsCall(view, selection, context);
  view.context.telemetry.operatorAction("purge", r.purged);
  return r;
}

const runNowCall = selectionAction<T.RunNowResult>("runNow", { fn: "run_jobs_now", missingIsError: true });
export async function runNow(view: QueueView, selection: T.JobSelection, context: T.OperatorContext) {
  const r = await runNowCall(view, selection, context);
  view.context.telemetry.operatorAction("run_now", r.updated);
  return r;
}

export async function deleteFailedJobs(
  view: QueueView,
  selection: T.JobSelection,
  context: T.OperatorContext & { releaseKeys?: boolean },
): Promise<T.DeleteFailedJobsResult> {
  const ids = parseJobSelection(selection);
  const releaseKeys = context?.releaseKeys ?? false;
  if (typeof releaseKeys !== "boolean") {
    throw new EnqueueValidationError([{ option: "releaseKeys", rule: "must be true or false" }]);
  }
  const ctx = parseOperatorContext({ actor: context?.actor, reason: context?.reason });
  const r = await store.deleteFailedJobs(storeOf(view, "deleteFailedJobs"), ids, ctx, releaseKeys);
  view.context.telemetry.operatorAction("delete_failed", r.deleted);
  return r;
}

export async function redrive(view: QueueView, request: T.RedriveRequest): Promise<T.RedriveResult> {
  const r = parseRedriveRequest(request);
  if (!view.context.config.keys.loaded) await loadKeys(view);
  const requestHash = view.context.config.keys.hash(REDRIVE_SCOPE, r.requestId);
  let rows: Awaited<ReturnType<typeof store.redriveJobs>>;
  try {
    rows = await store.redriveJobs(rawStoreOf(view), { ...r, requestHash });
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
  view.context.telemetry.operatorAction("redrive", rows.filter((row) => row.status === "redriven").length);
  return { results };
}

export async function listDeadLetters(view: QueueView, query: T.DeadLetterQuery = {}): Promise<T.DeadLetterPage> {
  const q = parseDeadLetterQuery(query);
  const rows = await selectDeadLetters(storeOf(view, "listDeadLetters"), q);
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
  view: QueueView,
  fn: "pause_queue" | "resume_queue",
  queue: string,
  context: T.OperatorContext,
): Promise<boolean> {
  const name = parseQueueName(queue);
  const ctx = parseOperatorContext(context);
  return store.setQueuePaused(storeOf(view, fn === "pause_queue" ? "pauseQueue" : "resumeQueue"), fn, name, ctx);
}

export async function pauseQueue(view: QueueView, queue: string, context: T.OperatorContext) {
  return { paused: await setPaused(view, "pause_queue", queue, context) };
}

export async function resumeQueue(view: QueueView, queue: string, context: T.OperatorContext) {
  return { resumed: await setPaused(view, "resume_queue", queue, context) };
}

export async function listPausedQueues(view: QueueView): Promise<T.PausedQueue[]> {
  return store.selectPausedQueues(storeOf(view, "listPausedQueues"));
}

async function purgeCall(view: QueueView, ids: string[] | null, queue: string | null, ctx: T.OperatorContext) {
  try {
    return await store.purgeJobs(rawStoreOf(view), ids, queue, ctx);
  } catch (err) {
    throw new WorkhorseDatabaseError(`purge failed: ${(err as Error).message}`, err);
  }
}

export async function recordOperatorAction(view: QueueView, entry: T.OperatorAuditEntry): Promise<void> {
  await store.insertAudit(storeOf(view, "recordOperatorAction"), parseOperatorEntry(entry));
}

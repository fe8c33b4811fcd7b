/**
 * The operator actions' statements (docs/operator-actions.md): each one SQL function, audited
 * there (sql/functions: cancel_jobs, purge_job_list, run_jobs_now, purge_jobs, redrive_jobs,
 * pause_queue, resume_queue, prune_finished_jobs, delete_failed_jobs), plus the paused-queue list and the audit insert.
 */
import { v7 as uuidv7 } from "uuid";
import type { DeleteFailedJobsResult, RedriveKeyStatus, RedriveStatus, Unchanged } from "../../enqueue/types";
import { bucketedId, idBucket } from "../ids";
import { layoutOf, type Sql } from "../layout";

/** The functions that take a selection of job ids with who and why, and the columns of their one row,
 *  named as the result's fields (types.ts: CancelResult, PurgeJobsResult, RunNowResult). */
const OVER_SELECTION = {
  cancel_jobs: `canceled, cancel_requested as "cancelRequested", unchanged`,
  purge_job_list: `purged, released_bindings as "releasedBindings", unchanged`,
  run_jobs_now: "updated, unchanged",
} as const;

/** `fn(ids, actor, reason)` over a selection: its one row. */
export async function callOverSelection<R extends { unchanged: Unchanged }>(
  sql: Sql,
  fn: keyof typeof OVER_SELECTION,
  ids: string[],
  ctx: { actor: string; reason: string },
): Promise<R> {
  const { rows } = await sql.query<R>({
    text: `select ${OVER_SELECTION[fn]} from workhorse.${fn}($1::uuid[], $2::text, $3::text)`,
    values: [ids, ctx.actor, ctx.reason],
  });
  return rows[0] as R;
}

/** `workhorse.purge_jobs`: a list of ids or a whole queue. */
export async function purgeJobs(
  sql: Sql,
  ids: string[] | null,
  queue: string | null,
  ctx: { actor: string; reason: string },
): Promise<{ purged: number; released_bindings: number; refused_state: string | null }> {
  const { rows } = await sql.query<{ purged: number; released_bindings: number; refused_state: string | null }>({
    text: "select purged, released_bindings, refused_state from workhorse.purge_jobs($1::uuid[], $2::text, $3::text, $4::text)",
    values: [ids, queue, ctx.actor, ctx.reason],
  });
  return rows[0] as { purged: number; released_bindings: number; refused_state: string | null };
}

/** `workhorse.delete_failed_jobs`: its one row. */
export async function deleteFailedJobs(
  sql: Sql,
  ids: string[],
  ctx: { actor: string; reason: string },
  releaseKeys: boolean,
): Promise<DeleteFailedJobsResult> {
  const { rows } = await sql.query<DeleteFailedJobsResult>({
    text: `select deleted, released_bindings as "releasedBindings", owning_live_key as "keptOwningLiveKey", unchanged
             from workhorse.delete_failed_jobs($1::uuid[], $2::text, $3::text, $4::boolean)`,
    values: [ids, ctx.actor, ctx.reason, releaseKeys],
  });
  return rows[0] as DeleteFailedJobsResult;
}

type RedriveRow = {
  source_job_id: string;
  status: RedriveStatus;
  job_id: string | null;
  key_status: RedriveKeyStatus | null;
};

/** `workhorse.redrive_jobs`: one row per source job. New ids are made here (Citus: in the source's bucket). */
export async function redriveJobs(
  sql: Sql,
  r: { jobIds: string[]; requestHash: Buffer; requestedBy: string; reason: string; dryRun: boolean; again: boolean },
): Promise<RedriveRow[]> {
  const newIds = r.jobIds.map(() => uuidv7());
  // Citus: a redriven job lives in its source's bucket, where the key it may take over is.
  if ((await layoutOf(sql)) === "distributed") {
    for (let i = 0; i < newIds.length; i++)
      newIds[i] = bucketedId(newIds[i] as string, idBucket(r.jobIds[i] as string));
  }
  const { rows } = await sql.query<RedriveRow>({
    text: `select source_job_id, status, job_id, key_status
               from workhorse.redrive_jobs($1::uuid[], $2::uuid[], $3::bytea, $4::text, $5::text, $6::boolean,
                                          $7::boolean)`,
    values: [r.jobIds, newIds, r.requestHash, r.requestedBy, r.reason, r.dryRun, r.again],
  });
  return rows;
}

/** `pause_queue` / `resume_queue`: whether the queue's state changed. */
export async function setQueuePaused(
  sql: Sql,
  fn: "pause_queue" | "resume_queue",
  queue: string,
  ctx: { actor: string; reason: string },
): Promise<boolean> {
  const { rows } = await sql.query<{ changed: boolean }>({
    text: `select workhorse.${fn}($1::text, $2::text, $3::text) as changed`,
    values: [queue, ctx.actor, ctx.reason],
  });
  return rows[0]?.changed === true;
}

export async function selectPausedQueues(
  sql: Sql,
): Promise<Array<{ queue: string; pausedAt: Date; pausedBy: string; reason: string }>> {
  const { rows } = await sql.query<{ queue: string; paused_at: Date; paused_by: string; reason: string }>({
    text: "select queue, paused_at, paused_by, reason from workhorse.queue_pause order by queue",
  });
  return rows.map((r) => ({ queue: r.queue, pausedAt: r.paused_at, pausedBy: r.paused_by, reason: r.reason }));
}

/** `workhorse.prune_finished_jobs`: one batch. */
export async function pruneFinishedJobsBatch(
  sql: Sql,
  olderThanMs: number,
  limit: number,
): Promise<{ jobsDeleted: number; eventsDeleted: number }> {
  const { rows } = await sql.query<{ jobs_deleted: number; events_deleted: number }>({
    name: "workhorse_prune_finished_jobs",
    text: "select jobs_deleted, events_deleted from workhorse.prune_finished_jobs($1::bigint, $2::integer)",
    values: [olderThanMs, limit],
  });
  return { jobsDeleted: rows[0]?.jobs_deleted ?? 0, eventsDeleted: rows[0]?.events_deleted ?? 0 };
}

export async function insertAudit(
  sql: Sql,
  e: { actor: string; action: string; target: string; reason: string | null; resultJson: string },
): Promise<void> {
  await sql.query({
    text: "insert into workhorse.operator_audit (actor, action, target, reason, result) values ($1, $2, $3, $4, $5::jsonb)",
    values: [e.actor, e.action, e.target, e.reason, e.resultJson],
  });
}

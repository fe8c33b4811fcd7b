/**
 * Operator actions (docs/operator-actions.md) and purge: each one round trip to one SQL function
 * (sql/migrations 007, 008), audited there. The public methods and their docs are on
 * `QueueOperations` (queue-operations.ts); these are their bodies, over the view's `OperationsDb`.
 */
import { v7 as uuidv7 } from "uuid";
import { bucketedId, idBucket } from "./enqueue-sql";
import {
  JobNotFoundError,
  PurgeNotAllowedError,
  QueueClosedError,
  RedriveIdempotencyConflictError,
  SqlState,
  sqlStateOf,
  WorkhorseDatabaseError,
} from "./errors";
import { parseOptions } from "./input-rules";
import {
  encodeDeadLetterCursor,
  parseDeadLetterQuery,
  parseJobId,
  parseJobSelection,
  parseOperatorContext,
  parseOperatorEntry,
  parseQueueName,
  parseRedriveRequest,
  pruneFinishedJobsSchema,
} from "./operator-input";
import type { OperationsDb } from "./queue-context";
import { type JobRow, jobFromRow } from "./rows";
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
  return { purged: row.purged, releasedBindings: row.released_bindings };
}

export async function purgeQueue(db: OperationsDb, queue: string, context: T.OperatorContext): Promise<T.PurgeResult> {
  const name = parseQueueName(queue);
  const ctx = parseOperatorContext(context);
  const row = await purgeCall(db, null, name, ctx);
  return { purged: row.purged, releasedBindings: row.released_bindings };
}

/**
 * One SQL function over a selection of job ids with who and why (`fn(ids, actor, reason)`), its one
 * row of `columns`; a single unknown id is `JobNotFoundError` when `missingIsError`.
 */
async function overSelection<R extends { unchanged: T.Unchanged }>(
  db: OperationsDb,
  what: string,
  call: { fn: string; columns: string; missingIsError: boolean },
  selection: T.JobSelection,
  context: T.OperatorContext,
): Promise<R> {
  const ids = parseJobSelection(selection);
  const ctx = parseOperatorContext(context);
  const { rows } = await db.sql<R>(what, {
    text: `select ${call.columns} from workhorse.${call.fn}($1::uuid[], $2::text, $3::text)`,
    values: [ids, ctx.actor, ctx.reason],
  });
  const row = rows[0] as R;
  if (call.missingIsError && ids.length === 1 && row.unchanged.missing === 1) {
    throw new JobNotFoundError(ids[0] as string);
  }
  return row;
}

export async function cancel(
  db: OperationsDb,
  selection: T.JobSelection,
  context: T.OperatorContext,
): Promise<T.CancelResult> {
  const row = await overSelection<{ canceled: number; cancel_requested: number; unchanged: T.Unchanged }>(
    db,
    "cancel",
    { fn: "cancel_jobs", columns: "canceled, cancel_requested, unchanged", missingIsError: true },
    selection,
    context,
  );
  return { canceled: row.canceled, cancelRequested: row.cancel_requested, unchanged: row.unchanged };
}

export async function purgeJobs(
  db: OperationsDb,
  selection: T.JobSelection,
  context: T.OperatorContext,
): Promise<T.PurgeJobsResult> {
  const row = await overSelection<{ purged: number; released_bindings: number; unchanged: T.Unchanged }>(
    db,
    "purgeJobs",
    { fn: "purge_job_list", columns: "purged, released_bindings, unchanged", missingIsError: false },
    selection,
    context,
  );
  return { purged: row.purged, releasedBindings: row.released_bindings, unchanged: row.unchanged };
}

export async function runNow(
  db: OperationsDb,
  selection: T.JobSelection,
  context: T.OperatorContext,
): Promise<T.RunNowResult> {
  const row = await overSelection<{ updated: number; unchanged: T.Unchanged }>(
    db,
    "runNow",
    { fn: "run_jobs_now", columns: "updated, unchanged", missingIsError: true },
    selection,
    context,
  );
  return { updated: row.updated, unchanged: row.unchanged };
}

export async function redrive(db: OperationsDb, request: T.RedriveRequest): Promise<T.RedriveResult> {
  const r = parseRedriveRequest(request);
  if (!db.context.config.keys.loaded) await db.loadKeys();
  const requestHash = db.context.config.keys.hash(REDRIVE_SCOPE, r.requestId);
  const newIds = r.jobIds.map(() => uuidv7());
  // Citus: a redriven job lives in its source's bucket, where the key it may take over is.
  if (await db.distributed("redrive")) {
    for (let i = 0; i < newIds.length; i++)
      newIds[i] = bucketedId(newIds[i] as string, idBucket(r.jobIds[i] as string));
  }
  type Row = { source_job_id: string; status: T.RedriveStatus; job_id: string | null };
  let rows: Row[];
  try {
    ({ rows } = await db.exec.query<Row>({
      text: `select source_job_id, status, job_id
               from workhorse.redrive_jobs($1::uuid[], $2::uuid[], $3::bytea, $4::text, $5::text, $6::boolean)`,
      values: [r.jobIds, newIds, requestHash, r.requestedBy, r.reason, r.dryRun],
    }));
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
  }));
  return { results };
}

export async function listDeadLetters(db: OperationsDb, query: T.DeadLetterQuery = {}): Promise<T.DeadLetterPage> {
  const q = parseDeadLetterQuery(query);
  // Citus runs no correlated subquery across shards: there the redrives are read by a second query.
  const distributed = await db.distributed("listDeadLetters");
  const { rows } = await db.sql<JobRow & { finished_at_text: string }>("listDeadLetters", {
    name: distributed ? "workhorse_list_dead_letters_at" : "workhorse_list_dead_letters",
    text: `select j.*, to_char(j.finished_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as finished_at_text,
                  ${
                    distributed
                      ? "'{}'::uuid[]"
                      : "array(select r.id from workhorse.job r where r.redriven_from = j.id order by r.id)"
                  } as redrive_job_ids
             from workhorse.job j
            where j.state = 'failed'
              and ($1::text is null or j.queue = $1::text)
              and ($2::text is null or j.type = $2::text)
              and ($3::text is null or j.last_error ->> 'name' = $3::text)
              and ($4::timestamptz is null or j.finished_at > $4::timestamptz)
              and ($5::timestamptz is null or j.finished_at < $5::timestamptz)
              and ($6::timestamptz is null or (j.finished_at, j.id) < ($6::timestamptz, $7::uuid))
            order by j.finished_at desc, j.id desc
            limit $8::integer`,
    values: [
      q.queue ?? null,
      q.type ?? null,
      q.errorName ?? null,
      q.finishedAfter?.toISOString() ?? null,
      q.finishedBefore?.toISOString() ?? null,
      q.cursor?.finishedAt ?? null,
      q.cursor?.id ?? null,
      q.limit + 1,
    ],
  });
  const page = rows.slice(0, q.limit);
  if (distributed && page.length > 0) {
    const { rows: redrives } = await db.sql<{ source: string; ids: string[] }>("listDeadLetters", {
      text: `select redriven_from as source, array_agg(id order by id) as ids from workhorse.job
              where redriven_from = any($1::uuid[]) group by redriven_from`,
      values: [page.map((r) => r.id)],
    });
    const bySource = new Map(redrives.map((r) => [r.source, r.ids]));
    for (const r of page) r.redrive_job_ids = bySource.get(r.id) ?? [];
  }
  const last = page[page.length - 1];
  return {
    jobs: page.map(jobFromRow),
    nextCursor:
      rows.length > q.limit && last ? encodeDeadLetterCursor({ finishedAt: last.finished_at_text, id: last.id }) : null,
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
  const { rows } = await db.sql<{ changed: boolean }>(fn === "pause_queue" ? "pauseQueue" : "resumeQueue", {
    text: `select workhorse.${fn}($1::text, $2::text, $3::text) as changed`,
    values: [name, ctx.actor, ctx.reason],
  });
  return rows[0]?.changed === true;
}

export async function pauseQueue(db: OperationsDb, queue: string, context: T.OperatorContext) {
  return { paused: await setPaused(db, "pause_queue", queue, context) };
}

export async function resumeQueue(db: OperationsDb, queue: string, context: T.OperatorContext) {
  return { resumed: await setPaused(db, "resume_queue", queue, context) };
}

export async function listPausedQueues(
  db: OperationsDb,
): Promise<Array<{ queue: string; pausedAt: Date; pausedBy: string; reason: string }>> {
  const { rows } = await db.sql<{ queue: string; paused_at: Date; paused_by: string; reason: string }>(
    "listPausedQueues",
    { text: "select queue, paused_at, paused_by, reason from workhorse.queue_pause order by queue" },
  );
  return rows.map((r) => ({ queue: r.queue, pausedAt: r.paused_at, pausedBy: r.paused_by, reason: r.reason }));
}

export async function pruneFinishedJobs(
  db: OperationsDb,
  options: { olderThanMs?: number; limit?: number; maxBatches?: number } = {},
): Promise<T.PruneFinishedJobsResult> {
  const { olderThanMs, limit, maxBatches } = parseOptions(pruneFinishedJobsSchema, options);
  let jobsDeleted = 0;
  let eventsDeleted = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const { rows } = await db.sql<{ jobs_deleted: number; events_deleted: number }>("pruneFinishedJobs", {
      name: "workhorse_prune_finished_jobs",
      text: "select jobs_deleted, events_deleted from workhorse.prune_finished_jobs($1::bigint, $2::integer)",
      values: [olderThanMs, limit],
    });
    const n = rows[0]?.jobs_deleted ?? 0;
    jobsDeleted += n;
    eventsDeleted += rows[0]?.events_deleted ?? 0;
    if (n < limit) break;
  }
  return { jobsDeleted, eventsDeleted };
}

async function purgeCall(db: OperationsDb, ids: string[] | null, queue: string | null, ctx: T.OperatorContext) {
  try {
    const { rows } = await db.exec.query<{
      purged: number;
      released_bindings: number;
      refused_state: string | null;
    }>({
      text: "select purged, released_bindings, refused_state from workhorse.purge_jobs($1::uuid[], $2::text, $3::text, $4::text)",
      values: [ids, queue, ctx.actor, ctx.reason],
    });
    return rows[0] as { purged: number; released_bindings: number; refused_state: string | null };
  } catch (err) {
    throw new WorkhorseDatabaseError(`purge failed: ${(err as Error).message}`, err);
  }
}

export async function recordOperatorAction(
  db: OperationsDb,
  entry: {
    actor: string;
    action: string;
    target: string;
    reason?: string | null;
    result: Record<string, unknown>;
  },
): Promise<void> {
  const { actor, action, target, reason, resultJson } = parseOperatorEntry(entry);
  await db.sql("recordOperatorAction", {
    text: "insert into workhorse.operator_audit (actor, action, target, reason, result) values ($1, $2, $3, $4, $5::jsonb)",
    values: [actor, action, target, reason, resultJson],
  });
}

import "server-only";
import { deadLetterGroupRows, pendingQueueNames } from "@/lib/enqueue/store/console-reads";
/**
 * Read models for the operator-action pages: queue pauses and dead-letter groups. Reads only; every
 * write goes through lib/enqueue.
 */
import type { JobFilters } from "./filters";
import { jobFilterWhere } from "./jobs";
import { cappedCount, type Db, iso } from "./read-queries";
import type { CappedCount } from "./wire-types";

export interface QueuePauseDto {
  queue: string;
  pausedAt: string;
  pausedBy: string;
  reason: string;
}

/** Paused queues with who paused them, when and why. */
export async function pausedQueues(db: Db): Promise<QueuePauseDto[]> {
  const { rows } = await db.query<{ queue: string; paused_at: Date; paused_by: string; reason: string }>(
    "select queue, paused_at, paused_by, reason from workhorse.queue_pause order by queue",
  );
  return rows.map((r) => ({ queue: r.queue, pausedAt: iso(r.paused_at), pausedBy: r.paused_by, reason: r.reason }));
}

interface DeadLetterGroupDto {
  queue: string;
  type: string;
  errorName: string;
  count: number;
  newestFinishedAt: string;
  newestMessage: string | null;
  newestJobId: string;
}

/**
 * Failed jobs grouped by queue, type and error name, with counts and the newest error message, the
 * largest groups first (at most 200 groups). Walks the failed-jobs index only.
 */
export async function deadLetterGroups(db: Db): Promise<DeadLetterGroupDto[]> {
  const rows = await deadLetterGroupRows(db);
  return rows.map((r) => ({
    queue: r.queue,
    type: r.type,
    errorName: r.error_name,
    count: Number(r.n),
    newestFinishedAt: iso(r.newest_at),
    newestMessage: r.newest_message,
    newestJobId: r.newest_id,
  }));
}

/** Queues that have pending work now, read fresh (the queue summaries may be a few seconds old). */
export { pendingQueueNames };

/** Most jobs one "all matching this filter" action takes (newest first); the dialog says so when more match. */
export const MAX_BULK_JOBS = 10_000;

/** How many jobs match the jobs list's filter, counted up to MAX_BULK_JOBS (then `capped`). */
export async function countMatchingJobs(db: Db, f: JobFilters): Promise<CappedCount> {
  const w = jobFilterWhere(f);
  return cappedCount(db, `workhorse.job ${w}`, w.values, MAX_BULK_JOBS);
}

/** The ids of the jobs matching the filter, newest first, at most MAX_BULK_JOBS. */
export async function matchingJobIds(db: Db, f: JobFilters): Promise<string[]> {
  const w = jobFilterWhere(f);
  const { rows } = await db.query<{ id: string }>(
    `select id from workhorse.job ${w} order by id desc limit ${MAX_BULK_JOBS}`,
    w.values,
  );
  return rows.map((r) => r.id);
}

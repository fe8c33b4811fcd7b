import "server-only";
import { selectPausedQueues, sqlOf } from "@/lib/store/console/core";
import { countJobs, jobIds } from "@/lib/store/console/lists";
import { deadLetterGroupRows, pendingQueueNames } from "@/lib/store/console/reads";
import type { CappedCount, DeadLetterGroupDto, QueuePauseDto } from "../wire/types";
/**
 * Read models for the operator-action pages: queue pauses and dead-letter groups. Reads only; every
 * write goes through lib/enqueue.
 */
import type { JobFilters } from "./filters";
import { iso, type Sql } from "./read-queries";

/** Paused queues with who paused them, when and why. */
export async function pausedQueues(db: Sql): Promise<QueuePauseDto[]> {
  const rows = await selectPausedQueues(sqlOf(db));
  return rows.map((r) => ({ ...r, pausedAt: iso(r.pausedAt) }));
}

/** How many of the newest failed jobs the dead-letter groups are made from. */
export const DEAD_LETTER_GROUP_SCAN = 500;

export interface DeadLetterGroupsDto {
  groups: DeadLetterGroupDto[];
  /**
   * Set when the groups come from the newest `scanned` failed jobs only (the bound was reached):
   * older failed jobs may exist, so every count is "at least" and a group of older jobs only is missing.
   */
  bounded: { scanned: number } | null;
}

/**
 * Failed jobs grouped by queue, type and error name, with counts and the newest error message, the
 * largest groups first (at most 200 groups), made from the newest `scan` failed jobs (the
 * dead-letter index, newest first; DEAD_LETTER_GROUP_SCAN by default). A group's redrive dry run and
 * its deletion each read the group itself, whatever this bound.
 */
export async function deadLetterGroups(db: Sql, scan = DEAD_LETTER_GROUP_SCAN): Promise<DeadLetterGroupsDto> {
  const { rows, scanned } = await deadLetterGroupRows(db, scan);
  return {
    groups: rows.map((r) => ({
      queue: r.queue,
      type: r.type,
      errorName: r.error_name,
      count: Number(r.n),
      newestFinishedAt: iso(r.newest_at),
      newestMessage: r.newest_message,
      newestJobId: r.newest_id,
    })),
    bounded: scanned >= scan ? { scanned } : null,
  };
}

/** Queues that have pending work now, read fresh (the queue summaries may be a few seconds old). */
export { pendingQueueNames };

/** Most jobs one "all matching this filter" action takes (newest first); the dialog says so when more match. */
export const MAX_BULK_JOBS = 10_000;

/** How many jobs match the jobs list's filter, counted up to MAX_BULK_JOBS (then `capped`). */
export async function countMatchingJobs(db: Sql, f: JobFilters): Promise<CappedCount> {
  return countJobs(db, f, MAX_BULK_JOBS);
}

/** The ids of the jobs matching the filter, newest first, at most MAX_BULK_JOBS. */
export async function matchingJobIds(db: Sql, f: JobFilters): Promise<string[]> {
  return jobIds(db, f, MAX_BULK_JOBS);
}

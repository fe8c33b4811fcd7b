import "server-only";
/**
 * Read models for the operator-action pages: queue pauses and dead-letter groups. Reads only; every
 * write goes through lib/enqueue.
 */
import type { JobFilters } from "./filters";
import { jobFilterWhere } from "./jobs";
import { cappedCount, type Db, isDistributed, iso } from "./read-queries";
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
  const { rows } = await db.query<{
    queue: string;
    type: string;
    error_name: string;
    n: string;
    newest_at: Date;
    newest_message: string | null;
    newest_id: string;
  }>(
    (await isDistributed(db))
      ? // Citus cannot push down the lateral newest-job probe per group: one grouped pass instead,
        // the newest job of a group taken by an ordered aggregate.
        `select j.queue, j.type, coalesce(j.last_error ->> 'name', 'Error') as error_name, count(*) as n,
                max(j.finished_at) as newest_at,
                (array_agg(left(j.last_error ->> 'message', 300) order by j.finished_at desc, j.id desc))[1]
                  as newest_message,
                (array_agg(j.id order by j.finished_at desc, j.id desc))[1] as newest_id
           from workhorse.job j where j.state = 'failed'
          group by 1, 2, 3
          order by 4 desc, 5 desc
          limit 200`
      : `select g.queue, g.type, g.error_name, g.n, g.newest_at, n.message as newest_message, n.id as newest_id
       from (select j.queue, j.type, coalesce(j.last_error ->> 'name', 'Error') as error_name, count(*) as n,
                    max(j.finished_at) as newest_at
               from workhorse.job j where j.state = 'failed'
              group by 1, 2, 3) g
      cross join lateral (
        select j.id, left(j.last_error ->> 'message', 300) as message
          from workhorse.job j
         where j.state = 'failed' and j.queue = g.queue and j.type = g.type
           and coalesce(j.last_error ->> 'name', 'Error') = g.error_name
         order by j.finished_at desc, j.id desc limit 1) n
      order by g.n desc, g.newest_at desc
      limit 200`,
  );
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

/**
 * Queues that have pending work now, read fresh (the queue summaries may be a few seconds old): a
 * loose index scan over the pending-jobs index, one probe per queue, however many jobs there are.
 */
export async function pendingQueueNames(db: Db): Promise<string[]> {
  // Citus refuses a recursive CTE without a filter on the distribution column: there each shard
  // answers its distinct queue names and the coordinator merges them.
  const { rows } = await db.query<{ queue: string }>(
    (await isDistributed(db))
      ? `select distinct j.queue::text as queue from workhorse.job j
          where j.state in ('scheduled', 'ready') order by 1 limit 1000`
      : `with recursive q(queue) as (
       (select j.queue from workhorse.job j where j.state in ('scheduled', 'ready') order by j.queue limit 1)
       union all
       select (select j.queue from workhorse.job j
                where j.state in ('scheduled', 'ready') and j.queue > q.queue order by j.queue limit 1)
         from q where q.queue is not null)
     select queue::text from q where queue is not null limit 1000`,
  );
  return rows.map((r) => r.queue);
}

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

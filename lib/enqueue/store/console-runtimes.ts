/**
 * Run times (the console's /run-times) and their hourly rollup: durations of the attempts that
 * ended a job (`finished_at - started_at` of succeeded and failed jobs) as histograms over fixed
 * buckets, per queue and type. The last hour is read from the jobs (the `finished_at` index,
 * migration 005); longer spans from `workhorse.run_time_bucket`, which maintenance fills one
 * finished hour at a time (`rollupRunTimesBatch`) and keeps for 30 days. Dead-letter groups' error
 * trend: failures per group in the last hour, day and the day before (the dead-letter index).
 */
import type { Queryable, Sql } from "./layout";

/** Upper bounds of the duration buckets, in ms (bucket i: below bound i; the last: at least the last bound). */
export const RUN_TIME_BOUNDS_MS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
  3_600_000,
] as const;

/** Hours the rollup keeps, and the most one maintenance run rolls up (a long pause catches up over runs). */
export const RUN_TIME_RETENTION_HOURS = 30 * 24;
export const RUN_TIME_HOURS_PER_RUN = 48;

export interface BucketRow {
  queue: string;
  type: string;
  bucket: number;
  succeeded: number;
  failed: number;
}

const BUCKET_OF = `width_bucket(extract(epoch from (j.finished_at - j.started_at)) * 1000, $1::float8[])`;

/** Histograms of the jobs that finished since `since` (at most a few hours: the index range is read whole). */
export async function liveBuckets(db: Queryable, since: Date): Promise<BucketRow[]> {
  const { rows } = await db.query<BucketRow>(
    `select j.queue, j.type, ${BUCKET_OF}::int as bucket,
            (count(*) filter (where j.state = 'succeeded'))::int as succeeded,
            (count(*) filter (where j.state = 'failed'))::int as failed
       from workhorse.job j
      where j.finished_at >= $2::timestamptz and j.started_at is not null and j.state in ('succeeded', 'failed')
      group by 1, 2, 3`,
    [[...RUN_TIME_BOUNDS_MS], since],
  );
  return rows;
}

/** The rollup's histograms of the hours in [from, to), summed per queue, type and bucket. */
export async function rolledBuckets(db: Queryable, from: Date, to: Date): Promise<BucketRow[]> {
  const { rows } = await db.query<BucketRow>(
    `select queue, type, bucket::int as bucket, sum(succeeded)::int as succeeded, sum(failed)::int as failed
       from workhorse.run_time_bucket
      where hour >= $1::timestamptz and hour < $2::timestamptz
      group by 1, 2, 3`,
    [from, to],
  );
  return rows;
}

/** The newest hour rolled up, and the database's clock. */
export async function rollupState(db: Queryable): Promise<{ newest: Date | null; now: Date }> {
  const { rows } = await db.query<{ newest: Date | null; now: Date }>(
    "select (select max(hour) from workhorse.run_time_bucket) as newest, now() as now",
  );
  return rows[0] as { newest: Date | null; now: Date };
}

/**
 * Maintenance: rolls up the finished hours after the newest one rolled (at most
 * RUN_TIME_HOURS_PER_RUN of them, never further back than that), then deletes hours past the
 * retention. Returns the rows written.
 */
export async function rollupRunTimesBatch(sql: Sql): Promise<number> {
  const { rowCount } = await sql.query({
    name: "workhorse_rollup_run_times",
    text: `with span as (
             select greatest(coalesce((select max(hour) + interval '1 hour' from workhorse.run_time_bucket), '-infinity'),
                             date_trunc('hour', now()) - $2::integer * interval '1 hour') as lo,
                    date_trunc('hour', now()) as hi)
           insert into workhorse.run_time_bucket (hour, queue, type, bucket, succeeded, failed)
           select date_trunc('hour', j.finished_at), j.queue, j.type, ${BUCKET_OF},
                  count(*) filter (where j.state = 'succeeded'), count(*) filter (where j.state = 'failed')
             from workhorse.job j, span
            where j.finished_at >= span.lo and j.finished_at < span.hi
              and j.started_at is not null and j.state in ('succeeded', 'failed')
            group by 1, 2, 3, 4
           on conflict do nothing`,
    values: [[...RUN_TIME_BOUNDS_MS], RUN_TIME_HOURS_PER_RUN],
  });
  await sql.query({
    name: "workhorse_prune_run_times",
    text: "delete from workhorse.run_time_bucket where hour < date_trunc('hour', now()) - $1::integer * interval '1 hour'",
    values: [RUN_TIME_RETENTION_HOURS],
  });
  return rowCount ?? 0;
}

/** Failures per dead-letter group: in the last hour, the last 24 h and the 24 h before (at most `limit` groups). */
export async function deadLetterTrendRows(db: Queryable, limit: number) {
  const { rows } = await db.query<{
    queue: string;
    type: string;
    error_name: string;
    last_hour: number;
    last_day: number;
    day_before: number;
  }>(
    `select j.queue, j.type, coalesce(j.last_error->>'name', 'Error') as error_name,
            (count(*) filter (where j.finished_at >= now() - interval '1 hour'))::int as last_hour,
            (count(*) filter (where j.finished_at >= now() - interval '1 day'))::int as last_day,
            (count(*) filter (where j.finished_at < now() - interval '1 day'))::int as day_before
       from workhorse.job j
      where j.state = 'failed' and j.finished_at >= now() - interval '2 days'
      group by 1, 2, 3
      order by last_day desc, day_before desc, 1, 2, 3
      limit $1::integer`,
    [limit],
  );
  return rows;
}

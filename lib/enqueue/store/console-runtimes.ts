/**
 * Run times (the console's /run-times) and their rollups: durations of the attempts that ended a
 * job (`finished_at - started_at` of succeeded and failed jobs) as histograms over fixed buckets,
 * per queue and type. Maintenance fills `workhorse.run_time_bucket` one finished hour at a time
 * (`rollupRunTimesBatch`), sums its whole UTC days into `workhorse.run_time_day` and counts the
 * failures per hour and error name into `workhorse.failure_bucket` (migration 021), all kept 30
 * days. The page reads the rollups, and from the jobs only the newest LIVE_SAMPLE finished since
 * the newest rolled hour (at most the last two hours): every read is bounded whatever the throughput.
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

/** Most jobs (and most failed jobs) the page reads from the jobs themselves, newest first. */
export const LIVE_SAMPLE = 1_000;

export interface LiveBucketRow extends BucketRow {
  /** Finished within the last hour. */
  last_hour: boolean;
  /** Finished at or after the end of the newest rolled hour (not in the rollup yet). */
  since_rollup: boolean;
}

/**
 * Histograms of the newest `limit` jobs that finished since `from` (the job_finished_idx walked
 * backwards), flagged by whether they finished within the last hour and since `rolledTo`; with how
 * many were read and the oldest finish among them (`scanned` = `limit`: older ones were left out).
 */
export async function liveBuckets(db: Queryable, from: Date, rolledTo: Date, limit: number) {
  const { rows } = await db.query<LiveBucketRow & { scanned: number; oldest: Date | null }>(
    `with recent as materialized (
       select j.queue, j.type, j.state, j.started_at, j.finished_at from workhorse.job j
        where j.finished_at >= $2::timestamptz and j.started_at is not null and j.state in ('succeeded', 'failed')
        order by j.finished_at desc limit $4::integer)
     select s.scanned, s.oldest, g.*
       from (select count(*)::int as scanned, min(finished_at) as oldest from recent) s
       left join lateral (
         select j.queue::text as queue, j.type::text as type, ${BUCKET_OF}::int as bucket,
                j.finished_at >= now() - interval '1 hour' as last_hour, j.finished_at >= $3::timestamptz as since_rollup,
                (count(*) filter (where j.state = 'succeeded'))::int as succeeded,
                (count(*) filter (where j.state = 'failed'))::int as failed
           from recent j group by 1, 2, 3, 4, 5) g on true`,
    [[...RUN_TIME_BOUNDS_MS], from, rolledTo, limit],
  );
  return {
    rows: rows.filter((r) => r.queue !== null),
    scanned: rows[0]?.scanned ?? 0,
    oldest: rows[0]?.oldest ?? null,
  };
}

export interface RolledRow extends BucketRow {
  /** The part of the sums from `todayFrom` on. */
  succeeded_today: number;
  failed_today: number;
}

/** The hourly rollup's histograms of the hours in [from, to), summed per queue, type and bucket, and from `todayFrom` on. */
export async function rolledBuckets(db: Queryable, from: Date, to: Date, todayFrom: Date): Promise<RolledRow[]> {
  const { rows } = await db.query<RolledRow>(
    `select queue, type, bucket::int as bucket, sum(succeeded)::int as succeeded, sum(failed)::int as failed,
            coalesce(sum(succeeded) filter (where hour >= $3::timestamptz), 0)::int as succeeded_today,
            coalesce(sum(failed) filter (where hour >= $3::timestamptz), 0)::int as failed_today
       from workhorse.run_time_bucket
      where hour >= $1::timestamptz and hour < $2::timestamptz
      group by 1, 2, 3`,
    [from, to, todayFrom],
  );
  return rows;
}

/** The daily rollup's histograms of the UTC days in [from, to), summed per queue, type and bucket. */
export async function rolledDays(db: Queryable, from: Date, to: Date): Promise<BucketRow[]> {
  const { rows } = await db.query<BucketRow>(
    `select queue, type, bucket::int as bucket, sum(succeeded)::int as succeeded, sum(failed)::int as failed
       from workhorse.run_time_day
      where day >= $1::timestamptz and day < $2::timestamptz
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
 * RUN_TIME_HOURS_PER_RUN of them, never further back than that) into the run-time and the failure
 * rollups, sums whole UTC days into the daily one, then deletes rows past the retention. Returns
 * the hourly rows written (run times and failures).
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
  // Whole UTC days from the hours: every day an hour of this run may have changed (the rollup never
  // reaches further back than RUN_TIME_HOURS_PER_RUN), else only days not summed yet.
  await sql.query({
    name: "workhorse_rollup_run_time_days",
    text: `insert into workhorse.run_time_day (day, queue, type, bucket, succeeded, failed)
           select date_trunc('day', hour, 'UTC'), queue, type, bucket, sum(succeeded), sum(failed)
             from workhorse.run_time_bucket
            where hour >= case when $1::boolean
                               then date_trunc('day', date_trunc('hour', now()) - $2::integer * interval '1 hour', 'UTC')
                               else greatest(coalesce((select max(day) + interval '1 day' from workhorse.run_time_day), '-infinity'),
                                             date_trunc('day', date_trunc('hour', now()) - $2::integer * interval '1 hour', 'UTC')) end
              and hour < date_trunc('day', now(), 'UTC')
            group by 1, 2, 3, 4
           on conflict (day, queue, type, bucket) do update set succeeded = excluded.succeeded, failed = excluded.failed`,
    values: [(rowCount ?? 0) > 0, RUN_TIME_HOURS_PER_RUN],
  });
  const failures = await sql.query({
    name: "workhorse_rollup_failures",
    text: `with span as (
             select greatest(coalesce((select max(hour) + interval '1 hour' from workhorse.failure_bucket), '-infinity'),
                             date_trunc('hour', now()) - $1::integer * interval '1 hour') as lo,
                    date_trunc('hour', now()) as hi)
           insert into workhorse.failure_bucket (hour, queue, type, error_name, failed)
           select date_trunc('hour', j.finished_at), j.queue, j.type, coalesce(j.last_error ->> 'name', 'Error'), count(*)
             from workhorse.job j, span
            where j.state = 'failed' and j.finished_at >= span.lo and j.finished_at < span.hi
            group by 1, 2, 3, 4
           on conflict do nothing`,
    values: [RUN_TIME_HOURS_PER_RUN],
  });
  await sql.query({
    name: "workhorse_prune_run_time_rollups",
    text: `with h as (delete from workhorse.run_time_bucket where hour < date_trunc('hour', now()) - $1::integer * interval '1 hour'),
                f as (delete from workhorse.failure_bucket where hour < date_trunc('hour', now()) - $1::integer * interval '1 hour')
           delete from workhorse.run_time_day where day < date_trunc('day', now(), 'UTC') - $1::integer * interval '1 hour'`,
    values: [RUN_TIME_RETENTION_HOURS],
  });
  return (rowCount ?? 0) + (failures.rowCount ?? 0);
}

export interface FailureRow {
  queue: string;
  type: string;
  error_name: string;
  last_hour: number;
  last_day: number;
  day_before: number;
}

/**
 * Failures per dead-letter group from the hourly failure rollup, the hours in [from, to): those
 * starting at or after `dayFrom` as `last_day`, the earlier ones as `day_before`.
 */
export async function rolledFailures(db: Queryable, from: Date, to: Date, dayFrom: Date): Promise<FailureRow[]> {
  const { rows } = await db.query<FailureRow>(
    `select queue, type, error_name, 0 as last_hour,
            coalesce(sum(failed) filter (where hour >= $3::timestamptz), 0)::int as last_day,
            coalesce(sum(failed) filter (where hour < $3::timestamptz), 0)::int as day_before
       from workhorse.failure_bucket
      where hour >= $1::timestamptz and hour < $2::timestamptz
      group by 1, 2, 3`,
    [from, to, dayFrom],
  );
  return rows;
}

/**
 * Failures per dead-letter group among the newest `limit` failed jobs (the dead-letter index walked
 * from its newest entry), those since `from` counted: within the last hour as `last_hour`, since
 * `rolledTo` as `last_day` (the hours not in the rollup yet); with how many of them were since
 * `from` and the oldest of those (`scanned` = `limit`: older ones since `from` were left out).
 * No range condition on `finished_at`: with one, PostgreSQL walks job_finished_idx and filters
 * every job finished since `from` (5,601 rows for 400 failures at the bench's rate), a cost that
 * grows with throughput; without it the read is `limit` index entries at most.
 */
export async function liveFailures(db: Queryable, from: Date, rolledTo: Date, limit: number) {
  const { rows } = await db.query<FailureRow & { scanned: number; oldest: Date | null }>(
    `with recent as materialized (
       select j.queue, j.type, j.finished_at, j.last_error from workhorse.job j
        where j.state = 'failed' order by j.finished_at desc, j.id desc limit $3::integer)
     select s.scanned, s.oldest, g.*
       from (select count(*)::int as scanned, min(finished_at) as oldest from recent
              where finished_at >= $1::timestamptz) s
       left join lateral (
         select j.queue::text as queue, j.type::text as type, coalesce(j.last_error ->> 'name', 'Error') as error_name,
                (count(*) filter (where j.finished_at >= now() - interval '1 hour'))::int as last_hour,
                (count(*) filter (where j.finished_at >= $2::timestamptz))::int as last_day, 0 as day_before
           from recent j where j.finished_at >= $1::timestamptz group by 1, 2, 3) g on true`,
    [from, rolledTo, limit],
  );
  return {
    rows: rows.filter((r) => r.queue !== null),
    scanned: rows[0]?.scanned ?? 0,
    oldest: rows[0]?.oldest ?? null,
  };
}

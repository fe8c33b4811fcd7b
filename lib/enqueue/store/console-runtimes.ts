/**
 * Run times (the console's /run-times) and their rollups: durations of the attempts that ended a
 * job (`finished_at - started_at` of succeeded and failed jobs) as histograms over fixed buckets,
 * per queue and type. Maintenance fills `workhorse.run_time_bucket` one finished hour at a time
 * (`rollupRunTimesBatch`), sums its whole UTC days into `workhorse.run_time_day` and counts the
 * failures per hour and error name into `workhorse.failure_bucket` (migration 021), all kept 30
 * days, and sums what the page shows of them into one `workhorse.run_time_window` row for the
 * current hour (migration 022). The page reads that row (or, before maintenance has run in this
 * hour, the rollups), and from the jobs only the newest LIVE_SAMPLE finished since the newest
 * rolled hour (at most the last two hours): every read is bounded whatever the throughput.
 */
import { type Queryable, queryPrepared, type Sql, sqlOf } from "./layout";

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

// date_part gives float8 (extract gives numeric, whose arithmetic is most of the cost of a 1,000-job read).
const bucketOf = (bounds: string) => `width_bucket(date_part('epoch', j.finished_at - j.started_at) * 1000, ${bounds})`;
const BUCKET_OF = bucketOf("$1::float8[]");

/**
 * The read of the newest finished jobs (liveBuckets), over SQL expressions for its bounds: the
 * duration buckets' bounds, the earliest finish read, the end of the rolled-up hours, the most jobs.
 */
const liveBucketsSql = (bounds: string, from: string, rolledTo: string, limit: string) =>
  `select (sum(count(*)) over ())::int as scanned, min(min(j.finished_at)) over () as oldest,
          j.queue::text as queue, j.type::text as type, ${bucketOf(bounds)}::int as bucket,
          j.finished_at >= now() - interval '1 hour' as last_hour, j.finished_at >= ${rolledTo} as since_rollup,
          (count(*) filter (where j.state = 'succeeded'))::int as succeeded,
          (count(*) filter (where j.state = 'failed'))::int as failed
     from (select j.queue, j.type, j.state, j.started_at, j.finished_at from workhorse.job j
            where j.finished_at >= ${from} and j.started_at is not null and j.state in ('succeeded', 'failed')
            order by j.finished_at desc limit ${limit}) j
    group by 3, 4, 5, 6, 7`;

/** The read of the newest failed jobs (liveFailures), over SQL expressions as liveBucketsSql. */
const liveFailuresSql = (from: string, rolledTo: string, limit: string) =>
  `select (sum(count(*)) over ())::int as scanned, min(min(j.finished_at)) over () as oldest,
          j.queue::text as queue, j.type::text as type, coalesce(j.last_error ->> 'name', 'Error') as error_name,
          (count(*) filter (where j.finished_at >= now() - interval '1 hour'))::int as last_hour,
          (count(*) filter (where j.finished_at >= ${rolledTo}))::int as last_day, 0 as day_before
     from (select j.queue, j.type, j.finished_at, j.last_error from workhorse.job j
            where j.state = 'failed' order by j.finished_at desc, j.id desc limit ${limit}) j
    where j.finished_at >= ${from}
    group by 3, 4, 5`;

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
  const { rows } = await queryPrepared<LiveBucketRow & { scanned: number; oldest: Date | null }>(
    db,
    "workhorse_console_run_times_live",
    // One grouping pass; how many were read and the oldest come from window sums over the groups.
    liveBucketsSql("$1::float8[]", "$2::timestamptz", "$3::timestamptz", "$4::integer"),
    [[...RUN_TIME_BOUNDS_MS], from, rolledTo, limit],
  );
  return {
    rows,
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
  const { rows } = await queryPrepared<RolledRow>(
    db,
    "workhorse_console_run_times_hours",
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
  const { rows } = await queryPrepared<BucketRow>(
    db,
    "workhorse_console_run_times_days",
    `select queue, type, bucket::int as bucket, sum(succeeded)::int as succeeded, sum(failed)::int as failed
       from workhorse.run_time_day
      where day >= $1::timestamptz and day < $2::timestamptz
      group by 1, 2, 3`,
    [from, to],
  );
  return rows;
}

/** One duration bucket of a queue and type in `run_time_window.runs`: the day's and the week's counts. */
export type WindowRun = [
  queue: string,
  type: string,
  bucket: number,
  daySucceeded: number,
  dayFailed: number,
  weekSucceeded: number,
  weekFailed: number,
];
/** One dead-letter group in `run_time_window.failures`. */
export type WindowFailure = [queue: string, type: string, errorName: string, lastDay: number, dayBefore: number];

/**
 * The database's clock, the newest hour rolled up, and the window maintenance summed for a page
 * read in the current hour (migration 022), or null when it has not run for over an hour. One
 * statement: two primary-key reads.
 */
export async function rollupState(db: Queryable): Promise<{
  newest: Date | null;
  now: Date;
  window: { rolledTo: Date; runs: WindowRun[]; failures: WindowFailure[] } | null;
}> {
  const { rows } = await queryPrepared<{
    newest: Date | null;
    now: Date;
    rolled_to: Date | null;
    runs: WindowRun[] | null;
    failures: WindowFailure[] | null;
  }>(
    db,
    "workhorse_console_run_times_window",
    `select n.now, (select max(hour) from workhorse.run_time_bucket) as newest, w.rolled_to, w.runs, w.failures
       from (select now() as now) n
       left join workhorse.run_time_window w on w.ends_at = date_trunc('hour', n.now)`,
    [],
  );
  const r = rows[0] as (typeof rows)[number];
  return {
    now: r.now,
    newest: r.newest,
    window: r.rolled_to && r.runs && r.failures ? { rolledTo: r.rolled_to, runs: r.runs, failures: r.failures } : null,
  };
}

/**
 * Maintenance: rolls up the finished hours after the newest one rolled (at most
 * RUN_TIME_HOURS_PER_RUN of them, never further back than that) into the run-time and the failure
 * rollups, sums whole UTC days into the daily one, sums the page's window for the current hour
 * (`run_time_window`, rewritten on every run), then deletes rows past the retention. Returns the
 * hourly rows written (run times and failures).
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
  await refreshRunTimeWindow(sql);
  await sql.query({
    name: "workhorse_prune_run_time_rollups",
    text: `with h as (delete from workhorse.run_time_bucket where hour < date_trunc('hour', now()) - $1::integer * interval '1 hour'),
                f as (delete from workhorse.failure_bucket where hour < date_trunc('hour', now()) - $1::integer * interval '1 hour')
           delete from workhorse.run_time_day where day < date_trunc('day', now(), 'UTC') - $1::integer * interval '1 hour'`,
    values: [RUN_TIME_RETENTION_HOURS],
  });
  return (rowCount ?? 0) + (failures.rowCount ?? 0);
}

/**
 * Maintenance: the page's rolled-up part (migration 022) summed from the rollups, for a page read
 * in this hour (rolled up to its start) and for one read in the next hour before maintenance runs
 * again (rolled up to the same point: the page reads the jobs from there). Windows of past hours are
 * deleted. `at` stands in for the clock (tests); every hour before its hour must be rolled up.
 */
export async function refreshRunTimeWindow(sql: Sql, at: Date | null = null): Promise<void> {
  await sql.query({
    name: "workhorse_run_time_window",
    text: `with w as (
             select e.ends_at, r.hour as rolled_to, date_trunc('day', e.ends_at, 'UTC') as ends_day,
                    date_trunc('day', r.hour, 'UTC') as rolled_day
               from (select date_trunc('hour', coalesce($1::timestamptz, now())) as hour) r,
                    lateral (values (r.hour), (r.hour + interval '1 hour')) e(ends_at)),
           d as (delete from workhorse.run_time_window where ends_at < date_trunc('hour', coalesce($1::timestamptz, now())))
           insert into workhorse.run_time_window (ends_at, rolled_to, runs, failures)
           select w.ends_at, w.rolled_to,
                  coalesce((select jsonb_agg(jsonb_build_array(queue, type, bucket, ds, df, ws, wf) order by queue, type, bucket)
                              from (select queue, type, bucket, sum(ds)::int as ds, sum(df)::int as df,
                                           sum(ws)::int as ws, sum(wf)::int as wf
                                      from (select queue, type, bucket, succeeded as ds, failed as df, 0 as ws, 0 as wf
                                              from workhorse.run_time_bucket
                                             where hour >= w.ends_at - interval '23 hours' and hour < w.rolled_to
                                            union all
                                            select queue, type, bucket, 0, 0, succeeded, failed
                                              from workhorse.run_time_bucket where hour >= w.rolled_day and hour < w.rolled_to
                                            union all
                                            select queue, type, bucket, 0, 0, succeeded, failed
                                              from workhorse.run_time_day
                                             where day >= w.ends_day - interval '144 hours' and day < w.rolled_day) u
                                     group by 1, 2, 3) h), '[]'),
                  coalesce((select jsonb_agg(jsonb_build_array(queue, type, error_name, ld, db) order by queue, type, error_name)
                              from (select queue, type, error_name,
                                           coalesce(sum(failed) filter (where hour >= w.ends_at - interval '23 hours'), 0)::int as ld,
                                           coalesce(sum(failed) filter (where hour < w.ends_at - interval '23 hours'), 0)::int as db
                                      from workhorse.failure_bucket
                                     where hour >= w.ends_at - interval '47 hours' and hour < w.rolled_to
                                     group by 1, 2, 3) f), '[]')
             from w
           on conflict (ends_at) do update
             set rolled_to = excluded.rolled_to, runs = excluded.runs, failures = excluded.failures`,
    values: [at],
  });
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
  const { rows } = await queryPrepared<FailureRow>(
    db,
    "workhorse_console_run_times_failures",
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
  const { rows } = await queryPrepared<FailureRow & { scanned: number; oldest: Date | null }>(
    db,
    "workhorse_console_run_times_live_failures",
    liveFailuresSql("$1::timestamptz", "$2::timestamptz", "$3::integer"),
    [from, rolledTo, limit],
  );
  return {
    rows,
    scanned: rows[0]?.scanned ?? 0,
    oldest: rows[0]?.oldest ?? null,
  };
}

type Live<R> = { rows: R[]; scanned: number; oldest: Date | null };

/**
 * One node, one statement: the database's clock, the newest rolled hour, the window maintenance
 * summed for a page read in this hour (migration 022) and, when there is one, the newest `limit`
 * finished and failed jobs since the window's end or within the last hour (liveBuckets and
 * liveFailures over its `rolled_to`). With no window the reads of the jobs are not run (`live` is
 * null) and the page reads as Citus does: rollupState, then the reads of the jobs and the rollups.
 * On Citus (which keeps the rollups on the coordinator and the jobs on the workers): null.
 */
export async function runTimesRead(db: Queryable, limit: number) {
  if ((await sqlOf(db).layout()) === "distributed") return null;
  const { rows } = await queryPrepared<{
    now: Date;
    newest: Date | null;
    rolled_to: Date | null;
    runs: WindowRun[] | null;
    failures: WindowFailure[] | null;
    live: (LiveBucketRow & { scanned: number; oldest: string | null })[] | null;
    live_failures: (FailureRow & { scanned: number; oldest: string | null })[] | null;
  }>(
    db,
    "workhorse_console_run_times_page",
    `with w as (select w.rolled_to, w.runs, w.failures from workhorse.run_time_window w
                 where w.ends_at = date_trunc('hour', now())),
          b as (${liveBucketsSql(
            "$1::float8[]",
            "least((select rolled_to from w), now() - interval '1 hour') and exists (select from w)",
            "(select rolled_to from w)",
            "$2::integer",
          )}),
          f as (${liveFailuresSql(
            "least((select rolled_to from w), now() - interval '1 hour') and exists (select from w)",
            "(select rolled_to from w)",
            "$2::integer",
          )})
     select n.now, (select max(hour) from workhorse.run_time_bucket) as newest, w.rolled_to, w.runs, w.failures,
            case when w.rolled_to is not null then (select coalesce(json_agg(b), '[]') from b) end as live,
            case when w.rolled_to is not null then (select coalesce(json_agg(f), '[]') from f) end as live_failures
       from (select now() as now) n left join w on true`,
    [[...RUN_TIME_BOUNDS_MS], limit],
  );
  const r = rows[0] as (typeof rows)[number];
  const live = <R extends { scanned: number; oldest: string | null }>(xs: R[]): Live<R> => ({
    rows: xs,
    scanned: xs[0]?.scanned ?? 0,
    oldest: xs[0]?.oldest ? new Date(xs[0].oldest) : null,
  });
  return {
    now: r.now,
    newest: r.newest,
    window:
      r.rolled_to && r.runs && r.failures && r.live && r.live_failures
        ? {
            rolledTo: r.rolled_to,
            runs: r.runs,
            failures: r.failures,
            live: live(r.live),
            liveFailures: live(r.live_failures),
          }
        : null,
  };
}

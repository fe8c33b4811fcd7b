/**
 * Maintenance's side of the run-times page (lib/console/reads/run-times.ts): the hourly, daily and
 * failure rollups and the page's window (migrations 017, 021, 022, 023). Every statement takes the
 * clock as a parameter (`at`; null: the database's `now()`), so a test can run maintenance at any
 * instant, an hour boundary or midnight UTC included.
 */
import type { Sql } from "../layout";

/** The clock of a statement: the time given as parameter `$n`, else the database's `now()`. */
export const clock = (n: number) => `coalesce($${n}::timestamptz, now())`;

/** Upper bounds of the duration buckets, in ms (bucket i: below bound i; the last: at least the last bound). */
export const RUN_TIME_BOUNDS_MS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
  3_600_000,
] as const;

/** Hours the rollup keeps, and the most one maintenance run rolls up (a long pause catches up over runs). */
export const RUN_TIME_RETENTION_HOURS = 30 * 24;
export const RUN_TIME_HOURS_PER_RUN = 48;

// date_part gives float8 (extract gives numeric, whose arithmetic is most of the cost of a 1,000-job read).
export const bucketOf = (bounds: string) =>
  `width_bucket(date_part('epoch', j.finished_at - j.started_at) * 1000, ${bounds})`;

const BUCKET_OF = bucketOf("$1::float8[]");

/**
 * Maintenance: rolls up the finished hours after the newest one rolled (at most
 * RUN_TIME_HOURS_PER_RUN of them, never further back than that) into the run-time and the failure
 * rollups, sums whole UTC days into the daily one, sums the page's window (`run_time_window`,
 * rewritten on every run), then deletes rows past the retention. `at` stands in for the clock
 * (null: the database's `now()`). Returns the hourly rows written (run times and failures).
 */
export async function rollupRunTimesBatch(sql: Sql, at: Date | null = null): Promise<number> {
  const { rowCount } = await sql.query({
    name: "workhorse_rollup_run_times",
    text: `with span as (
             select greatest(coalesce((select max(hour) + interval '1 hour' from workhorse.run_time_bucket), '-infinity'),
                             date_trunc('hour', ${clock(3)}) - $2::integer * interval '1 hour') as lo,
                    date_trunc('hour', ${clock(3)}) as hi)
           insert into workhorse.run_time_bucket (hour, queue, type, bucket, succeeded, failed)
           select date_trunc('hour', j.finished_at), j.queue, j.type, ${BUCKET_OF},
                  count(*) filter (where j.state = 'succeeded'), count(*) filter (where j.state = 'failed')
             from workhorse.job j, span
            where j.finished_at >= span.lo and j.finished_at < span.hi
              and j.started_at is not null and j.state in ('succeeded', 'failed')
            group by 1, 2, 3, 4
           on conflict do nothing`,
    values: [[...RUN_TIME_BOUNDS_MS], RUN_TIME_HOURS_PER_RUN, at],
  });
  // Whole UTC days from the hours: every day an hour of this run may have changed (the rollup never
  // reaches further back than RUN_TIME_HOURS_PER_RUN), else only days not summed yet.
  await sql.query({
    name: "workhorse_rollup_run_time_days",
    text: `insert into workhorse.run_time_day (day, queue, type, bucket, succeeded, failed)
           select date_trunc('day', hour, 'UTC'), queue, type, bucket, sum(succeeded), sum(failed)
             from workhorse.run_time_bucket
            where hour >= case when $1::boolean
                               then date_trunc('day', date_trunc('hour', ${clock(3)}) - $2::integer * interval '1 hour', 'UTC')
                               else greatest(coalesce((select max(day) + interval '1 day' from workhorse.run_time_day), '-infinity'),
                                             date_trunc('day', date_trunc('hour', ${clock(3)}) - $2::integer * interval '1 hour', 'UTC')) end
              and hour < date_trunc('day', ${clock(3)}, 'UTC')
            group by 1, 2, 3, 4
           on conflict (day, queue, type, bucket) do update set succeeded = excluded.succeeded, failed = excluded.failed`,
    values: [(rowCount ?? 0) > 0, RUN_TIME_HOURS_PER_RUN, at],
  });
  const failures = await sql.query({
    name: "workhorse_rollup_failures",
    text: `with span as (
             select greatest(coalesce((select max(hour) + interval '1 hour' from workhorse.failure_bucket), '-infinity'),
                             date_trunc('hour', ${clock(2)}) - $1::integer * interval '1 hour') as lo,
                    date_trunc('hour', ${clock(2)}) as hi)
           insert into workhorse.failure_bucket (hour, queue, type, error_name, failed)
           select date_trunc('hour', j.finished_at), j.queue, j.type, coalesce(j.last_error ->> 'name', 'Error'), count(*)
             from workhorse.job j, span
            where j.state = 'failed' and j.finished_at >= span.lo and j.finished_at < span.hi
            group by 1, 2, 3, 4
           on conflict do nothing`,
    values: [RUN_TIME_HOURS_PER_RUN, at],
  });
  await refreshRunTimeWindow(sql, at);
  await sql.query({
    name: "workhorse_prune_run_time_rollups",
    text: `with h as (delete from workhorse.run_time_bucket
                       where hour < date_trunc('hour', ${clock(2)}) - $1::integer * interval '1 hour'),
                f as (delete from workhorse.failure_bucket
                       where hour < date_trunc('hour', ${clock(2)}) - $1::integer * interval '1 hour')
           delete from workhorse.run_time_day
            where day < date_trunc('day', ${clock(2)}, 'UTC') - $1::integer * interval '1 hour'`,
    values: [RUN_TIME_RETENTION_HOURS, at],
  });
  return (rowCount ?? 0) + (failures.rowCount ?? 0);
}

/**
 * Maintenance: the page's rolled-up part (migrations 022, 023) for a page read in this hour and
 * for one read in the next hour before maintenance runs again, both rolled up to this hour's start
 * (every hour before it must be rolled up), and the jobs since then counted up to `at`
 * (`taken_at`): `recent` holds, per queue, type, duration bucket (null for a failure that never
 * started) and error name (failures only), the succeeded and failed jobs since the rolled hours and
 * within the hour before `at`. The page then reads only the jobs since `at` and those that left its
 * last hour since then. Windows of past hours are deleted. `at` stands in for the clock (null: the
 * database's `now()`). Reads the jobs of at most the last two hours (`job_finished_idx`).
 */
export async function refreshRunTimeWindow(sql: Sql, at: Date | null = null): Promise<void> {
  // Two statements: the jobs (distributed on Citus) are counted apart from the window's local tables,
  // which Citus does not take in one statement with them. The first fixes the clock for both.
  const counted = await sql.query<{ taken_at: Date; recent: string }>({
    name: "workhorse_run_time_recent",
    text: `with r as (select date_trunc('hour', ${clock(1)}) as hour, ${clock(1)} as at)
           select (select at from r) as taken_at,
                  coalesce(jsonb_agg(jsonb_build_array(queue, type, bucket, error_name, ss, sf, hs, hf)
                                     order by queue, type, bucket, error_name), '[]')::text as recent
             from (select j.queue::text as queue, j.type::text as type,
                          case when j.started_at is not null then ${bucketOf("$2::float8[]")}::int end as bucket,
                          case when j.state = 'failed' then coalesce(j.last_error ->> 'name', 'Error') end as error_name,
                          (count(*) filter (where j.state = 'succeeded' and j.finished_at >= r.hour))::int as ss,
                          (count(*) filter (where j.state = 'failed' and j.finished_at >= r.hour))::int as sf,
                          (count(*) filter (where j.state = 'succeeded' and j.finished_at >= r.at - interval '1 hour'))::int as hs,
                          (count(*) filter (where j.state = 'failed' and j.finished_at >= r.at - interval '1 hour'))::int as hf
                     from workhorse.job j, r
                    where j.finished_at >= least(r.hour, r.at - interval '1 hour') and j.finished_at < r.at
                      and (j.state = 'failed' or (j.state = 'succeeded' and j.started_at is not null))
                    group by 1, 2, 3, 4) x`,
    values: [at, [...RUN_TIME_BOUNDS_MS]],
  });
  const { taken_at: takenAt, recent } = counted.rows[0] as { taken_at: Date; recent: string };
  await sql.query({
    name: "workhorse_run_time_window",
    text: `with r as (select date_trunc('hour', $1::timestamptz) as hour, $1::timestamptz as at),
           w as (
             select e.ends_at, r.hour as rolled_to, r.at as taken_at, date_trunc('day', e.ends_at, 'UTC') as ends_day,
                    date_trunc('day', r.hour, 'UTC') as rolled_day
               from r, lateral (values (r.hour), (r.hour + interval '1 hour')) e(ends_at)),
           d as (delete from workhorse.run_time_window where ends_at < (select hour from r))
           insert into workhorse.run_time_window (ends_at, rolled_to, taken_at, recent, runs, failures)
           select w.ends_at, w.rolled_to, w.taken_at, $2::jsonb,
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
             set rolled_to = excluded.rolled_to, taken_at = excluded.taken_at, recent = excluded.recent,
                 runs = excluded.runs, failures = excluded.failures`,
    values: [takenAt, recent],
  });
}

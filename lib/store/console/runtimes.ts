/**
 * Run times (the console's /run-times) and their rollups: durations of the attempts that ended a
 * job (`finished_at - started_at` of succeeded and failed jobs) as histograms over fixed buckets,
 * per queue and type. Maintenance fills `workhorse.run_time_bucket` one finished hour at a time
 * (`rollupRunTimesBatch`), sums its whole UTC days into `workhorse.run_time_day` and counts the
 * failures per hour and error name into `workhorse.failure_bucket` (migration 021), all kept 30
 * days, and sums what the page shows of them into one `workhorse.run_time_window` row for the
 * current hour (migration 022), with the jobs finished since the rolled hours counted up to the
 * run (migration 023; the statements are in runtime-rollups.ts). The page reads that row and from
 * the jobs only those finished since maintenance's run and those that left the last hour since then
 * (liveSpans), or, before maintenance has run in this hour or the one before, the rollups and the
 * newest LIVE_SAMPLE finished since the newest rolled hour. Every read takes the clock as a
 * parameter (null: the database's `now()`) and is bounded whatever the throughput.
 */
import {
  bucketOf,
  clock,
  RUN_TIME_BOUNDS_MS,
  RUN_TIME_HOURS_PER_RUN,
  RUN_TIME_RETENTION_HOURS,
} from "../core/runtime-rollups";
import { queryPrepared, type Sql, sqlOf } from "../layout";

export { bucketOf, clock, RUN_TIME_BOUNDS_MS, RUN_TIME_HOURS_PER_RUN, RUN_TIME_RETENTION_HOURS };

export interface BucketRow {
  queue: string;
  type: string;
  bucket: number;
  succeeded: number;
  failed: number;
}

/**
 * The read of the newest finished jobs (liveBuckets), over SQL expressions for its bounds: the
 * duration buckets' bounds, the earliest finish read, the end of the rolled-up hours, the most
 * jobs, the clock.
 */
const liveBucketsSql = (bounds: string, from: string, rolledTo: string, limit: string, now: string) =>
  `select (sum(count(*)) over ())::int as scanned, min(min(j.finished_at)) over () as oldest,
          j.queue::text as queue, j.type::text as type, ${bucketOf(bounds)}::int as bucket,
          j.finished_at >= ${now} - interval '1 hour' as last_hour, j.finished_at >= ${rolledTo} as since_rollup,
          (count(*) filter (where j.state = 'succeeded'))::int as succeeded,
          (count(*) filter (where j.state = 'failed'))::int as failed
     from (select j.queue, j.type, j.state, j.started_at, j.finished_at from workhorse.job j
            where j.finished_at >= ${from} and j.finished_at <= ${now}
              and j.started_at is not null and j.state in ('succeeded', 'failed')
            order by j.finished_at desc limit ${limit}) j
    group by 3, 4, 5, 6, 7`;

/** The read of the newest failed jobs (liveFailures), over SQL expressions as liveBucketsSql. */
const liveFailuresSql = (from: string, rolledTo: string, limit: string, now: string) =>
  `select (sum(count(*)) over ())::int as scanned, min(min(j.finished_at)) over () as oldest,
          j.queue::text as queue, j.type::text as type, coalesce(j.last_error ->> 'name', 'Error') as error_name,
          (count(*) filter (where j.finished_at >= ${now} - interval '1 hour'))::int as last_hour,
          (count(*) filter (where j.finished_at >= ${rolledTo}))::int as last_day, 0 as day_before
     from (select j.queue, j.type, j.finished_at, j.last_error from workhorse.job j
            where j.state = 'failed' and j.finished_at <= ${now}
            order by j.finished_at desc, j.id desc limit ${limit}) j
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
export async function liveBuckets(db: Sql, from: Date, rolledTo: Date, limit: number, now: Date | null) {
  const { rows } = await queryPrepared<LiveBucketRow & { scanned: number; oldest: Date | null }>(
    db,
    "workhorse_console_run_times_live",
    // One grouping pass; how many were read and the oldest come from window sums over the groups.
    liveBucketsSql("$1::float8[]", "$2::timestamptz", "$3::timestamptz", "$4::integer", clock(5)),
    [[...RUN_TIME_BOUNDS_MS], from, rolledTo, limit, now],
  );
  return {
    rows,
    scanned: rows[0]?.scanned ?? 0,
    oldest: rows[0]?.oldest ?? null,
  };
}

export interface RolledRow extends BucketRow {
  /** The sums of the hours from `weekFrom` on (`succeeded` and `failed`: from `dayFrom` on). */
  succeeded_week: number;
  failed_week: number;
}

/**
 * The hourly rollup's histograms of the hours before `to`, summed per queue, type and bucket: those
 * from `dayFrom` on, and those from `weekFrom` on (the hours of the week not in the daily rollup).
 */
export async function rolledBuckets(db: Sql, dayFrom: Date, weekFrom: Date, to: Date): Promise<RolledRow[]> {
  const { rows } = await queryPrepared<RolledRow>(
    db,
    "workhorse_console_run_times_hours",
    `select queue, type, bucket::int as bucket,
            coalesce(sum(succeeded) filter (where hour >= $1::timestamptz), 0)::int as succeeded,
            coalesce(sum(failed) filter (where hour >= $1::timestamptz), 0)::int as failed,
            coalesce(sum(succeeded) filter (where hour >= $2::timestamptz), 0)::int as succeeded_week,
            coalesce(sum(failed) filter (where hour >= $2::timestamptz), 0)::int as failed_week
       from workhorse.run_time_bucket
      where hour >= least($1::timestamptz, $2::timestamptz) and hour < $3::timestamptz
      group by 1, 2, 3`,
    [dayFrom, weekFrom, to],
  );
  return rows;
}

/** The daily rollup's histograms of the UTC days in [from, to), summed per queue, type and bucket. */
export async function rolledDays(db: Sql, from: Date, to: Date): Promise<BucketRow[]> {
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
 * One entry of `run_time_window.recent` (migration 023): the jobs finished since the window's
 * rolled hours up to maintenance's run (`taken_at`) and within the hour before that run, per queue,
 * type, duration bucket (null: a failure that never started, counted only as a failure) and error
 * name (failures only, else null).
 */
export type RecentRow = [
  queue: string,
  type: string,
  bucket: number | null,
  errorName: string | null,
  sinceSucceeded: number,
  sinceFailed: number,
  hourSucceeded: number,
  hourFailed: number,
];

/** The window maintenance wrote for a page read in the current hour (migrations 022, 023). */
export interface RunTimeWindow {
  rolledTo: Date;
  takenAt: Date;
  runs: WindowRun[];
  failures: WindowFailure[];
  recent: RecentRow[];
}

interface WindowColumns {
  rolled_to: Date | null;
  taken_at: Date | null;
  runs: WindowRun[] | null;
  failures: WindowFailure[] | null;
  recent: RecentRow[] | null;
}

const windowOf = (r: WindowColumns): RunTimeWindow | null =>
  r.rolled_to && r.taken_at && r.runs && r.failures && r.recent
    ? { rolledTo: r.rolled_to, takenAt: r.taken_at, runs: r.runs, failures: r.failures, recent: r.recent }
    : null;

/**
 * The clock (`now`, or the database's), the newest hour rolled up, and the window maintenance
 * summed for a page read in the clock's hour (migrations 022, 023), or null when it has not run in
 * this hour or the one before. One statement: two primary-key reads.
 */
export async function rollupState(
  db: Sql,
  now: Date | null,
): Promise<{ newest: Date | null; now: Date; window: RunTimeWindow | null }> {
  const { rows } = await queryPrepared<{ newest: Date | null; now: Date } & WindowColumns>(
    db,
    "workhorse_console_run_times_window",
    `select n.now, (select max(hour) from workhorse.run_time_bucket) as newest,
            w.rolled_to, w.taken_at, w.runs, w.failures, w.recent
       from (select ${clock(1)} as now) n
       left join workhorse.run_time_window w on w.ends_at = date_trunc('hour', n.now)`,
    [now],
  );
  const r = rows[0] as (typeof rows)[number];
  return { now: r.now, newest: r.newest, window: windowOf(r) };
}

/**
 * The read of the jobs beside a window (liveSpans), over SQL expressions for the duration buckets'
 * bounds, the window's `taken_at`, the clock and the most jobs per span: the newest `limit`
 * finished from `taken_at` to the clock (`newer`), and the newest `limit` finished in the same
 * span an hour earlier (they have left the last hour since maintenance counted it). Per span and
 * queue, type, bucket and error name as in `RecentRow`, with how many the span read and its oldest.
 */
const liveSpansSql = (bounds: string, takenAt: string, now: string, limit: string) => {
  const finished = "(j.state = 'failed' or (j.state = 'succeeded' and j.started_at is not null))";
  const cols = "j.queue, j.type, j.state, j.started_at, j.finished_at, j.last_error";
  return `select j.newer, (sum(count(*)) over (partition by j.newer))::int as scanned,
          min(min(j.finished_at)) over (partition by j.newer) as oldest,
          j.queue::text as queue, j.type::text as type,
          case when j.started_at is not null then ${bucketOf(bounds)}::int end as bucket,
          case when j.state = 'failed' then coalesce(j.last_error ->> 'name', 'Error') end as error_name,
          (count(*) filter (where j.state = 'succeeded'))::int as succeeded,
          (count(*) filter (where j.state = 'failed'))::int as failed
     from ((select true as newer, ${cols} from workhorse.job j
             where j.finished_at >= ${takenAt} and j.finished_at <= ${now} and ${finished}
             order by j.finished_at desc limit ${limit})
           union all
           (select false as newer, ${cols} from workhorse.job j
             where j.finished_at >= ${takenAt} - interval '1 hour' and j.finished_at < ${now} - interval '1 hour'
               and ${finished}
             order by j.finished_at desc limit ${limit})) j
    group by 1, 4, 5, 6, 7`;
};

export interface SpanRow {
  /** From the window's `taken_at` to the clock (true), or the same span an hour earlier (false). */
  newer: boolean;
  queue: string;
  type: string;
  bucket: number | null;
  error_name: string | null;
  succeeded: number;
  failed: number;
}

/** The rows of liveSpans, and per span how many jobs were read and the oldest finish among them. */
export interface Spans {
  rows: SpanRow[];
  newer: { scanned: number; oldest: Date | null };
  older: { scanned: number; oldest: Date | null };
}

type SpanWire = SpanRow & { scanned: number; oldest: Date | string | null };

function spansOf(rows: SpanWire[]): Spans {
  const span = (newer: boolean) => {
    const r = rows.find((x) => x.newer === newer);
    return { scanned: r?.scanned ?? 0, oldest: r?.oldest ? new Date(r.oldest) : null };
  };
  return { rows, newer: span(true), older: span(false) };
}

/**
 * Beside a window taken at `takenAt`: the jobs finished from then to the clock (`now`, or the
 * database's), and those finished in the same span an hour earlier, at most `limit` of each, newest
 * first (two backward walks of `job_finished_idx`; how long they are depends on how long ago
 * maintenance ran, not on the history). `scanned` = `limit`: older ones in the span were left out.
 */
export async function liveSpans(db: Sql, takenAt: Date, limit: number, now: Date | null): Promise<Spans> {
  const { rows } = await queryPrepared<SpanWire>(
    db,
    "workhorse_console_run_times_spans",
    liveSpansSql("$1::float8[]", "$2::timestamptz", clock(4), "$3::integer"),
    [[...RUN_TIME_BOUNDS_MS], takenAt, limit, now],
  );
  return spansOf(rows);
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
export async function rolledFailures(db: Sql, from: Date, to: Date, dayFrom: Date): Promise<FailureRow[]> {
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
export async function liveFailures(db: Sql, from: Date, rolledTo: Date, limit: number, now: Date | null) {
  const { rows } = await queryPrepared<FailureRow & { scanned: number; oldest: Date | null }>(
    db,
    "workhorse_console_run_times_live_failures",
    liveFailuresSql("$1::timestamptz", "$2::timestamptz", "$3::integer", clock(4)),
    [from, rolledTo, limit, now],
  );
  return {
    rows,
    scanned: rows[0]?.scanned ?? 0,
    oldest: rows[0]?.oldest ?? null,
  };
}

/**
 * One node, one statement: the clock (`now`, or the database's), the newest rolled hour, the window
 * maintenance summed for a page read in the clock's hour (migrations 022, 023) and, when there is
 * one, the jobs beside it (liveSpans). With no window the reads of the jobs are not run and the
 * page reads as Citus does: rollupState, then the reads of the jobs and the rollups. On Citus
 * (which keeps the rollups on the coordinator and the jobs on the workers): null.
 */
export async function runTimesRead(db: Sql, limit: number, now: Date | null) {
  if ((await sqlOf(db).layout()) === "distributed") return null;
  const { rows } = await queryPrepared<{ now: Date; newest: Date | null; spans: SpanWire[] | null } & WindowColumns>(
    db,
    "workhorse_console_run_times_page",
    `with n as (select ${clock(3)} as now),
          w as (select w.rolled_to, w.taken_at, w.runs, w.failures, w.recent from workhorse.run_time_window w
                 where w.ends_at = date_trunc('hour', (select now from n))),
          s as (${liveSpansSql("$1::float8[]", "(select taken_at from w)", "(select now from n)", "$2::integer")})
     select n.now, (select max(hour) from workhorse.run_time_bucket) as newest,
            w.rolled_to, w.taken_at, w.runs, w.failures, w.recent,
            case when w.taken_at is not null then (select coalesce(json_agg(s), '[]') from s) end as spans
       from n left join w on true`,
    [[...RUN_TIME_BOUNDS_MS], limit, now],
  );
  const r = rows[0] as (typeof rows)[number];
  const window = windowOf(r);
  return {
    now: r.now,
    newest: r.newest,
    window: window && r.spans ? { ...window, spans: spansOf(r.spans) } : null,
  };
}

import "server-only";
import {
  type BucketRow,
  type FailureRow,
  LIVE_SAMPLE,
  liveBuckets,
  liveFailures,
  RUN_TIME_BOUNDS_MS,
  rolledBuckets,
  rolledDays,
  rolledFailures,
  rollupState,
  runTimesRead,
  type WindowFailure,
  type WindowRun,
} from "@/lib/enqueue/store/console-runtimes";
import { type Db, iso } from "./read-queries";

const HOUR = 3_600_000;

export { LIVE_SAMPLE };

/** Runs and duration percentiles of one span: p50 and p95 to a bucket's upper bound, in ms (null: no runs). */
export interface SpanStats {
  runs: number;
  failed: number;
  p50Ms: number | null;
  p95Ms: number | null;
  /** The slowest bucket is open-ended: its p95 reads "at least" this. */
  p95Open: boolean;
}

export interface RunTimeRow {
  queue: string;
  type: string;
  lastHour: SpanStats;
  lastDay: SpanStats;
  last7Days: SpanStats;
}

/** Set when a read of the jobs themselves stopped at its bound: it holds the newest `jobs`, back to `since`. */
export type LiveSample = { jobs: number; since: string } | null;

export interface RunTimesDto {
  now: string;
  /** The newest hour in the rollup (maintenance writes it), or null before the first run. */
  rolledUpTo: string | null;
  /** The 7-day figures start at this UTC midnight (six whole days from the daily rollup, then today). */
  weekFrom: string;
  /** The finished jobs read from the jobs (the last hour, the hours not rolled up yet), when capped. */
  liveSample: LiveSample;
  rows: RunTimeRow[];
  /** The failed jobs read from the jobs for the trend, when capped. */
  trendSample: LiveSample;
  deadLetterTrend: {
    queue: string;
    type: string;
    errorName: string;
    lastHour: number;
    lastDay: number;
    dayBefore: number;
  }[];
}

/** p-th percentile of a histogram: the upper bound of the bucket where the cumulative count reaches it. */
export function percentileOf(counts: Map<number, number>, p: number): { ms: number | null; open: boolean } {
  let total = 0;
  for (const n of counts.values()) total += n;
  if (total === 0) return { ms: null, open: false };
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (const bucket of [...counts.keys()].sort((a, b) => a - b)) {
    seen += counts.get(bucket) ?? 0;
    if (seen >= rank) {
      // width_bucket: 0 below the first bound, i for [bound i-1, bound i), n at or above the last.
      const open = bucket >= RUN_TIME_BOUNDS_MS.length;
      const ms = open ? (RUN_TIME_BOUNDS_MS.at(-1) as number) : RUN_TIME_BOUNDS_MS[bucket];
      return { ms: ms ?? null, open };
    }
  }
  return { ms: null, open: false };
}

function statsOf(rows: BucketRow[]): Map<string, SpanStats> {
  const by = new Map<string, { counts: Map<number, number>; failed: number }>();
  for (const r of rows) {
    const key = `${r.queue}\u001f${r.type}`;
    const e = by.get(key) ?? { counts: new Map(), failed: 0 };
    e.counts.set(r.bucket, (e.counts.get(r.bucket) ?? 0) + r.succeeded + r.failed);
    e.failed += r.failed;
    by.set(key, e);
  }
  const out = new Map<string, SpanStats>();
  for (const [key, e] of by) {
    let runs = 0;
    for (const n of e.counts.values()) runs += n;
    const p50 = percentileOf(e.counts, 50);
    const p95 = percentileOf(e.counts, 95);
    out.set(key, { runs, failed: e.failed, p50Ms: p50.ms, p95Ms: p95.ms, p95Open: p95.open });
  }
  return out;
}

const EMPTY: SpanStats = { runs: 0, failed: 0, p50Ms: null, p95Ms: null, p95Open: false };

const DAY = 24 * HOUR;

/**
 * A dead-letter group's trend, its last 24 hours against the 24 before: "new" only when the day
 * before had no failure (however many now); otherwise "rising" or "falling" for a change by half
 * and by at least 3, else "steady".
 */
export function trendWord(lastDay: number, dayBefore: number): "new" | "rising" | "falling" | "steady" {
  if (dayBefore === 0 && lastDay > 0) return "new";
  if (lastDay > dayBefore * 1.5 && lastDay - dayBefore >= 3) return "rising";
  if (lastDay * 1.5 < dayBefore && dayBefore - lastDay >= 3) return "falling";
  return "steady";
}

/** Groups the trend's rows (rollup and live) per dead-letter group, most failures in the last day first. */
function trendOf(rows: FailureRow[], limit: number): RunTimesDto["deadLetterTrend"] {
  const by = new Map<string, RunTimesDto["deadLetterTrend"][number]>();
  for (const r of rows) {
    const key = `${r.queue}\u001f${r.type}\u001f${r.error_name}`;
    const e = by.get(key) ?? {
      queue: r.queue,
      type: r.type,
      errorName: r.error_name,
      lastHour: 0,
      lastDay: 0,
      dayBefore: 0,
    };
    e.lastHour += r.last_hour;
    e.lastDay += r.last_day;
    e.dayBefore += r.day_before;
    by.set(key, e);
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...by.values()]
    .sort(
      (a, b) =>
        b.lastDay - a.lastDay ||
        b.dayBefore - a.dayBefore ||
        cmp(a.queue, b.queue) ||
        cmp(a.type, b.type) ||
        cmp(a.errorName, b.errorName),
    )
    .slice(0, limit);
}

const sampleOf = (r: { scanned: number; oldest: Date | null }, limit: number): LiveSample =>
  r.scanned >= limit && r.oldest ? { jobs: r.scanned, since: iso(r.oldest) } : null;

/**
 * Duration p50/p95 per queue and type over the last hour, the last day and the last 7 days, and
 * each dead-letter group's failures in the last hour, day and the day before. Every read is
 * bounded: whole hours and days from the window maintenance summed for this hour (one row,
 * `workhorse.run_time_window`; `{ window: false }` or no window: from the hourly, daily and failure
 * rollups themselves), and from the jobs only the newest LIVE_SAMPLE finished (and failed) since the
 * newest rolled hour or within the last hour (`liveSample` / `trendSample` say when that bound was
 * reached). On one node one statement (runTimesRead); on Citus, or without a window, the window
 * first and then the reads of the jobs (and of the rollups) at once.
 */
export async function runTimes(
  db: Db,
  liveLimit = LIVE_SAMPLE,
  options: { window?: boolean } = {},
): Promise<RunTimesDto> {
  // One node: one statement (the window and the reads of the jobs). Citus, or no window: the
  // window first, then the reads of the jobs (and of the rollups without a window) at once.
  const read = options.window === false ? null : await runTimesRead(db, liveLimit);
  const state = read ?? (await rollupState(db));
  const now = state.now;
  const hourStart = Math.floor(now.getTime() / HOUR) * HOUR;
  // Maintenance's window for a page read in this hour replaces the three rollup reads; without it
  // (maintenance has not run for over an hour) the page sums them itself. The window's rolled hours
  // end at this hour's start, or at the previous hour's when maintenance has not run in this one.
  const window = options.window === false ? null : state.window;
  const newest = window ? new Date(window.rolledTo.getTime() - HOUR) : state.newest;
  const sinceRollup = newest ? new Date(newest.getTime() + HOUR) : new Date(now.getTime() - 7 * DAY);
  // At most the current and the previous hour are read from the jobs; older hours only from the
  // rollups (when maintenance fell behind, the page says up to which hour the history goes). On an
  // hour boundary, so no hour is counted from both.
  const liveFrom = new Date(Math.max(sinceRollup.getTime(), hourStart - HOUR));
  const readFrom = new Date(Math.min(liveFrom.getTime(), now.getTime() - HOUR));
  const dayFrom = new Date(now.getTime() - DAY);
  const today = new Date(now);
  today.setUTCHours(0, 0, 0, 0);
  const weekFrom = new Date(today.getTime() - 6 * DAY);
  const joined = read?.window;
  const [live, failuresLive, rolled] = joined
    ? [joined.live, joined.liveFailures, fromWindow(joined)]
    : await Promise.all([
        liveBuckets(db, readFrom, liveFrom, liveLimit),
        liveFailures(db, readFrom, liveFrom, liveLimit),
        window ? fromWindow(window) : fromRollups(db, now, liveFrom, dayFrom, today, weekFrom),
      ]);
  const sinceRolled = live.rows.filter((r) => r.since_rollup);
  const lastHour = statsOf(live.rows.filter((r) => r.last_hour));
  const lastDay = statsOf([...rolled.day, ...sinceRolled]);
  const last7 = statsOf([...rolled.week, ...sinceRolled]);
  const keys = [...new Set([...lastHour.keys(), ...lastDay.keys(), ...last7.keys()])].sort();
  return {
    now: iso(now),
    rolledUpTo: newest ? iso(newest) : null,
    weekFrom: iso(weekFrom),
    liveSample: sampleOf(live, liveLimit),
    rows: keys.map((k) => {
      const [queue = "", type = ""] = k.split("\u001f");
      return {
        queue,
        type,
        lastHour: lastHour.get(k) ?? EMPTY,
        lastDay: lastDay.get(k) ?? EMPTY,
        last7Days: last7.get(k) ?? EMPTY,
      };
    }),
    trendSample: sampleOf(failuresLive, liveLimit),
    deadLetterTrend: trendOf([...rolled.failures, ...failuresLive.rows], 200),
  };
}

/** The rolled-up part of the page: histograms of the day's and the week's rolled hours, and failures per group. */
interface Rolled {
  day: BucketRow[];
  week: BucketRow[];
  failures: FailureRow[];
}

function fromWindow(w: { runs: WindowRun[]; failures: WindowFailure[] }): Rolled {
  return {
    day: w.runs.map(([queue, type, bucket, succeeded, failed]) => ({ queue, type, bucket, succeeded, failed })),
    week: w.runs.map(([queue, type, bucket, , , succeeded, failed]) => ({ queue, type, bucket, succeeded, failed })),
    failures: w.failures.map(([queue, type, error_name, last_day, day_before]) => ({
      queue,
      type,
      error_name,
      last_hour: 0,
      last_day,
      day_before,
    })),
  };
}

/** The rolled-up part summed from the rollups: the hours of the last day, the week's whole days, 48 hours of failures. */
async function fromRollups(
  db: Db,
  now: Date,
  liveFrom: Date,
  dayFrom: Date,
  today: Date,
  weekFrom: Date,
): Promise<Rolled> {
  const [hours, days, failures] = await Promise.all([
    rolledBuckets(db, dayFrom, liveFrom, today),
    rolledDays(db, weekFrom, today),
    rolledFailures(db, new Date(now.getTime() - 2 * DAY), liveFrom, dayFrom),
  ]);
  const todayHours = hours.map((r) => ({ ...r, succeeded: r.succeeded_today, failed: r.failed_today }));
  return { day: hours, week: [...days, ...todayHours], failures };
}

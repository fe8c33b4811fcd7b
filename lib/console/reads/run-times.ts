import "server-only";
import {
  type BucketRow,
  type FailureRow,
  LIVE_SAMPLE,
  liveBuckets,
  liveFailures,
  liveSpans,
  RUN_TIME_BOUNDS_MS,
  type RunTimeWindow,
  rolledBuckets,
  rolledDays,
  rolledFailures,
  rollupState,
  runTimesRead,
  type Spans,
  type WindowFailure,
  type WindowRun,
} from "@/lib/store/console/runtimes";
import { iso, type Sql } from "./read-queries";

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

/**
 * Set when a read of the jobs themselves stopped at its bound (the counts of the last hour and of the
 * hours not rolled up are then partial): it read `jobs`, the newest back to `since`.
 */
export type LiveSample = { jobs: number; since: string } | null;

export interface RunTimesDto {
  now: string;
  /** The newest hour in the rollup (maintenance writes it), or null before the first run. */
  rolledUpTo: string | null;
  /** The 7-day figures start at this UTC midnight (six whole days from the daily rollup, then today). */
  weekFrom: string;
  /** The finished jobs read from the jobs (since maintenance's window, or the last hour and the hours not rolled up yet), when capped. */
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
    // The window's last hour less the jobs that left it since (runTimes) is never below zero; a job
    // redriven or deleted since maintenance counted it could make it so until maintenance runs again.
    for (const [bucket, n] of e.counts) e.counts.set(bucket, Math.max(0, n));
    e.failed = Math.max(0, e.failed);
    let runs = 0;
    for (const n of e.counts.values()) runs += n;
    if (runs === 0) continue;
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
    .map((g) => ({ ...g, lastHour: Math.max(0, g.lastHour), lastDay: Math.max(0, g.lastDay) }))
    .filter((g) => g.lastHour + g.lastDay + g.dayBefore > 0)
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
 * each dead-letter group's failures in the last hour, day and the day before, as of `options.now`
 * (default: the database's clock; every statement takes it as a parameter). Every read is bounded:
 * - With the window maintenance wrote for this hour (`workhorse.run_time_window`, one row; it runs
 *   every 5 minutes by default): the rolled hours and days, and the jobs finished since the rolled
 *   hours up to its run, all counted by maintenance; from the jobs only those finished since its run
 *   and those that have left the last hour since then (liveSpans, at most `liveLimit` of each). The
 *   counts are exact however many jobs finish in an hour; `liveSample` says when that bound was
 *   reached (maintenance has not run for a long while at a high rate).
 * - Without one (`{ window: false }`, or maintenance has not run in this hour or the one before):
 *   the hourly, daily and failure rollups, and the newest `liveLimit` finished (and failed) since the
 *   newest rolled hour or within the last hour (`liveSample` / `trendSample` say when capped).
 * On one node one statement (runTimesRead); on Citus, or without a window, the window first and
 * then the reads of the jobs (and of the rollups).
 */
export async function runTimes(
  db: Sql,
  liveLimit = LIVE_SAMPLE,
  options: { window?: boolean; now?: Date } = {},
): Promise<RunTimesDto> {
  const at = options.now ?? null;
  const read = options.window === false ? null : await runTimesRead(db, liveLimit, at);
  const state = read ?? (await rollupState(db, at));
  const now = state.now;
  const hourStart = Math.floor(now.getTime() / HOUR) * HOUR;
  const window = options.window === false ? null : state.window;
  const newest = window ? new Date(window.rolledTo.getTime() - HOUR) : state.newest;
  const today = new Date(now);
  today.setUTCHours(0, 0, 0, 0);
  const weekFrom = new Date(today.getTime() - 6 * DAY);
  const page = window
    ? withWindow(window, read?.window?.spans ?? (await liveSpans(db, window.takenAt, liveLimit, at)), liveLimit)
    : await withoutWindow(db, { now, at, hourStart, newest, weekFrom, liveLimit });
  const lastHour = statsOf(page.lastHour);
  const lastDay = statsOf([...page.rolled.day, ...page.sinceRolled]);
  const last7 = statsOf([...page.rolled.week, ...page.sinceRolled]);
  const keys = [...new Set([...lastHour.keys(), ...lastDay.keys(), ...last7.keys()])].sort();
  return {
    now: iso(now),
    rolledUpTo: newest ? iso(newest) : null,
    weekFrom: iso(weekFrom),
    liveSample: page.liveSample,
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
    trendSample: page.trendSample,
    deadLetterTrend: trendOf([...page.rolled.failures, ...page.failures], 200),
  };
}

/** The page's parts before they are summed: histogram rows per span and failure rows. */
interface Parts {
  rolled: Rolled;
  /** Finished since the rolled hours: added to the day and the week. */
  sinceRolled: BucketRow[];
  lastHour: BucketRow[];
  /** Not rolled up (last_hour, last_day); the rollup's are in `rolled.failures`. */
  failures: FailureRow[];
  liveSample: LiveSample;
  trendSample: LiveSample;
}

/**
 * With maintenance's window: what it counted up to its run (`recent`), plus the jobs since then,
 * less (from the last hour) those that finished an hour before those: the last hour from the
 * clock's, exactly.
 */
function withWindow(window: RunTimeWindow, spans: Spans, limit: number): Parts {
  const sinceRolled: BucketRow[] = [];
  const lastHour: BucketRow[] = [];
  const failures: FailureRow[] = [];
  const add = (queue: string, type: string, bucket: number | null, errorName: string | null, n: Counts) => {
    if (bucket !== null) {
      sinceRolled.push({ queue, type, bucket, succeeded: n.since[0], failed: n.since[1] });
      lastHour.push({ queue, type, bucket, succeeded: n.hour[0], failed: n.hour[1] });
    }
    if (errorName !== null) {
      failures.push({ queue, type, error_name: errorName, last_hour: n.hour[1], last_day: n.since[1], day_before: 0 });
    }
  };
  for (const [queue, type, bucket, errorName, ss, sf, hs, hf] of window.recent) {
    add(queue, type, bucket, errorName, { since: [ss, sf], hour: [hs, hf] });
  }
  for (const r of spans.rows) {
    const n: [number, number] = [r.succeeded, r.failed];
    if (r.newer) add(r.queue, r.type, r.bucket, r.error_name, { since: n, hour: n });
    else add(r.queue, r.type, r.bucket, r.error_name, { since: [0, 0], hour: [-n[0], -n[1]] });
  }
  const cut = spans.newer.scanned >= limit || spans.older.scanned >= limit;
  const oldest = spans.newer.oldest ?? spans.older.oldest;
  const sample = cut && oldest ? { jobs: spans.newer.scanned + spans.older.scanned, since: iso(oldest) } : null;
  return { rolled: fromWindow(window), sinceRolled, lastHour, failures, liveSample: sample, trendSample: sample };
}

interface Counts {
  since: [succeeded: number, failed: number];
  hour: [succeeded: number, failed: number];
}

/** Without a window: the rollups summed here, and the newest `liveLimit` jobs since the newest rolled hour. */
async function withoutWindow(
  db: Sql,
  c: {
    now: Date;
    at: Date | null;
    hourStart: number;
    newest: Date | null;
    weekFrom: Date;
    liveLimit: number;
  },
): Promise<Parts> {
  const sinceRollup = c.newest ? new Date(c.newest.getTime() + HOUR) : new Date(c.now.getTime() - 7 * DAY);
  // At most the current and the previous hour are read from the jobs; older hours only from the
  // rollups (when maintenance fell behind, the page says up to which hour the history goes). On an
  // hour boundary, so no hour is counted from both.
  const liveFrom = new Date(Math.max(sinceRollup.getTime(), c.hourStart - HOUR));
  const readFrom = new Date(Math.min(liveFrom.getTime(), c.now.getTime() - HOUR));
  // The day is this hour and the 23 before it, as in maintenance's window (its `ends_at - 23 hours`),
  // so both give the same figures at every instant, an hour's first millisecond included.
  const dayFrom = new Date(c.hourStart - 23 * HOUR);
  const [live, failuresLive, rolled] = await Promise.all([
    liveBuckets(db, readFrom, liveFrom, c.liveLimit, c.at),
    liveFailures(db, readFrom, liveFrom, c.liveLimit, c.at),
    fromRollups(db, {
      liveFrom,
      dayFrom,
      rolledDay: new Date(Math.max(dayOf(sinceRollup).getTime(), c.weekFrom.getTime())),
      weekFrom: c.weekFrom,
    }),
  ]);
  return {
    rolled,
    sinceRolled: live.rows.filter((r) => r.since_rollup),
    lastHour: live.rows.filter((r) => r.last_hour),
    failures: failuresLive.rows,
    liveSample: sampleOf(live, c.liveLimit),
    trendSample: sampleOf(failuresLive, c.liveLimit),
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

const dayOf = (d: Date) => new Date(Math.floor(d.getTime() / DAY) * DAY);

/**
 * The rolled-up part summed from the rollups, as maintenance sums its window: the hours of the last
 * day before `liveFrom`; the week's whole days before the day the rolled hours end in (`rolledDay`;
 * the days before it are in the daily rollup), then its hours; 48 hours of failures.
 */
async function fromRollups(
  db: Sql,
  c: { liveFrom: Date; dayFrom: Date; rolledDay: Date; weekFrom: Date },
): Promise<Rolled> {
  const [hours, days, failures] = await Promise.all([
    rolledBuckets(db, c.dayFrom, c.rolledDay, c.liveFrom),
    rolledDays(db, c.weekFrom, c.rolledDay),
    rolledFailures(db, new Date(c.dayFrom.getTime() - DAY), c.liveFrom, c.dayFrom),
  ]);
  const weekHours = hours.map((r) => ({ ...r, succeeded: r.succeeded_week, failed: r.failed_week }));
  return { day: hours, week: [...days, ...weekHours], failures };
}

import "server-only";
import {
  type BucketRow,
  deadLetterTrendRows,
  liveBuckets,
  RUN_TIME_BOUNDS_MS,
  rolledBuckets,
  rollupState,
} from "@/lib/enqueue/store/console-runtimes";
import { type Db, iso } from "./read-queries";

const HOUR = 3_600_000;

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

export interface RunTimesDto {
  now: string;
  /** The newest hour in the rollup (maintenance writes it), or null before the first run. */
  rolledUpTo: string | null;
  rows: RunTimeRow[];
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

/**
 * Duration p50/p95 per queue and type over the last hour (from the jobs), the last day and the last
 * 7 days (the hours maintenance rolled up, plus the jobs since the newest rolled hour), and each
 * dead-letter group's failures in the last hour, day and the day before.
 */
export async function runTimes(db: Db): Promise<RunTimesDto> {
  const state = await rollupState(db);
  const now = state.now;
  const sinceRollup = state.newest ? new Date(state.newest.getTime() + HOUR) : new Date(now.getTime() - 7 * 24 * HOUR);
  // Bounded: at most the last two hours are read from the jobs; older hours only from the rollup
  // (when maintenance fell behind, the page says up to which hour the history goes).
  const liveFrom = new Date(Math.max(sinceRollup.getTime(), now.getTime() - 2 * HOUR));
  const [hour, live, day, week, trend] = await Promise.all([
    liveBuckets(db, new Date(now.getTime() - HOUR)),
    // Jobs since the newest rolled hour (the current hour, at most two).
    liveBuckets(db, liveFrom),
    rolledBuckets(db, new Date(now.getTime() - 24 * HOUR), liveFrom),
    rolledBuckets(db, new Date(now.getTime() - 7 * 24 * HOUR), liveFrom),
    deadLetterTrendRows(db, 200),
  ]);
  const lastHour = statsOf(hour);
  const lastDay = statsOf([...day, ...live]);
  const last7 = statsOf([...week, ...live]);
  const keys = [...new Set([...lastHour.keys(), ...lastDay.keys(), ...last7.keys()])].sort();
  return {
    now: iso(now),
    rolledUpTo: state.newest ? iso(state.newest) : null,
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
    deadLetterTrend: trend.map((t) => ({
      queue: t.queue,
      type: t.type,
      errorName: t.error_name,
      lastHour: t.last_hour,
      lastDay: t.last_day,
      dayBefore: t.day_before,
    })),
  };
}

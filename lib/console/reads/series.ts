import "server-only";
import { readMinutes } from "@/lib/store/console/series";
import type { SeriesDto, SeriesName, SeriesPoint, SeriesWindow } from "../wire/types";
import { iso, type Sql } from "./read-queries";

/** Minutes per window: one point per minute, the last one being the current (partial) minute. */
export const SERIES_MINUTES: Record<SeriesWindow, number> = { "1h": 60, "24h": 1440 };
const SERIES_NAMES: readonly SeriesName[] = [
  "accepted",
  "replayed",
  "conflicts",
  "replaced",
  "coalesced",
  "nonReplaceable",
  "succeeded",
  "failed",
];
/**
 * A minute is settled (kept in memory and never read again) once it is this far behind the
 * database clock: a job's `created_at` / `finished_at` is its transaction's start, and observations
 * are flushed a moment after the fact, so the last two minutes can still change.
 */
const SETTLE_MS = 2 * 60_000;

const MINUTE = 60_000;
const DAY_MINUTES = SERIES_MINUTES["24h"];

type Counts = Record<SeriesName, number>;

/**
 * Settled minutes per queue filter (null = all queues), newest 24 h at most: the in-memory rollup
 * that keeps the 24 h chart cheap. The first read of a window in a process scans that window once
 * (see docs/console.md for the times at 1,000,000 jobs); later reads scan only the last minutes.
 */
interface Settled {
  /** Minutes from `from` up to `through` (exclusive; ms since epoch, minute starts) are in `minutes`. */
  from: number;
  through: number;
  minutes: Map<number, Counts>;
  /** A read in flight, shared by concurrent callers. */
  pending: Promise<SeriesDto> | null;
}

const settledByDb = new WeakMap<Sql, Map<string, Settled>>();

async function readSeries(db: Sql, state: Settled, window: SeriesWindow, queue: string | null): Promise<SeriesDto> {
  const minutes = SERIES_MINUTES[window];
  // Read from the last settled minute when memory covers the window's start, else the whole window.
  const start = Math.floor(Date.now() / MINUTE) * MINUTE - (minutes - 1) * MINUTE;
  const covered = state.through > 0 && state.from <= start;
  const rows = await readMinutes(db, minutes, covered ? state.through : null, queue);
  if (!covered) {
    state.minutes.clear();
    state.from = rows[0]?.minute.getTime() ?? 0;
    state.through = state.from;
  }
  const now = rows[0]?.now ?? new Date();
  const current = Math.floor(now.getTime() / MINUTE) * MINUTE;
  const settleBefore = Math.floor((now.getTime() - SETTLE_MS) / MINUTE) * MINUTE;
  const fresh = new Map<number, Counts>();
  for (const r of rows) {
    const t = r.minute.getTime();
    const c: Counts = {
      accepted: Number(r.accepted),
      replayed: Number(r.replayed),
      conflicts: Number(r.conflicts),
      replaced: Number(r.replaced),
      coalesced: Number(r.coalesced),
      nonReplaceable: Number(r.non_replaceable),
      succeeded: Number(r.succeeded),
      failed: Number(r.failed),
    };
    if (t < settleBefore) state.minutes.set(t, c);
    else fresh.set(t, c);
  }
  if (settleBefore > state.through) state.through = settleBefore;
  const oldest = current - (DAY_MINUTES - 1) * MINUTE;
  for (const t of state.minutes.keys()) if (t < oldest) state.minutes.delete(t);
  if (state.from < oldest) state.from = oldest;

  const zero = Object.fromEntries(SERIES_NAMES.map((k) => [k, 0])) as Counts;
  const totals: Counts = { ...zero };
  const points: SeriesPoint[] = [];
  for (let t = current - (minutes - 1) * MINUTE; t <= current; t += MINUTE) {
    const c = fresh.get(t) ?? state.minutes.get(t) ?? zero;
    points.push({ t: new Date(t).toISOString(), ...c });
    for (const k of SERIES_NAMES) totals[k] += c[k];
  }
  return { window, queue, now: iso(now), points, totals };
}

/**
 * The health chart's series for the last hour or day, all queues or one. Concurrent callers for
 * the same queue share one read; settled minutes are read once per process.
 */
export function series(db: Sql, window: SeriesWindow, queue: string | null = null): Promise<SeriesDto> {
  let perDb = settledByDb.get(db);
  if (!perDb) {
    perDb = new Map();
    settledByDb.set(db, perDb);
  }
  const key = queue ?? "";
  let state = perDb.get(key);
  if (!state) {
    // Queue names come from URLs: keep at most 64 filters (the oldest one goes).
    if (perDb.size >= 64) perDb.delete(perDb.keys().next().value ?? "");
    state = { from: 0, through: 0, minutes: new Map(), pending: null };
    perDb.set(key, state);
  }
  const s = state;
  const run = (s.pending ?? Promise.resolve()).catch(() => {}).then(() => readSeries(db, s, window, queue));
  s.pending = run;
  run
    .finally(() => {
      if (s.pending === run) s.pending = null;
    })
    .catch(() => {});
  return run;
}

/** Forgets the settled minutes (tests, and the perf script's uncached timings). */
export function invalidateSeries(db: Sql): void {
  settledByDb.delete(db);
}

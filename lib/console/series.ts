import "server-only";
import { type Db, isDistributed, iso, uuidv7Floor } from "./read-queries";
import type { SeriesDto, SeriesName, SeriesPoint, SeriesWindow } from "./wire-types";

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

interface SeriesRow {
  minute: Date;
  accepted: string;
  replayed: string;
  conflicts: string;
  replaced: string;
  coalesced: string;
  non_replaceable: string;
  succeeded: string;
  failed: string;
  now: Date;
}

/**
 * Per-minute counts from `from` (a minute start, or the window start when null) up to the current
 * minute, in one statement:
 *   accepted  - jobs created that minute: a primary-key range (ids are UUIDv7, so time-ordered);
 *   replayed, conflicts, coalesced, non_replaceable - the observation log over its `at` index;
 *   replaced - `debounced` job events over their partial `at` index (migration 009);
 *   succeeded, failed - jobs by `finished_at` over the partial index of migration 005.
 * Each part is bounded by the time range, never by the size of the tables.
 */
async function readMinutes(db: Db, minutes: number, from: number | null, queue: string | null): Promise<SeriesRow[]> {
  const lowest = Math.max(from ?? 0, Date.now() - (minutes + 1) * MINUTE);
  // A minute of slack under the id range for clock skew between this process and PostgreSQL; the
  // exact bound is `created_at >= lo`.
  const floor = uuidv7Floor(lowest - MINUTE);
  const distributed = await isDistributed(db);
  const { rows } = await db.query<SeriesRow>(
    `with span as (
       select greatest(date_trunc('minute', now()) - ($1::int - 1) * interval '1 minute',
                       coalesce($2::timestamptz, '-infinity')) as lo, now() as now
     ),
     acc as (
       select date_trunc('minute', j.created_at) as m, count(*) as n
         from workhorse.job j, span
        where j.id >= $3::uuid and j.created_at >= span.lo and ($4::text is null or j.queue = $4)
        group by 1
     ),
     obs as (
       select date_trunc('minute', o.at) as m,
              count(*) filter (where o.outcome = 'replayed') as replayed,
              count(*) filter (where o.outcome = 'conflict') as conflicts,
              count(*) filter (where o.outcome = 'coalesced') as coalesced,
              count(*) filter (where o.outcome = 'non_replaceable') as non_replaceable
         from workhorse.enqueue_observation o, span
        where o.at >= span.lo and ($4::text is null or o.queue = $4)
        group by 1
     ),
     rep as (${distributed ? "select null::timestamptz as m, 0::bigint as n where false" : REPLACED_CTE}),
     fin as (
       select date_trunc('minute', j.finished_at) as m,
              count(*) filter (where j.state = 'succeeded') as succeeded,
              count(*) filter (where j.state = 'failed') as failed
         from workhorse.job j, span
        where j.finished_at >= span.lo and ($4::text is null or j.queue = $4)
        group by 1
     )
     select g.minute, coalesce(acc.n, 0)::text as accepted, coalesce(obs.replayed, 0)::text as replayed,
            coalesce(obs.conflicts, 0)::text as conflicts, coalesce(rep.n, 0)::text as replaced,
            coalesce(obs.coalesced, 0)::text as coalesced, coalesce(obs.non_replaceable, 0)::text as non_replaceable,
            coalesce(fin.succeeded, 0)::text as succeeded,
            coalesce(fin.failed, 0)::text as failed, span.now
       from span
      cross join generate_series(span.lo, date_trunc('minute', span.now), interval '1 minute') as g(minute)
       left join acc on acc.m = g.minute
       left join obs on obs.m = g.minute
       left join rep on rep.m = g.minute
       left join fin on fin.m = g.minute
      order by g.minute`,
    [minutes, from === null ? null : new Date(from), floor, queue],
  );
  if (distributed && rows.length > 0) await addReplacedDistributed(db, rows, queue);
  return rows;
}

/** `debounced` events per minute, with the queue filter as a join on the job (one node). */
const REPLACED_CTE = `
       select date_trunc('minute', e.at) as m, count(*) as n
         from workhorse.job_event e, span
        where e.kind = 'debounced' and e.at >= span.lo
          and ($4::text is null or exists (select 1 from workhorse.job j where j.id = e.job_id and j.queue = $4))
        group by 1`;

/**
 * The distributed (Citus) form of the replaced series: Citus refuses joining job_event (distributed
 * by job id) to job (by bucket) in one statement, so the events of the window are read first and,
 * with a queue filter, their jobs' queues second; the counts are added to the rows by minute.
 */
async function addReplacedDistributed(db: Db, rows: SeriesRow[], queue: string | null): Promise<void> {
  const lo = rows[0]?.minute as Date;
  const { rows: events } = await db.query<{ m: Date; job_id: string }>(
    `select date_trunc('minute', e.at) as m, e.job_id from workhorse.job_event e
      where e.kind = 'debounced' and e.at >= $1::timestamptz`,
    [lo],
  );
  let keep: Set<string> | null = null;
  if (queue !== null && events.length > 0) {
    const { rows: inQueue } = await db.query<{ id: string }>(
      "select id from workhorse.job where id = any($1::uuid[]) and queue = $2",
      [[...new Set(events.map((e) => e.job_id))], queue],
    );
    keep = new Set(inQueue.map((j) => j.id));
  }
  const perMinute = new Map<number, number>();
  for (const e of events) {
    if (keep && !keep.has(e.job_id)) continue;
    perMinute.set(e.m.getTime(), (perMinute.get(e.m.getTime()) ?? 0) + 1);
  }
  for (const r of rows) r.replaced = String(perMinute.get(new Date(r.minute).getTime()) ?? 0);
}

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

const settledByDb = new WeakMap<Db, Map<string, Settled>>();

async function readSeries(db: Db, state: Settled, window: SeriesWindow, queue: string | null): Promise<SeriesDto> {
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
export function series(db: Db, window: SeriesWindow, queue: string | null = null): Promise<SeriesDto> {
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
export function invalidateSeries(db: Db): void {
  settledByDb.delete(db);
}

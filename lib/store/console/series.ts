/**
 * The console's per-minute series (lib/console/reads/series.ts keeps the settled minutes in memory): the
 * statement that counts a span of minutes, and its Citus form for the "replaced" count.
 */
import { uuidv7Floor } from "../ids";
import { type Sql, sqlOf } from "../layout";

const MINUTE = 60_000;

export interface SeriesRow {
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
export async function readMinutes(
  db: Sql,
  minutes: number,
  from: number | null,
  queue: string | null,
): Promise<SeriesRow[]> {
  const lowest = Math.max(from ?? 0, Date.now() - (minutes + 1) * MINUTE);
  // A minute of slack under the id range for clock skew between this process and PostgreSQL; the
  // exact bound is `created_at >= lo`.
  const floor = uuidv7Floor(lowest - MINUTE);
  const distributed = (await sqlOf(db).layout()) === "distributed";
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
              sum(o.count) filter (where o.outcome = 'replayed') as replayed,
              sum(o.count) filter (where o.outcome = 'conflict') as conflicts,
              sum(o.count) filter (where o.outcome = 'coalesced') as coalesced,
              sum(o.count) filter (where o.outcome = 'non_replaceable') as non_replaceable
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
async function addReplacedDistributed(db: Sql, rows: SeriesRow[], queue: string | null): Promise<void> {
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

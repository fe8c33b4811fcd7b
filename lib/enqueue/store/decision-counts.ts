/**
 * Enqueue decisions per queue and outcome over a span of time, from what the database keeps of
 * every producer's traffic (docs/observability.md, "Decisions from the database"):
 *   accepted - jobs created in the span (not redrive copies): a primary-key range (ids are UUIDv7,
 *              so time-ordered) over created_at;
 *   replayed, conflict, coalesced, non_replaceable - the observation log over its `at` index;
 *   replaced - `debounced` job events over their partial `at` index (migration 009).
 * Each part is bounded by the span's traffic, never by the size of the tables. The span ends
 * `settleMs` before PostgreSQL's now(), so rows written a little after their time (observations
 * are flushed in batches, a job's created_at is its transaction's start) are in place when counted.
 */
import { uuidv7Floor } from "./console-series";
import { type Queryable, sqlOf } from "./layout";

export interface DecisionCountRow {
  outcome: string;
  queue: string;
  n: number;
}

/** The counts of the span `(from, until]` and `until` (PostgreSQL's text of it, to pass back as the next `from`). */
export interface DecisionSpan {
  rows: DecisionCountRow[];
  until: { text: string; ms: number };
}

/** The end of a span: `settleMs` before now, as text (exact to the microsecond) and epoch milliseconds. */
const END = `select t::text as hi, (extract(epoch from t) * 1000)::float8 as ms
  from (select now() - $1::integer * interval '1 millisecond' as t) s`;

const COUNTS = (replaced: boolean) => `
with span as (select $1::timestamptz as lo, $2::timestamptz as hi)
select 'accepted' as outcome, j.queue::text as queue, count(*)::float8 as n
  from workhorse.job j, span
 where j.id >= $3::uuid and j.created_at > span.lo and j.created_at <= span.hi and j.redriven_from is null
 group by j.queue
union all
select o.outcome, o.queue, count(*)::float8
  from workhorse.enqueue_observation o, span
 where o.at > span.lo and o.at <= span.hi
 group by o.outcome, o.queue
${
  replaced
    ? `union all
select 'replaced', j.queue::text, count(*)::float8
  from workhorse.job_event e join workhorse.job j on j.id = e.job_id, span
 where e.kind = 'debounced' and e.at > span.lo and e.at <= span.hi
 group by j.queue`
    : ""
}`;

/**
 * Counts the decisions of `(from, now() - settleMs]`; with `from` null, only finds that end (the
 * counting starts there). One statement on one node; on Citus (job_event and job are distributed on
 * different columns) the replaced events are read apart and their jobs' queues looked up by id.
 */
export async function selectDecisionCounts(
  db: Queryable,
  from: DecisionSpan["until"] | null,
  settleMs: number,
): Promise<DecisionSpan> {
  const sql = sqlOf(db);
  const { rows: ends } = await sql.query<{ hi: string; ms: number }>({ text: END, values: [settleMs] });
  const end = ends[0] as { hi: string; ms: number };
  const until = { text: end.hi, ms: Number(end.ms) };
  if (from === null) return { rows: [], until };
  const distributed = (await sql.layout()) === "distributed";
  // A minute of slack under the id range for clock skew between the id's maker and PostgreSQL.
  const floor = uuidv7Floor(from.ms - 60_000);
  const { rows } = await sql.query<DecisionCountRow>({
    text: COUNTS(!distributed),
    values: [from.text, until.text, floor],
  });
  const out = rows.map((r) => ({ ...r, n: Number(r.n) }));
  if (distributed) out.push(...(await replacedDistributed(db, from.text, until.text)));
  return { rows: out, until };
}

async function replacedDistributed(db: Queryable, from: string, until: string): Promise<DecisionCountRow[]> {
  const sql = sqlOf(db);
  const { rows: events } = await sql.query<{ job_id: string; n: string }>({
    text: `select e.job_id, count(*) as n from workhorse.job_event e
            where e.kind = 'debounced' and e.at > $1::timestamptz and e.at <= $2::timestamptz group by e.job_id`,
    values: [from, until],
  });
  if (events.length === 0) return [];
  const { rows: jobs } = await sql.query<{ id: string; queue: string }>({
    text: "select id, queue::text as queue from workhorse.job where id = any($1::uuid[])",
    values: [events.map((e) => e.job_id)],
  });
  const queueOf = new Map(jobs.map((j) => [j.id, j.queue]));
  const byQueue = new Map<string, number>();
  for (const e of events) {
    const q = queueOf.get(e.job_id);
    if (q !== undefined) byQueue.set(q, (byQueue.get(q) ?? 0) + Number(e.n));
  }
  return [...byQueue].map(([queue, n]) => ({ outcome: "replaced", queue, n }));
}

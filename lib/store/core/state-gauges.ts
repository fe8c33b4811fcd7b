/**
 * The state gauges' statements (state-gauges.ts caches them; two read at once on one node): grouped counts over partial indexes and
 * small tables, so its cost grows with pending, active and failed jobs (index entries, and the heap
 * of active ones only), never with finished jobs or with bindings past a cap (those are estimated
 * from the table's statistics). One row per (metric, queue, label). docs/observability.md says what
 * is exact and what is an estimate.
 */
import { layoutOf, type Sql, sqlOf } from "../layout";
import { GONE_AFTER_MISSED_CHECK_INS } from "./maintenance";

export type StateMetric =
  | "depth"
  | "lag"
  | "dead_letters"
  | "workers"
  | "paused"
  | "bindings"
  | "bindings_exact"
  | "oldest_expired_binding_age";

export interface StateRow {
  metric: StateMetric;
  queue: string | null;
  label: string | null;
  value: number;
}

/** Expired bindings are counted exactly up to this many; past it they (and so live ones) are estimated. */
export const EXACT_BINDINGS_CAP = 10_000;

// workers: heartbeat rows of running workers (not stopping) whose last check-in is younger than
// GONE_AFTER_MISSED_CHECK_INS of their intervals (the console's "gone" age-out), per queue they list.
// A local table on Citus (the coordinator's), so it is read by its own statement there.
const WORKERS_SQL = `
select 'workers' as metric, q.queue, null as label, count(distinct w.worker_id)::float8 as value
  from workhorse.worker_heartbeat w cross join lateral unnest(w.queues) as q(queue)
 where w.status = 'running' and w.checked_at >= now() - $1::integer * w.interval_ms * interval '1 millisecond'
 group by q.queue`;

const PAUSED_AND_OLDEST = `
select 'paused', queue::text, null, 1::float8 from workhorse.queue_pause
union all
select 'oldest_expired_binding_age', null, null, coalesce(extract(epoch from now() - min(expires_at)), 0)::float8
  from workhorse.key_binding where expires_at <= now()`;

// One node, two statements read at once. pending: one index-only pass over job_pending_idx (queue, run_at, id) gives each
// queue's due (`ready`) and not-yet-due (`scheduled`) jobs and its oldest run_at (lag, when due); the
// state column is not in the index, so depth is split by due-ness, which is what a worker claims by.
// active: job_lease_idx; dead_letters (failed jobs not redriven, as the dead-letter list shows them): an index-only scan of job_dead_letter_queue_idx (migration 024). Bindings: live and expired ones each
// counted over key_binding_expires_idx up to the cap ($1), so a small table is counted exactly.
// Past the cap, expired: the share of the planner's histogram of expires_at lying before now()
// times the table's row estimate (pg_class.reltuples, as of the last VACUUM or ANALYZE); live: that
// row estimate minus the expired. Either is at least the cap then.
const PENDING_SQL = `
with pending as (
  select queue::text as queue, count(*) filter (where run_at <= now())::float8 as due,
         count(*)::float8 as total, min(run_at) as oldest
    from workhorse.job where state in ('scheduled', 'ready') group by queue
)
select 'depth' as metric, queue, 'ready' as label, due as value from pending
union all
select 'depth', queue, 'scheduled', total - due from pending
union all
select 'lag', queue, null, extract(epoch from now() - oldest)::float8 from pending where oldest <= now()`;

const REST_SQL = `
with counted as materialized (
  select (select count(*) from (select 1 from workhorse.key_binding where expires_at <= now() limit $1::integer) e)::float8
           as expired,
         (select count(*) from (select 1 from workhorse.key_binding where expires_at > now() limit $1::integer) l)::float8
           as live
),
est as materialized (
  select c.reltuples::float8 as total,
         (select least(1, greatest(0, (count(*) filter (where b <= now()) - 0.5) / nullif(count(*) - 1, 0)))::float8
            from pg_stats s cross join lateral unnest(s.histogram_bounds::text::timestamptz[]) as b
           where s.schemaname = 'workhorse' and s.tablename = 'key_binding' and s.attname = 'expires_at') as share
    from pg_class c where c.oid = 'workhorse.key_binding'::regclass
),
bindings as (
  select c.expired < $1::integer as expired_exact, c.live < $1::integer as live_exact, c.live as live_counted,
         e.total,
         case when c.expired < $1::integer then c.expired
              else greatest(c.expired, e.total * coalesce(e.share, 0)) end as expired
    from counted c cross join est e
)
select 'depth' as metric, queue::text as queue, 'active' as label, count(*)::float8 as value
  from workhorse.job where state = 'active' group by queue
union all
select 'dead_letters', queue::text, null, count(*)::float8
  from workhorse.job where state = 'failed' and redriven_to is null group by queue
union all
${WORKERS_SQL.replace("$1", "$2")}
union all
${PAUSED_AND_OLDEST}
union all
select 'bindings', null, 'expired', b.expired from bindings b
union all
select 'bindings', null, 'live',
       case when b.live_exact then b.live_counted else greatest($1::integer, b.total - b.expired) end
  from bindings b
union all
select 'bindings_exact', null, 'expired', b.expired_exact::integer::float8 from bindings b
union all
select 'bindings_exact', null, 'live', b.live_exact::integer::float8 from bindings b`;

// Citus: exact counts (every leg a plain grouped scan, nothing correlated, which Citus runs on each
// shard and adds up; depth split by due-ness as on one node), and the heartbeat rows
// (a local table on the coordinator) by their own statement. reltuples of a distributed table is
// the coordinator's empty shell's, so nothing is estimated here.
const DISTRIBUTED_SQL = `
select 'depth' as metric, queue::text as queue,
       case when run_at <= now() then 'ready' else 'scheduled' end as label, count(*)::float8 as value
  from workhorse.job where state in ('scheduled', 'ready') group by 2, 3
union all
select 'depth', queue::text, 'active', count(*)::float8 from workhorse.job where state = 'active' group by queue
union all
select 'dead_letters', queue::text, null, count(*)::float8
  from workhorse.job where state = 'failed' and redriven_to is null group by queue
union all
select 'lag', queue::text, null, extract(epoch from now() - min(run_at))::float8
  from workhorse.job where state in ('scheduled', 'ready') and run_at <= now() group by queue
union all
${PAUSED_AND_OLDEST}
union all
select 'bindings', null, 'live', count(*)::float8 from workhorse.key_binding where expires_at > now()
union all
select 'bindings', null, 'expired', count(*)::float8 from workhorse.key_binding where expires_at <= now()
union all
select 'bindings_exact', null, 'live', 1::float8
union all
select 'bindings_exact', null, 'expired', 1::float8`;

/** Reads every state gauge: two statements at once (through a pool, on two connections). */
export async function selectStateRows(db: Sql): Promise<StateRow[]> {
  const sql = sqlOf(db);
  let rows: StateRow[];
  if ((await layoutOf(sql)) === "distributed") {
    const [state, workers] = await Promise.all([
      sql.query<StateRow>({ text: DISTRIBUTED_SQL }),
      sql.query<StateRow>({
        text: WORKERS_SQL,
        values: [GONE_AFTER_MISSED_CHECK_INS],
      }),
    ]);
    rows = [...state.rows, ...workers.rows];
  } else {
    // The pending-jobs pass is the largest part: it runs beside the rest, on its own connection
    // when `db` is a pool (two cores read at once); a single client runs them one after the other.
    const [pending, rest] = await Promise.all([
      sql.query<StateRow>({ text: PENDING_SQL }),
      sql.query<StateRow>({ text: REST_SQL, values: [EXACT_BINDINGS_CAP, GONE_AFTER_MISSED_CHECK_INS] }),
    ]);
    rows = [...pending.rows, ...rest.rows];
  }
  return rows.map((r) => ({ ...r, value: Number(r.value) }));
}

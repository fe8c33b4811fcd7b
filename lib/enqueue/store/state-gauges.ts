/**
 * The state gauges' one statement (state-gauges.ts caches it): a fixed set of grouped counts, each
 * over a partial index or a small table, so its cost grows with pending, active and failed jobs
 * and with bindings, never with finished jobs. One row per (metric, queue, label).
 */
import type { Queryable } from "./layout";

export type StateMetric =
  | "depth"
  | "lag"
  | "dead_letters"
  | "workers"
  | "paused"
  | "bindings"
  | "oldest_expired_binding_age";

export interface StateRow {
  metric: StateMetric;
  queue: string | null;
  label: string | null;
  value: number;
}

// depth: scheduled/ready (job_pending_idx) and active (job_lease_idx). dead_letters: failed
// (job_dead_letter_idx). lag: the oldest due pending job per queue, in seconds. workers: distinct
// worker ids holding an unexpired lease per queue (a lease owner is `<workerId>~<claim>`: workers
// are seen through the leases their heartbeats extend; an idle worker holds none). bindings: live
// and expired-awaiting-cleanup (key_binding_expires_idx).
const STATE_SQL = `
select 'depth' as metric, queue::text as queue, state::text as label, count(*)::float8 as value
  from workhorse.job where state in ('scheduled', 'ready', 'active') group by queue, state
union all
select 'dead_letters', queue::text, null, count(*)::float8
  from workhorse.job where state = 'failed' group by queue
union all
select 'lag', queue::text, null, extract(epoch from now() - min(run_at))::float8
  from workhorse.job where state in ('scheduled', 'ready') and run_at <= now() group by queue
union all
select 'workers', w.queue, null, count(*)::float8
  from (select distinct queue::text as queue, split_part(lease_owner, '~', 1) as worker
          from workhorse.job
         where state = 'active' and lease_owner is not null and lease_expires_at > now()) w
 group by w.queue
union all
select 'paused', queue::text, null, 1::float8 from workhorse.queue_pause
union all
select 'bindings', null, 'live', count(*)::float8 from workhorse.key_binding where expires_at > now()
union all
select 'bindings', null, 'expired', count(*)::float8 from workhorse.key_binding where expires_at <= now()
union all
select 'oldest_expired_binding_age', null, null, coalesce(extract(epoch from now() - min(expires_at)), 0)::float8
  from workhorse.key_binding where expires_at <= now()`;

/** Reads every state gauge in one round trip. */
export async function selectStateRows(db: Queryable): Promise<StateRow[]> {
  const { rows } = await db.query<StateRow>(STATE_SQL);
  return rows.map((r) => ({ ...r, value: Number(r.value) }));
}

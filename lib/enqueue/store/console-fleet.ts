/**
 * The fleet page's per-database figures that the state gauges (state-gauges.ts) do not give: replays
 * and conflicts of the last hour (the observation log over its `at` index) and running workers
 * counted once each (the gauges count a worker per queue it lists). Both bounded by an index or a
 * small table, never by the size of the job table.
 */
import type { Queryable } from "./layout";
import { GONE_AFTER_MISSED_CHECK_INS } from "./maintenance";

export interface FleetExtrasRow {
  replays: string;
  conflicts: string;
  workers: string;
}

export async function fleetExtras(db: Queryable): Promise<FleetExtrasRow | undefined> {
  const { rows } = await db.query<FleetExtrasRow>(
    `select (select coalesce(sum(o.count) filter (where o.outcome = 'replayed'), 0)
               from workhorse.enqueue_observation o where o.at >= now() - interval '1 hour') as replays,
            (select coalesce(sum(o.count) filter (where o.outcome = 'conflict'), 0)
               from workhorse.enqueue_observation o where o.at >= now() - interval '1 hour') as conflicts,
            (select count(*) from workhorse.worker_heartbeat w
              where w.status = 'running'
                and w.checked_at >= now() - $1::integer * w.interval_ms * interval '1 millisecond') as workers`,
    [GONE_AFTER_MISSED_CHECK_INS],
  );
  return rows[0];
}

/**
 * The fleet page's figures for one database (docs/console.md, "Several databases"): bounded reads,
 * so a database of any size answers in a few milliseconds and several of them read at once still
 * share two cores well.
 *   ready, dead letters: counted exactly up to `cap` (`FLEET_COUNT_CAP`), past it reported as
 *     `cap` with `capped` set (the page shows "1,000+"; the database's own pages count exactly);
 *   oldest ready: the oldest due run_at per queue, one index probe per queue of pending jobs (a
 *     loose index scan over job_pending_idx (queue, run_at, id)), so it costs the number of queues,
 *     not of jobs;
 *   replays and conflicts of the last hour: the observation log over its `at` index;
 *   workers: running workers counted once each (heartbeat rows, a small table).
 * One statement on one node. On Citus the job figures and the coordinator's local tables
 * (observation log, heartbeats) are read by two statements, and the oldest ready job by a plain
 * aggregate that each shard answers.
 */

import { GONE_AFTER_MISSED_CHECK_INS } from "../core/maintenance";
import { layoutOf, queryPrepared, type Sql, sqlOf } from "../layout";

/** Counts on the fleet page stop here: past it the page says "1,000+" (a fleet overview asks "is it piling up?"; reading 1,000 index entries per count keeps three databases at once within 2x of one on two cores, docs/benchmarks.md). */
export const FLEET_COUNT_CAP = 1_000;

export interface FleetFiguresRow {
  ready: number;
  ready_capped: boolean;
  oldest_ready_seconds: number;
  dead_letters: number;
  dead_letters_capped: boolean;
  replays: number;
  conflicts: number;
  workers: number;
}

// $1: the cap. Each count reads at most cap + 1 index entries.
const JOBS = `
select least(r.n, $1::integer)::float8 as ready, r.n > $1::integer as ready_capped,
       least(d.n, $1::integer)::float8 as dead_letters, d.n > $1::integer as dead_letters_capped
  from (select count(*) as n from (select 1 from workhorse.job
                                    where state in ('scheduled', 'ready') and run_at <= now()
                                    limit $1::integer + 1) x) r,
       (select count(*) as n from (select 1 from workhorse.job
                                    where state = 'failed' and redriven_to is null
                                    limit $1::integer + 1) x) d`;

// The oldest due job over every queue: a loose index scan, each step the next queue name in
// job_pending_idx and that queue's earliest run_at (the index's second column).
const OLDEST_READY = `
with recursive queues as (
  (select queue::text as queue from workhorse.job where state in ('scheduled', 'ready') order by queue limit 1)
  union all
  select (select j.queue::text from workhorse.job j
           where j.state in ('scheduled', 'ready') and j.queue > q.queue order by j.queue limit 1)
    from queues q where q.queue is not null
)
select coalesce(extract(epoch from now() - min(f.run_at)), 0)::float8 as oldest_ready_seconds
  from queues q
  cross join lateral (select j.run_at from workhorse.job j
                       where j.state in ('scheduled', 'ready') and j.queue = q.queue
                       order by j.run_at limit 1) f
 where q.queue is not null and f.run_at <= now()`;

const OLDEST_READY_DISTRIBUTED = `
select coalesce(extract(epoch from now() - min(run_at)), 0)::float8 as oldest_ready_seconds
  from workhorse.job where state in ('scheduled', 'ready') and run_at <= now()`;

// `gone`: the parameter holding how many missed check-ins make a worker gone (the console's age-out).
const localFigures = (gone: "$1" | "$2") => `
select coalesce((select sum(o.count) from workhorse.enqueue_observation o
                  where o.outcome = 'replayed' and o.at >= now() - interval '1 hour'), 0)::float8 as replays,
       coalesce((select sum(o.count) from workhorse.enqueue_observation o
                  where o.outcome = 'conflict' and o.at >= now() - interval '1 hour'), 0)::float8 as conflicts,
       (select count(*) from workhorse.worker_heartbeat w
         where w.status = 'running'
           and w.checked_at >= now() - ${gone}::integer * w.interval_ms * interval '1 millisecond')::float8 as workers`;

// One node: the three parts in one statement ($1: the cap, $2: the missed check-ins).
const FIGURES = `select * from (${JOBS}) jobs, (${OLDEST_READY}) oldest, (${localFigures("$2")}) local`;

/** The fleet page's figures of one database; see the module comment for what each costs. */
export async function fleetFigures(db: Sql, cap = FLEET_COUNT_CAP): Promise<FleetFiguresRow> {
  const sql = sqlOf(db);
  let row: Record<string, unknown>;
  if ((await layoutOf(sql)) === "distributed") {
    const [jobs, oldest, local] = await Promise.all([
      sql.query({ text: JOBS, values: [cap] }),
      sql.query({ text: OLDEST_READY_DISTRIBUTED }),
      sql.query({ text: localFigures("$1"), values: [GONE_AFTER_MISSED_CHECK_INS] }),
    ]);
    row = { ...jobs.rows[0], ...oldest.rows[0], ...local.rows[0] };
  } else {
    // A named statement: each connection plans it once, not on every read.
    const { rows } = await queryPrepared(db, "workhorse_console_fleet_figures", FIGURES, [
      cap,
      GONE_AFTER_MISSED_CHECK_INS,
    ]);
    row = rows[0] ?? {};
  }
  return {
    ready: Number(row.ready ?? 0),
    ready_capped: row.ready_capped === true,
    oldest_ready_seconds: Math.max(0, Number(row.oldest_ready_seconds ?? 0)),
    dead_letters: Number(row.dead_letters ?? 0),
    dead_letters_capped: row.dead_letters_capped === true,
    replays: Number(row.replays ?? 0),
    conflicts: Number(row.conflicts ?? 0),
    workers: Number(row.workers ?? 0),
  };
}

/**
 * Maintenance's statements (docs/enqueue.md, expiry): each one short bounded batch, and the record
 * of a run in `workhorse.maintenance_run` (what the console's maintenance panel shows).
 */
import type { MaintenanceResult } from "../../enqueue/types";
import { layoutOf, type Sql } from "../layout";

/** Deletes up to `limit` expired bindings (never a pending debounce job's); how many. */
export async function pruneExpiredBindingsBatch(sql: Sql, limit: number): Promise<number> {
  const { rowCount } = await sql.query(
    (await layoutOf(sql)) === "distributed"
      ? // Citus locks rows within one shard only: the oldest are picked across shards, then deleted
        // where still expired (a key re-bound meanwhile is not).
        {
          name: "workhorse_prune_bindings_at",
          text: `delete from workhorse.key_binding b
                    where b.expires_at <= now()
                      and (b.bucket, b.scope, b.key_hash) in (
                            select k.bucket, k.scope, k.key_hash from workhorse.key_binding k
                             where k.expires_at <= now()
                               and (k.mode <> 'debounce' or not exists (
                                     select 1 from workhorse.job j
                                      where j.bucket = k.bucket and j.id = k.job_id
                                        and j.state in ('scheduled', 'ready') and j.attempt = 0
                                        and j.started_at is null offset 0))
                             order by k.expires_at limit $1)`,
          values: [limit],
        }
      : {
          name: "workhorse_prune_bindings",
          text: `with doomed as (
               select k.scope, k.key_hash from workhorse.key_binding k
                where k.expires_at <= now()
                  -- A pending debounce job's binding stays (docs/debounce-throttle.md). OFFSET 0
                  -- keeps the check a primary-key probe per debounce row: without it PostgreSQL
                  -- hashes every pending job once per batch (1,000,000 jobs: 171 s for 500,000
                  -- bindings in npm run bench's prune, against 10.8 s before debounce).
                  and (k.mode <> 'debounce' or not exists (
                        select 1 from workhorse.job j
                         where j.id = k.job_id and j.state in ('scheduled', 'ready') and j.attempt = 0
                           and j.started_at is null offset 0))
                order by k.expires_at limit $1 for update of k skip locked)
             delete from workhorse.key_binding b using doomed d
              where b.scope = d.scope and b.key_hash = d.key_hash`,
          values: [limit],
        },
  );
  return rowCount ?? 0;
}

/** Deletes up to `limit` observations older than `olderThanMs`, oldest first; how many. */
export async function pruneObservationsBatch(sql: Sql, olderThanMs: number, limit: number): Promise<number> {
  const { rowCount } = await sql.query({
    name: "workhorse_prune_observations",
    text: `delete from workhorse.enqueue_observation where id in (
               select id from workhorse.enqueue_observation
                where at < now() - $1::bigint * interval '1 millisecond' order by at limit $2)`,
    values: [olderThanMs, limit],
  });
  return rowCount ?? 0;
}

/** `workhorse.reap_expired_leases`: up to `limit` lapsed leases given back or failed; how many. */
export async function reapExpiredLeasesBatch(sql: Sql, limit: number): Promise<number> {
  const { rows } = await sql.query<{ n: number }>({
    name: "workhorse_reap_expired_leases",
    text: "select workhorse.reap_expired_leases(null, $1::integer) as n",
    values: [limit],
  });
  return rows[0]?.n ?? 0;
}

/**
 * A worker is gone once it missed this many check-ins in a row (the console shows it so), and its
 * heartbeat row is deleted by maintenance `GONE_WORKER_RETENTION_MS` after that.
 */
export const GONE_AFTER_MISSED_CHECK_INS = 3;
export const GONE_WORKER_RETENTION_MS = 15 * 60_000;

/** Deletes the heartbeat rows of workers gone for longer than the retention (a few rows: one statement); how many. */
export async function pruneGoneWorkers(sql: Sql): Promise<number> {
  const { rowCount } = await sql.query({
    name: "workhorse_prune_gone_workers",
    text: `delete from workhorse.worker_heartbeat
            where checked_at < now() - $2::bigint * interval '1 millisecond'
              and checked_at < now() - ($1::integer * interval_ms + $2::bigint) * interval '1 millisecond'`,
    values: [GONE_AFTER_MISSED_CHECK_INS, GONE_WORKER_RETENTION_MS],
  });
  return rowCount ?? 0;
}

/** One row per task of a maintenance run. */
export async function insertMaintenanceRun(
  sql: Sql,
  run: MaintenanceResult & { startedAt: Date; trigger: string },
): Promise<void> {
  await sql.query({
    text: `insert into workhorse.maintenance_run (task, started_at, finished_at, removed, trigger)
           values ('prune_expired_bindings', $1, now(), $2, $4), ('prune_observations', $1, now(), $3, $4),
                  ('reap_expired_leases', $1, now(), $5, $4), ('prune_finished_jobs', $1, now(), $6, $4),
                  ('prune_gone_workers', $1, now(), $7, $4), ('rollup_run_times', $1, now(), $8, $4)`,
    values: [
      run.startedAt,
      run.expiredBindingsDeleted,
      run.observationsDeleted,
      run.trigger,
      run.expiredLeasesReaped,
      run.finishedJobsDeleted,
      run.goneWorkersDeleted,
      run.runTimeRowsRolledUp,
    ],
  });
}

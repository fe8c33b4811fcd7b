/**
 * Maintenance (docs/enqueue.md, expiry): expired bindings, old observations, lapsed leases and
 * finished jobs past their retention, each in short bounded statements, and `runMaintenance`, which
 * runs them all and records the run. Public methods and docs are on `QueueOperations` (queue-operations.ts).
 */

import { parseOptions } from "./input-rules";
import { pruneFinishedJobs } from "./operator-actions";
import { pruneBindingsSchema, pruneObservationsSchema, reapLeasesSchema } from "./operator-input";
import type { OperationsDb } from "./queue-context";

export interface MaintenanceResult {
  expiredBindingsDeleted: number;
  observationsDeleted: number;
  /** Active jobs whose lease had lapsed (their worker died or stalled), given back for a new attempt or failed. */
  expiredLeasesReaped: number;
  /** Terminal jobs past retention deleted (with their events); never one owning a live key. */
  finishedJobsDeleted: number;
}

/**
 * Runs `batch` (which handles at most `limit` rows and says how many it did) until one does fewer
 * than `limit` or `maxBatches` ran; the total. Each batch is its own short statement: no long locks.
 */
async function inBatches(limit: number, maxBatches: number, batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const n = await batch();
    total += n;
    if (n < limit) break;
  }
  return total;
}

export async function pruneExpiredBindings(
  db: OperationsDb,
  options: { limit?: number; maxBatches?: number } = {},
): Promise<number> {
  const { limit, maxBatches } = parseOptions(pruneBindingsSchema, options);
  const distributed = await db.distributed("pruneExpiredBindings");
  return inBatches(limit, maxBatches, async () => {
    const { rowCount } = await db.sql(
      "pruneExpiredBindings",
      distributed
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
  });
}

export async function pruneObservations(
  db: OperationsDb,
  options: { olderThanMs?: number; limit?: number } = {},
): Promise<number> {
  const { olderThanMs, limit } = parseOptions(pruneObservationsSchema, options);
  return inBatches(limit, Number.POSITIVE_INFINITY, async () => {
    const { rowCount } = await db.sql("pruneObservations", {
      name: "workhorse_prune_observations",
      text: `delete from workhorse.enqueue_observation where id in (
               select id from workhorse.enqueue_observation
                where at < now() - $1::bigint * interval '1 millisecond' order by at limit $2)`,
      values: [olderThanMs, limit],
    });
    return rowCount ?? 0;
  });
}

export async function reapExpiredLeases(db: OperationsDb, options: { limit?: number } = {}): Promise<number> {
  const { limit } = parseOptions(reapLeasesSchema, options);
  return inBatches(limit, Number.POSITIVE_INFINITY, async () => {
    const { rows } = await db.sql<{ n: number }>("reapExpiredLeases", {
      name: "workhorse_reap_expired_leases",
      text: "select workhorse.reap_expired_leases(null, $1::integer) as n",
      values: [limit],
    });
    return rows[0]?.n ?? 0;
  });
}

export async function runMaintenance(
  db: OperationsDb,
  options: { trigger?: "schedule" | "manual"; observationRetentionMs?: number; jobRetentionMs?: number } = {},
): Promise<MaintenanceResult> {
  const started = new Date();
  const m = db.context.config.maintenance;
  const expiredBindingsDeleted = await pruneExpiredBindings(db, { limit: m ? m.batchSize : 1000 });
  const observationsDeleted = await pruneObservations(db, {
    olderThanMs: options.observationRetentionMs ?? (m ? m.observationRetentionMs : undefined),
  });
  const expiredLeasesReaped = await reapExpiredLeases(db, { limit: m ? m.batchSize : 1000 });
  const pruned = await pruneFinishedJobs(db, {
    olderThanMs: options.jobRetentionMs ?? (m ? m.jobRetentionMs : undefined),
    limit: m ? m.batchSize : 1000,
  });
  await db.sql("runMaintenance", {
    text: `insert into workhorse.maintenance_run (task, started_at, finished_at, removed, trigger)
           values ('prune_expired_bindings', $1, now(), $2, $4), ('prune_observations', $1, now(), $3, $4),
                  ('reap_expired_leases', $1, now(), $5, $4), ('prune_finished_jobs', $1, now(), $6, $4)`,
    values: [
      started,
      expiredBindingsDeleted,
      observationsDeleted,
      options.trigger ?? "manual",
      expiredLeasesReaped,
      pruned.jobsDeleted,
    ],
  });
  return {
    expiredBindingsDeleted,
    observationsDeleted,
    expiredLeasesReaped,
    finishedJobsDeleted: pruned.jobsDeleted,
  };
}

/**
 * Maintenance (docs/enqueue.md, expiry): expired bindings, old observations, lapsed leases and
 * finished jobs past their retention, each in short bounded statements, and `runMaintenance`, which
 * runs them all and records the run. The statements are in store/core/maintenance.ts. Public methods and docs are on `QueueOperations` (queue.ts).
 */

import * as store from "../store/core/maintenance";
import { pruneFinishedJobsBatch } from "../store/core/operator-actions";
import { rollupRunTimesBatch } from "../store/core/runtime-rollups";
import { type QueueView, storeOf } from "./enqueue-call";
import { parseOptions } from "./input-rules";
import {
  pruneBindingsSchema,
  pruneFinishedJobsSchema,
  pruneObservationsSchema,
  reapLeasesSchema,
} from "./operator-input";
import type { MaintenanceResult, PruneFinishedJobsResult } from "./types";

export type { MaintenanceResult };

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
  view: QueueView,
  options: { limit?: number; maxBatches?: number } = {},
): Promise<number> {
  const { limit, maxBatches } = parseOptions(pruneBindingsSchema, options);
  return inBatches(limit, maxBatches, () =>
    store.pruneExpiredBindingsBatch(storeOf(view, "pruneExpiredBindings"), limit),
  );
}

export async function pruneObservations(
  view: QueueView,
  options: { olderThanMs?: number; limit?: number } = {},
): Promise<number> {
  const { olderThanMs, limit } = parseOptions(pruneObservationsSchema, options);
  const batch = () => store.pruneObservationsBatch(storeOf(view, "pruneObservations"), olderThanMs, limit);
  return inBatches(limit, Number.POSITIVE_INFINITY, batch);
}

export async function reapExpiredLeases(view: QueueView, options: { limit?: number } = {}): Promise<number> {
  const { limit } = parseOptions(reapLeasesSchema, options);
  return inBatches(limit, Number.POSITIVE_INFINITY, () =>
    store.reapExpiredLeasesBatch(storeOf(view, "reapExpiredLeases"), limit),
  );
}

export async function runMaintenance(
  view: QueueView,
  options: { trigger?: "schedule" | "manual"; observationRetentionMs?: number; jobRetentionMs?: number } = {},
): Promise<MaintenanceResult> {
  const started = new Date();
  const m = view.context.config.maintenance;
  const expiredBindingsDeleted = await pruneExpiredBindings(view, { limit: m ? m.batchSize : 1000 });
  const observationsDeleted = await pruneObservations(view, {
    olderThanMs: options.observationRetentionMs ?? (m ? m.observationRetentionMs : undefined),
  });
  const expiredLeasesReaped = await reapExpiredLeases(view, { limit: m ? m.batchSize : 1000 });
  const pruned = await pruneFinishedJobs(view, {
    olderThanMs: options.jobRetentionMs ?? (m ? m.jobRetentionMs : undefined),
    limit: m ? m.batchSize : 1000,
  });
  const result: MaintenanceResult = {
    expiredBindingsDeleted,
    observationsDeleted,
    expiredLeasesReaped,
    finishedJobsDeleted: pruned.jobsDeleted,
    goneWorkersDeleted: await store.pruneGoneWorkers(storeOf(view, "pruneGoneWorkers")),
    runTimeRowsRolledUp: await rollupRunTimesBatch(storeOf(view, "rollupRunTimes")),
  };
  await store.insertMaintenanceRun(storeOf(view, "runMaintenance"), {
    ...result,
    startedAt: started,
    trigger: options.trigger ?? "manual",
  });
  return result;
}

export async function pruneFinishedJobs(
  view: QueueView,
  options: { olderThanMs?: number; limit?: number; maxBatches?: number } = {},
): Promise<PruneFinishedJobsResult> {
  const { olderThanMs, limit, maxBatches } = parseOptions(pruneFinishedJobsSchema, options);
  let jobsDeleted = 0;
  let eventsDeleted = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const r = await pruneFinishedJobsBatch(storeOf(view, "pruneFinishedJobs"), olderThanMs, limit);
    const n = r.jobsDeleted;
    jobsDeleted += n;
    eventsDeleted += r.eventsDeleted;
    if (n < limit) break;
  }
  return { jobsDeleted, eventsDeleted };
}

import "server-only";
import { selectPausedQueues, sqlOf } from "@/lib/store/console/core";
import { dbNow, lastHourFinished, queueProbes } from "@/lib/store/console/status";
import type { JobStateName, QueueHealthDto } from "../wire/types";
import { COUNT_CAP, stateCounts } from "./overview";
import { iso, type Sql } from "./read-queries";

/** A due job not started this long after its run time is overdue: no worker is keeping up. */
export const OVERDUE_AFTER_MS = 60_000;

/**
 * Health of every queue (or one): depth by state (the shared 15 s state counts), the age of the
 * oldest due job (queue latency) and how many are overdue, the next scheduled run, running jobs
 * whose lease lapsed, and the last hour's throughput and failure rate. Per queue these are probes
 * of the partial pending index (queue, run_at), the active-lease index and the finished_at index,
 * so their cost does not grow with the table.
 */
export async function queueHealth(db: Sql, only?: string): Promise<{ now: string; queues: QueueHealthDto[] }> {
  const counts = await stateCounts(db);
  const names = [...new Set(counts.rows.map((r) => r.queue))].filter((q) => !only || q === only).sort();
  if (only && names.length === 0) names.push(only);
  const [finished, pausedRows] = await Promise.all([lastHourFinished(db, only), selectPausedQueues(sqlOf(db))]);
  const paused = new Map(pausedRows.map((p) => [p.queue, p]));
  const lastHour = new Map(
    finished.map((r) => [r.queue, { succeeded: Number(r.succeeded), failed: Number(r.failed) }]),
  );
  const queues = await Promise.all(
    names.map(async (queue): Promise<QueueHealthDto> => {
      const probes = await queueProbes(db, queue, OVERDUE_AFTER_MS, COUNT_CAP);
      const byState: Partial<Record<JobStateName, number>> = {};
      let retrying = 0;
      let total = 0;
      for (const r of counts.rows) {
        if (r.queue !== queue) continue;
        byState[r.state] = r.n;
        retrying += r.retrying;
        total += r.n;
      }
      const hour = lastHour.get(queue) ?? { succeeded: 0, failed: 0 };
      const done = hour.succeeded + hour.failed;
      return {
        queue,
        counts: byState,
        retrying,
        total,
        pending: probes.pending,
        waiting: {
          ready: probes.due,
          scheduled: {
            value: Math.max(0, probes.pending.value - probes.due.value),
            capped: probes.pending.capped,
          },
        },
        oldestDueAt: probes.oldestDueAt ? iso(probes.oldestDueAt) : null,
        nextRunAt: probes.nextRunAt ? iso(probes.nextRunAt) : null,
        overdue: probes.overdue,
        lapsedLeases: probes.lapsedLeases,
        lastHour: hour,
        failureRate: done === 0 ? null : hour.failed / done,
        paused: (() => {
          const p = paused.get(queue);
          return p ? { pausedBy: p.pausedBy, pausedAt: iso(p.pausedAt), reason: p.reason } : null;
        })(),
      };
    }),
  );
  return { now: iso((await dbNow(db)) ?? new Date()), queues };
}

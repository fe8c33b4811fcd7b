import "server-only";
import { COUNT_CAP, stateCounts } from "./overview";
import { cappedCount, type Db, iso } from "./read-queries";
import type { JobStateName, QueueHealthDto } from "./wire-types";

/** A due job not started this long after its run time is overdue: no worker is keeping up. */
export const OVERDUE_AFTER_MS = 60_000;

/**
 * Health of every queue (or one): depth by state (the shared 15 s state counts), the age of the
 * oldest due job (queue latency) and how many are overdue, the next scheduled run, running jobs
 * whose lease lapsed, and the last hour's throughput and failure rate. Per queue these are probes
 * of the partial pending index (queue, run_at), the active-lease index and the finished_at index,
 * so their cost does not grow with the table.
 */
export async function queueHealth(db: Db, only?: string): Promise<{ now: string; queues: QueueHealthDto[] }> {
  const counts = await stateCounts(db);
  const names = [...new Set(counts.rows.map((r) => r.queue))].filter((q) => !only || q === only).sort();
  if (only && names.length === 0) names.push(only);
  const finished = await db.query<{ queue: string; succeeded: string; failed: string }>(
    `select queue, count(*) filter (where state = 'succeeded')::text as succeeded,
            count(*) filter (where state = 'failed')::text as failed
       from workhorse.job where finished_at >= now() - interval '1 hour' ${only ? "and queue = $1" : ""}
      group by queue`,
    only ? [only] : [],
  );
  const lastHour = new Map(
    finished.rows.map((r) => [r.queue, { succeeded: Number(r.succeeded), failed: Number(r.failed) }]),
  );
  const queues = await Promise.all(
    names.map(async (queue): Promise<QueueHealthDto> => {
      const [due, next, overdue, pending, lapsed] = await Promise.all([
        db.query<{ run_at: Date }>(
          `select run_at from workhorse.job
            where queue = $1 and state in ('scheduled', 'ready') and run_at <= now() order by run_at limit 1`,
          [queue],
        ),
        db.query<{ run_at: Date }>(
          `select run_at from workhorse.job
            where queue = $1 and state in ('scheduled', 'ready') and run_at > now() order by run_at limit 1`,
          [queue],
        ),
        cappedCount(
          db,
          `workhorse.job where queue = $1 and state in ('scheduled', 'ready')
             and run_at < now() - $2::int * interval '1 millisecond'`,
          [queue, OVERDUE_AFTER_MS],
          COUNT_CAP,
        ),
        cappedCount(db, "workhorse.job where queue = $1 and state in ('scheduled', 'ready')", [queue], COUNT_CAP),
        db.query<{ n: string }>(
          "select count(*)::text as n from workhorse.job where state = 'active' and lease_expires_at < now() and queue = $1",
          [queue],
        ),
      ]);
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
        pending,
        oldestDueAt: due.rows[0] ? iso(due.rows[0].run_at) : null,
        nextRunAt: next.rows[0] ? iso(next.rows[0].run_at) : null,
        overdue,
        lapsedLeases: Number(lapsed.rows[0]?.n ?? 0),
        lastHour: hour,
        failureRate: done === 0 ? null : hour.failed / done,
      };
    }),
  );
  const { rows } = await db.query<{ now: Date }>("select now() as now");
  return { now: iso(rows[0]?.now ?? new Date()), queues };
}

import "server-only";
import { MAINTENANCE_TASKS } from "@/lib/enqueue";
import { COUNT_CAP } from "./overview";
import { cappedCount, type Db, iso } from "./read-queries";
import type { MaintenanceDto } from "./wire-types";

// The panel shows the tasks that keep keys and leases healthy; job retention has its own line.
const TASKS = MAINTENANCE_TASKS.filter((t) => t !== "prune_finished_jobs");

/** Recent maintenance runs per task (index on (task, started_at)) and the expired-binding backlog. */
export async function maintenanceStatus(db: Db): Promise<MaintenanceDto> {
  const [runs, backlog, oldest] = await Promise.all([
    db.query<{
      id: string;
      task: string;
      started_at: Date;
      finished_at: Date;
      removed: string;
      trigger: string;
      now: Date;
    }>(
      `select r.*, now() as now from unnest($1::text[]) t(task)
         cross join lateral (select * from workhorse.maintenance_run m where m.task = t.task
                              order by m.started_at desc limit 10) r
        order by r.started_at desc, r.task`,
      [TASKS],
    ),
    cappedCount(db, "workhorse.key_binding where expires_at <= now()", [], COUNT_CAP),
    db.query<{ expires_at: Date }>(
      "select expires_at from workhorse.key_binding where expires_at <= now() order by expires_at limit 1",
    ),
  ]);
  return {
    now: new Date().toISOString(),
    runs: runs.rows.map((r) => ({
      id: r.id,
      task: r.task,
      startedAt: iso(r.started_at),
      finishedAt: iso(r.finished_at),
      removed: Number(r.removed),
      trigger: r.trigger,
    })),
    expiredAwaitingCleanup: backlog,
    oldestExpiredAt: oldest.rows[0] ? iso(oldest.rows[0].expires_at) : null,
  };
}

import "server-only";
import { MAINTENANCE_TASKS } from "@workhorse/core";
import { expiredBindingCount, maintenanceRunRows, oldestExpiredBinding } from "@/lib/store/console/status";
import type { MaintenanceDto } from "../wire/types";
import { COUNT_CAP } from "./overview";
import { iso, type Sql } from "./read-queries";

// The panel shows the tasks that keep keys and leases healthy; job retention has its own line.
const TASKS = MAINTENANCE_TASKS.filter((t) => t !== "prune_finished_jobs");

/** Recent maintenance runs per task (index on (task, started_at)) and the expired-binding backlog. */
export async function maintenanceStatus(db: Sql): Promise<MaintenanceDto> {
  const [runs, backlog, oldest] = await Promise.all([
    maintenanceRunRows(db, TASKS),
    expiredBindingCount(db, COUNT_CAP),
    oldestExpiredBinding(db),
  ]);
  return {
    now: new Date().toISOString(),
    runs: runs.map((r) => ({
      id: r.id,
      task: r.task,
      startedAt: iso(r.started_at),
      finishedAt: iso(r.finished_at),
      removed: Number(r.removed),
      trigger: r.trigger,
    })),
    expiredAwaitingCleanup: backlog,
    oldestExpiredAt: oldest ? iso(oldest) : null,
  };
}

import "server-only";
import { GONE_AFTER_MISSED_CHECK_INS } from "@/lib/store/console/core";
import { dbNow, workerHeartbeatRows } from "@/lib/store/console/status";
import type { WorkersDto } from "../wire/types";
import { iso, type Sql } from "./read-queries";

/** At most this many workers are listed. */
const WORKERS_LIMIT = 500;

/**
 * Every worker that checked in, from `workhorse.worker_heartbeat` (each running worker upserts its
 * row every heartbeat interval and deletes it when it stops): busy or idle, its queues,
 * concurrency and jobs in hand. One that missed three check-ins in a row is `gone` (crashed,
 * killed, or cut off from the database) until maintenance deletes its row.
 */
export async function listWorkers(db: Sql): Promise<WorkersDto> {
  const rows = await workerHeartbeatRows(db, WORKERS_LIMIT, GONE_AFTER_MISSED_CHECK_INS);
  const clock = rows[0]?.now ?? (await dbNow(db)) ?? new Date();
  return {
    now: iso(clock),
    workers: rows.map(({ workerId, status, startedAt, checkedAt, gone, now: _, ...r }) => ({
      ...r,
      worker: workerId,
      state: gone ? "gone" : status === "stopping" ? "stopping" : r.held > 0 ? "busy" : "idle",
      startedAt: iso(startedAt),
      checkedAt: iso(checkedAt),
    })),
  };
}

import "server-only";
import { dbNow, workerRows } from "@/lib/enqueue/store/console-status";
import { type Db, iso } from "./read-queries";
import type { WorkersDto } from "./wire-types";

/** At most this many workers and this many job ids per worker are listed. */
const WORKERS_LIMIT = 200;
const JOBS_PER_WORKER = 5;

/**
 * Who is running what, from the leases of active jobs (there is no worker registry): a lease owner
 * is `<workerId>~<claim>`, so active jobs grouped by the worker id. A worker renews its leases while
 * it runs (heartbeat), so the latest lease expiry says it was alive a lease length before; a worker
 * whose every lease has lapsed has stopped. Reads only active jobs (the partial lease index).
 */
export async function listWorkers(db: Db): Promise<WorkersDto> {
  const rows = await workerRows(db, WORKERS_LIMIT, JOBS_PER_WORKER);
  const clock = rows[0]?.now ?? (await dbNow(db)) ?? new Date();
  return {
    now: iso(clock),
    workers: rows.map((r) => ({
      worker: r.worker,
      jobs: Number(r.jobs),
      queues: r.queues,
      jobIds: r.job_ids,
      leaseUntil: iso(r.lease_until),
      oldestStart: r.oldest_start ? iso(r.oldest_start) : null,
      lapsed: Number(r.lapsed),
    })),
  };
}

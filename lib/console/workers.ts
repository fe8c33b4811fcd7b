import "server-only";
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
  const { rows } = await db.query<{
    worker: string;
    jobs: string;
    queues: string[];
    job_ids: string[];
    lease_until: Date;
    oldest_start: Date | null;
    lapsed: string;
    now: Date;
  }>(
    `select split_part(lease_owner, '~', 1) as worker, count(*)::text as jobs,
            array_agg(distinct queue::text order by queue::text) as queues,
            (array_agg(id order by started_at))[1:${JOBS_PER_WORKER}] as job_ids,
            max(lease_expires_at) as lease_until, min(started_at) as oldest_start,
            count(*) filter (where lease_expires_at < now())::text as lapsed, now() as now
       from workhorse.job
      where state = 'active' and lease_owner is not null
      group by 1
      order by max(lease_expires_at) desc
      limit ${WORKERS_LIMIT}`,
  );
  const clock = rows[0]?.now ?? (await db.query<{ now: Date }>("select now() as now")).rows[0]?.now ?? new Date();
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

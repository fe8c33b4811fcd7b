/**
 * The console's status reads (lib/console: overview.ts, queues.ts, workers.ts,
 * maintenance-status.ts): the statements and their rows; the console maps them to wire types.
 */
import type { JobState } from "../../enqueue/types";
import { queryPrepared, type Sql } from "../layout";
import type { CheckIn } from "../worker/claims";
import { cappedCount } from "./lists";

/** The database's clock. */
export async function dbNow(db: Sql): Promise<Date | undefined> {
  return (await db.query<{ now: Date }>("select now() as now")).rows[0]?.now;
}

/** Jobs by queue and state (a grouped scan of workhorse.job: there is no counter table). */
export async function stateCountRows(db: Sql) {
  const { rows } = await db.query<{ queue: string; state: JobState; n: string; retrying: string; as_of: Date }>(
    `select queue, state, count(*)::text as n,
              count(*) filter (where state = 'scheduled' and last_error is not null)::text as retrying, now() as as_of
         from workhorse.job group by queue, state
        order by queue, state`,
  );
  return rows;
}

/** Bindings live now, expiring within the hour, expired awaiting cleanup: each counted up to `cap`. */
export async function bindingCounts(db: Sql, cap: number) {
  const [live, expiringWithinHour, expired] = await Promise.all([
    cappedCount(db, "workhorse.key_binding where expires_at > now()", [], cap),
    cappedCount(
      db,
      "workhorse.key_binding where expires_at > now() and expires_at <= now() + interval '1 hour'",
      [],
      cap,
    ),
    expiredBindingCount(db, cap),
  ]);
  return { live, expiringWithinHour, expired };
}

/** Expired bindings awaiting cleanup, counted up to `cap`. */
export function expiredBindingCount(db: Sql, cap: number) {
  return cappedCount(db, "workhorse.key_binding where expires_at <= now()", [], cap);
}

/** The oldest expired binding's expiry, if any. */
export async function oldestExpiredBinding(db: Sql): Promise<Date | null> {
  const { rows } = await db.query<{ expires_at: Date }>(
    "select expires_at from workhorse.key_binding where expires_at <= now() order by expires_at limit 1",
  );
  return rows[0]?.expires_at ?? null;
}

/** Jobs finished in the last hour per queue (all, or `only`). */
export async function lastHourFinished(db: Sql, only?: string) {
  const { rows } = await db.query<{ queue: string; succeeded: string; failed: string }>(
    `select queue, count(*) filter (where state = 'succeeded')::text as succeeded,
            count(*) filter (where state = 'failed')::text as failed
       from workhorse.job where finished_at >= now() - interval '1 hour' ${only ? "and queue = $1" : ""}
      group by queue`,
    only ? [only] : [],
  );
  return rows;
}

/**
 * One queue's probes: the oldest due job's run time, the next scheduled one, the overdue (due for
 * more than `overdueAfterMs`) and pending counts (up to `cap`), active jobs whose lease lapsed. Each
 * a probe of the partial pending index (queue, run_at) or the active-lease index.
 */
export async function queueProbes(db: Sql, queue: string, overdueAfterMs: number, cap: number) {
  const [due, next, overdue, pending, lapsed, dueNow] = await Promise.all([
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
      [queue, overdueAfterMs],
      cap,
    ),
    cappedCount(db, "workhorse.job where queue = $1 and state in ('scheduled', 'ready')", [queue], cap),
    db.query<{ n: string }>(
      "select count(*)::text as n from workhorse.job where state = 'active' and lease_expires_at < now() and queue = $1",
      [queue],
    ),
    // Due now whatever the state column says: a due `scheduled` job is claimed like a ready one.
    cappedCount(
      db,
      "workhorse.job where queue = $1 and state in ('scheduled', 'ready') and run_at <= now()",
      [queue],
      cap,
    ),
  ]);
  return {
    oldestDueAt: due.rows[0]?.run_at ?? null,
    nextRunAt: next.rows[0]?.run_at ?? null,
    overdue,
    pending,
    due: dueNow,
    lapsedLeases: Number(lapsed.rows[0]?.n ?? 0),
  };
}

/**
 * Whether a queue is known by an index: paused, or holding a pending, failed, canceled or purged
 * job. Each statement is one probe of an index that finds those jobs by queue (the first hit
 * answers): the pending index (queue, run_at, id), the rare states' (state, queue, id) index
 * (migration 020: one probe per state), and the pause table's primary key. No statement reads more
 * than one matching row, so the cost does not grow with the jobs. Running and succeeded jobs have no
 * index by queue (one would cost every claim and completion an entry): the last two statements
 * look among the 1,000 running jobs with the latest leases (job_lease_idx) and the newest 1,000 finished ones
 * (job_finished_idx), which finds a new queue whose first jobs run or just ran; older queues are
 * found in the console's jobs-by-queue-and-state counts (lib/console/reads/open-queue.ts). Separate
 * statements, as plain as the distributed layout (Citus) runs them.
 */
export async function queueProbed(db: Sql, queue: string): Promise<boolean> {
  const probes = [
    "select 1 from workhorse.job where queue = $1 and state in ('scheduled', 'ready') limit 1",
    // One state each, so (state, queue) is the index condition: with the partial index's own state
    // list the planner drops the state from it (a skip scan on PostgreSQL 18, the whole index before).
    ...["failed", "canceled", "purged"].map(
      (state) => `select 1 from workhorse.job where state = '${state}' and queue = $1 limit 1`,
    ),
    "select 1 from workhorse.queue_pause where queue = $1",
    // Running and just-finished jobs, each read bounded: the 1,000 latest leases of running jobs
    // and the newest 1,000 finished jobs (a new queue whose first jobs run or just ran).
    `select 1 from (select j.queue from workhorse.job j where j.state = 'active'
                     order by j.lease_expires_at desc limit 1000) a where a.queue = $1 limit 1`,
    `select 1 from (select j.queue from workhorse.job j where j.finished_at is not null
                     order by j.finished_at desc limit 1000) f where f.queue = $1 limit 1`,
  ];
  for (const text of probes) if (((await db.query(text, [queue])).rowCount ?? 0) > 0) return true;
  return false;
}

/**
 * Every worker's heartbeat row (at most `limit`): running ones first, then those gone (no check-in
 * for `goneAfter` of their intervals), each group by worker id. A small table, read whole.
 */
export async function workerHeartbeatRows(db: Sql, limit: number, goneAfter: number) {
  const { rows } = await queryPrepared<CheckIn & { checkedAt: Date; gone: boolean; now: Date }>(
    db,
    "workhorse_console_workers",
    // Columns named: a named statement's result type must not change under it (a later column).
    `select w.worker_id as "workerId", w.host, w.pid, w.queues, w.types, w.concurrency, w.running, w.held,
            w.job_ids as "jobIds", w.interval_ms as "intervalMs", w.status, w.started_at as "startedAt",
            w.checked_at as "checkedAt",
            w.checked_at < now() - $2::integer * w.interval_ms * interval '1 millisecond' as gone,
            now() as now
       from workhorse.worker_heartbeat w
      order by gone, w.worker_id
      limit $1::integer`,
    [limit, goneAfter],
  );
  return rows;
}

/** The last 10 maintenance runs of each of `tasks` (index on (task, started_at)), newest first. */
export async function maintenanceRunRows(db: Sql, tasks: readonly string[]) {
  const { rows } = await db.query<{
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
    [tasks],
  );
  return rows;
}

/**
 * Every statement the worker sends, one typed function each (the PL/pgSQL they call is in
 * sql/functions: claim_jobs, heartbeat_jobs, complete_jobs, fail_job, ...). Outcomes are fenced by the
 * attempt: (job id, attempt number, lease token); a stale attempt's write changes nothing and
 * comes back empty. Statements the worker repeats are named, so PostgreSQL keeps their plans.
 */
import type { ClaimedJob } from "../../enqueue/types";
import type { Sql } from "../layout";
import { type ClaimRow, claimedJobFromRow } from "../rows";
import { workerCall } from "./calls";

/** What fences one attempt's writes. */
export type Attempt = Pick<ClaimedJob, "id" | "attempt" | "leaseOwner">;

/**
 * `workhorse.claim_jobs`: up to `limit` due jobs of `queues` (only `types`, or any when null), oldest
 * `run_at` first, leased to `leaseToken` for `leaseMs`; `reap` gives lapsed leases back first.
 */
export async function claimJobs(
  sql: Sql,
  c: { queues: string[]; types: string[] | null; leaseToken: string; limit: number; leaseMs: number; reap: boolean },
): Promise<{ jobs: ClaimedJob[]; overdue: number }> {
  // The claimed jobs, then one row with how many jobs the claim failed for their deadline (the
  // function sets workhorse.claim_overdue; the second branch reads it after the first has run).
  const { rows } = await sql.query<ClaimRow & { overdue: number | null }>({
    name: "workhorse_claim_jobs_counted",
    text: `with c as materialized (
             select id, queue, type, payload, attempt, max_attempts, run_at, deadline, execution_timeout_ms,
                    concurrency_key, tags, created_at, lease_expires_at, trace_context
               from ${workerCall("claim_jobs")})
           select c.*, $3::text as lease_owner, null::integer as overdue from c
           union all
           select null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
                  coalesce(nullif(current_setting('workhorse.claim_overdue', true), '')::integer, 0)
             from (select count(*) from c) n`,
    values: [c.queues, c.types, c.leaseToken, c.limit, c.leaseMs, c.reap],
  });
  const last = rows.at(-1);
  return { jobs: rows.filter((r) => r.overdue === null).map(claimedJobFromRow), overdue: last?.overdue ?? 0 };
}

/**
 * `workhorse.heartbeat_jobs`: extends the leases of these attempts by `leaseMs`. Attempts missing
 * from the answer lost their lease; `cancelRequested` says an operator asked to stop the job.
 */
export async function heartbeat(
  sql: Sql,
  attempts: Attempt[],
  leaseMs: number,
): Promise<Array<{ id: string; leaseOwner: string; cancelRequested: boolean }>> {
  const { rows } = await sql.query<{ id: string; lease_owner: string; cancel_requested: boolean }>({
    name: "workhorse_heartbeat_jobs",
    text: `select id, lease_owner, cancel_requested from ${workerCall("heartbeat_jobs")}`,
    values: [attempts.map((a) => a.id), attempts.map((a) => a.attempt), attempts.map((a) => a.leaseOwner), leaseMs],
  });
  return rows.map((r) => ({ id: r.id, leaseOwner: r.lease_owner, cancelRequested: r.cancel_requested }));
}

/** `workhorse.complete_jobs`: records these attempts `succeeded` with their results (JSON text); the ids recorded. */
export async function completeJobs(sql: Sql, batch: Array<{ attempt: Attempt; result: string }>): Promise<Set<string>> {
  const { rows } = await sql.query<{ id: string }>({
    name: "workhorse_complete_jobs",
    text: `select id from ${workerCall("complete_jobs")}`,
    values: [
      batch.map((b) => b.attempt.id),
      batch.map((b) => b.attempt.attempt),
      batch.map((b) => b.attempt.leaseOwner),
      batch.map((b) => b.result),
    ],
  });
  return new Set(rows.map((row) => row.id));
}

/** `workhorse.cancel_attempt`: records an operator-canceled attempt `canceled`; false when the attempt was stale. */
export async function cancelAttempt(sql: Sql, a: Attempt): Promise<boolean> {
  const { rows } = await sql.query({
    name: "workhorse_cancel_attempt",
    text: `select id from ${workerCall("cancel_attempt")}`,
    values: [a.id, a.attempt, a.leaseOwner],
  });
  return rows.length > 0;
}

/**
 * `workhorse.fail_job`: records a failed attempt (`errorJson`, a bounded error summary) and either
 * schedules a retry by the job's policy (else `defaultPolicyJson`) or fails the job. Null when stale.
 */
export async function failJob(
  sql: Sql,
  a: Attempt,
  f: { errorJson: string; cause: string; defaultPolicyJson: string },
): Promise<{ state: string; runAt: Date | null; delayMs: number | null } | null> {
  const { rows } = await sql.query<{ state: string; run_at: Date | null; delay_ms: string | null }>({
    name: "workhorse_fail_job",
    text: `select state, run_at, delay_ms from ${workerCall("fail_job")}`,
    values: [a.id, a.attempt, a.leaseOwner, f.errorJson, f.cause, f.defaultPolicyJson],
  });
  const r = rows[0];
  return r ? { state: r.state, runAt: r.run_at, delayMs: r.delay_ms === null ? null : Number(r.delay_ms) } : null;
}

/** `workhorse.release_jobs`: gives an attempt back (`ready` again, attempt not counted); false when stale. */
export async function releaseJob(sql: Sql, a: Attempt, reason: "shutdown"): Promise<boolean> {
  const { rows } = await sql.query({
    text: `select id from ${workerCall("release_jobs")}`,
    values: [[a.id], [a.attempt], [a.leaseOwner], reason],
  });
  return rows.length > 0;
}

/** A checkpoint an earlier attempt of this job stored under `name`, if any. */
export async function readCheckpoint(sql: Sql, jobId: string, name: string): Promise<{ value: unknown } | null> {
  const { rows } = await sql.query<{ value: unknown }>({
    name: "workhorse_read_checkpoint",
    text: "select value from workhorse.job_checkpoint where job_id = $1::uuid and name = $2::text",
    values: [jobId, name],
  });
  return rows[0] ?? null;
}

/**
 * `workhorse.save_checkpoint`: stores `valueJson` under `name` for this attempt (and extends its
 * lease): `saved`, `exists` (another run stored it first: its value comes back), or `stale`.
 */
export async function saveCheckpoint(
  sql: Sql,
  a: Attempt,
  c: { name: string; valueJson: string; leaseMs: number },
): Promise<{ status: "saved" | "exists" | "stale"; value: unknown } | null> {
  const { rows } = await sql.query<{ status: "saved" | "exists" | "stale"; value: unknown }>({
    name: "workhorse_save_checkpoint",
    text: `select status, value from ${workerCall("save_checkpoint")}`,
    values: [a.id, a.attempt, a.leaseOwner, c.name, c.valueJson, c.leaseMs],
  });
  return rows[0] ?? null;
}

/**
 * What a worker reports about itself at each check-in (`workhorse.worker_heartbeat`): the row the
 * console's Workers page reads back (lib/store/console/status.ts) and lists (lib/console/wire/types.ts).
 */
export interface CheckIn {
  /** The worker id (`WorkerOptions.workerId`; lease tokens are `<workerId>~<claim>`). */
  workerId: string;
  host: string;
  pid: number;
  queues: string[];
  /** The job types it claims; null: every type. */
  types: string[] | null;
  concurrency: number;
  /** Attempts whose handler is running (at most `concurrency`). */
  running: number;
  /** Attempts it holds, running or writing their outcome. */
  held: number;
  /** Up to 20 of the jobs it holds. */
  jobIds: string[];
  intervalMs: number;
  status: "running" | "stopping";
  startedAt: Date;
}

/** Upserts this worker's heartbeat row, its last check-in now (PostgreSQL's clock). */
export async function checkIn(sql: Sql, c: CheckIn): Promise<void> {
  await sql.query({
    name: "workhorse_worker_check_in",
    text: `insert into workhorse.worker_heartbeat as w
                  (worker_id, host, pid, queues, types, concurrency, running, held, job_ids, interval_ms,
                   status, started_at, checked_at)
           values ($1::text, $2::text, $3::integer, $4::text[], $5::text[], $6::integer, $7::integer,
                   $8::integer, $9::uuid[], $10::integer, $11::text, $12::timestamptz, now())
           on conflict (worker_id) do update
              set host = excluded.host, pid = excluded.pid, queues = excluded.queues, types = excluded.types,
                  concurrency = excluded.concurrency, running = excluded.running, held = excluded.held,
                  job_ids = excluded.job_ids, interval_ms = excluded.interval_ms, status = excluded.status,
                  started_at = excluded.started_at, checked_at = now()`,
    values: [
      c.workerId,
      c.host,
      c.pid,
      c.queues,
      c.types,
      c.concurrency,
      c.running,
      c.held,
      c.jobIds,
      c.intervalMs,
      c.status,
      c.startedAt,
    ],
  });
}

/** Deletes this worker's heartbeat row (it has stopped). */
export async function checkOut(sql: Sql, workerId: string): Promise<void> {
  await sql.query({
    name: "workhorse_worker_check_out",
    text: "delete from workhorse.worker_heartbeat where worker_id = $1::text",
    values: [workerId],
  });
}

/**
 * One attempt a worker holds: what its handler is given (`HandlerContext`: signal, heartbeat,
 * checkpoints) and the heartbeats that keep the leases of all running attempts.
 */
import type pg from "pg";
import { JobCanceledError, LeaseLostError } from "../enqueue/errors";
import * as sql from "../store/worker/claims";
import { toJsonText } from "./error-summary";
import type { ClaimedJob, HandlerContext, WorkerEvent } from "./types";

/** Why an attempt's signal fired. */
export type StopCause = "execution_timed_out" | "deadline_exceeded" | "lease_lost" | "shutdown" | "canceled";

/** One attempt this worker holds. */
export interface Running {
  key: string;
  job: ClaimedJob;
  controller: AbortController;
  cause: StopCause | null;
  /** The handler returned or threw (or was abandoned): lease loss no longer matters to it. */
  settled: boolean;
  startedAt: number;
}

/** What an attempt needs from its worker. */
export interface AttemptDeps {
  pool: pg.Pool;
  workerId: string;
  leaseMs: number;
  maxResultBytes: number;
  onEvent: (e: WorkerEvent) => void;
  loseLease: (r: Running) => void;
  interrupt: (r: Running, cause: StopCause, reason: Error) => void;
  retrying: <T>(r: Running, op: () => Promise<T>) => Promise<T>;
}

export function handlerContext(r: Running, w: AttemptDeps): HandlerContext {
  const { job } = r;
  return {
    jobId: job.id,
    attempt: job.attempt,
    signal: r.controller.signal,
    job,
    workerId: w.workerId,
    heartbeat: async () => {
      if (r.cause === "lease_lost") throw new LeaseLostError(job.id, job.attempt);
      const rows = await sql.heartbeat(w.pool, [job], w.leaseMs);
      if (rows.length === 0) {
        w.loseLease(r);
        throw new LeaseLostError(job.id, job.attempt);
      }
      if (rows[0]?.cancelRequested) w.interrupt(r, "canceled", new JobCanceledError(job.id));
    },
    checkpoint: async <T>(name: string, fn: () => T | Promise<T>): Promise<T> => {
      if (typeof name !== "string" || name.length < 1 || name.length > 128 || /\p{Cc}/u.test(name)) {
        throw new TypeError("checkpoint name must be 1..128 characters without control characters");
      }
      if (typeof fn !== "function") throw new TypeError("checkpoint(name, fn): fn must be a function");
      if (r.cause === "lease_lost") throw new LeaseLostError(job.id, job.attempt);
      const stored = await w.retrying(r, () => sql.readCheckpoint(w.pool, job.id, name));
      if (stored) return stored.value as T;
      const valueJson = toJsonText(await fn(), `checkpoint ${JSON.stringify(name)}`, w.maxResultBytes);
      const row = await w.retrying(r, () => sql.saveCheckpoint(w.pool, job, { name, valueJson, leaseMs: w.leaseMs }));
      if (!row || row.status === "stale") {
        w.loseLease(r);
        throw new LeaseLostError(job.id, job.attempt);
      }
      if (row.status === "saved") w.onEvent({ kind: "checkpoint_saved", job, name });
      return row.value as T;
    },
  };
}

/**
 * One statement extends the lease of every running attempt (`attempts` minus those that lost it);
 * attempts missing from the answer lost theirs, and an operator's cancel interrupts its attempt.
 */
export async function heartbeatAttempts(attempts: Running[], w: AttemptDeps): Promise<void> {
  const list = attempts.filter((r) => r.cause !== "lease_lost");
  if (list.length === 0) return;
  const rows = await sql.heartbeat(
    w.pool,
    list.map((r) => r.job),
    w.leaseMs,
  );
  const held = new Set(rows.map((row) => `${row.id}:${row.leaseOwner}`));
  const canceled = new Set(rows.filter((row) => row.cancelRequested).map((row) => `${row.id}:${row.leaseOwner}`));
  for (const r of list) {
    // A settled attempt may be missing because its own outcome just landed; its write is fenced anyway.
    if (!held.has(r.key) && !r.settled) w.loseLease(r);
    else if (canceled.has(r.key) && !r.settled) w.interrupt(r, "canceled", new JobCanceledError(r.job.id));
  }
}

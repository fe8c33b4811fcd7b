/**
 * Writing what became of an attempt: completions batched into one statement at a time, failures
 * (a retry or the end), operator cancels and releases. Every write is fenced by the attempt's lease
 * (job id, attempt, lease token), so repeating one after a lost connection is safe.
 */
import type pg from "pg";
import { isTransientDbError } from "../enqueue/errors";
import * as sql from "../store/worker/claims";
import type { ErrorSummary } from "./error-summary";
import { summarizeError } from "./error-summary";
import { untilDone } from "./timing";
import type { ClaimedJob, FailureCause, WorkerEvent, WorkerStats } from "./types";

/** What became of one completion write: recorded, fenced out (stale), or refused for this job alone. */
type CompleteOutcome = "recorded" | "stale" | { refused: unknown };

const COMPLETE_BATCH = 500;

/** A refused write's reason in words (the driver error's message, bounded by the error summary). */
export function describeRefusal(err: unknown): string {
  const summary = summarizeError(err);
  return summary.code ? `${summary.message} (SQLSTATE ${summary.code})` : summary.message;
}

/** What the writer needs from its worker. */
interface OutcomeContext {
  pool: pg.Pool;
  defaultPolicyJson: string;
  counters: Omit<WorkerStats, "running">;
  onEvent: (e: WorkerEvent) => void;
  report: (err: unknown) => void;
  /** True once stop() ran out of patience: writes still retrying give up, and the leases lapse instead. */
  givenUp: () => boolean;
}

export class OutcomeWriter {
  private queue: Array<{ job: ClaimedJob; result: string; resolve: (outcome: CompleteOutcome) => void }> = [];
  private completing = false;

  constructor(private readonly w: OutcomeContext) {}

  /**
   * Runs an outcome write until it lands. Transient failures (connection lost, server restarting)
   * are retried with backoff: the write is fenced, so repeating it is safe. Gives up when the error
   * is not transient or stop() ran out of patience; the lease then lapses and the job runs again.
   */
  persist<T>(op: () => Promise<T>): Promise<T> {
    return untilDone(op, { maxDelayMs: 5000, stop: this.w.givenUp, report: this.w.report });
  }

  /** Records a result (JSON text); resolves with what became of the write. */
  complete(job: ClaimedJob, result: string): Promise<CompleteOutcome> {
    return new Promise((resolve) => {
      this.queue.push({ job, result, resolve });
      if (!this.completing) void this.drainCompletions();
    });
  }

  /**
   * One completion statement in flight at a time, carrying everything that finished meanwhile. If
   * PostgreSQL refuses the batch (not a lost connection, which `persist` retries), each job is
   * written alone, so one bad row costs no other job anything.
   */
  private async drainCompletions(): Promise<void> {
    this.completing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, COMPLETE_BATCH);
        try {
          const recorded = await this.writeCompletions(batch);
          for (const b of batch) b.resolve(recorded.has(b.job.id) ? "recorded" : "stale");
        } catch (err) {
          if (batch.length === 1 || isTransientDbError(err)) {
            this.w.report(err);
            for (const b of batch)
              b.resolve(batch.length === 1 && !isTransientDbError(err) ? { refused: err } : "stale");
            continue;
          }
          for (const b of batch) {
            try {
              const recorded = await this.writeCompletions([b]);
              b.resolve(recorded.has(b.job.id) ? "recorded" : "stale");
            } catch (one) {
              this.w.report(one);
              b.resolve(isTransientDbError(one) ? "stale" : { refused: one });
            }
          }
        }
      }
    } finally {
      this.completing = false;
    }
  }

  /** `workhorse.complete_jobs` for these attempts; the ids whose outcome was recorded (fenced by lease). */
  private async writeCompletions(batch: Array<{ job: ClaimedJob; result: string }>): Promise<Set<string>> {
    return this.persist(() =>
      sql.completeJobs(
        this.w.pool,
        batch.map((b) => ({ attempt: b.job, result: b.result })),
      ),
    );
  }

  /** Records an operator-canceled attempt as `canceled` (fenced: a stale attempt changes nothing). */
  async canceled(job: ClaimedJob): Promise<void> {
    try {
      if (await this.persist(() => sql.cancelAttempt(this.w.pool, job))) {
        this.w.counters.canceled++;
        this.w.onEvent({ kind: "canceled", job });
      } else {
        this.w.counters.stale++;
        this.w.onEvent({ kind: "stale", job });
      }
    } catch (err) {
      this.w.report(err);
    }
  }

  async fail(job: ClaimedJob, error: ErrorSummary, cause: FailureCause): Promise<void> {
    let row: Awaited<ReturnType<typeof sql.failJob>>;
    try {
      row = await this.persist(() =>
        sql.failJob(this.w.pool, job, {
          errorJson: JSON.stringify(error),
          cause,
          defaultPolicyJson: this.w.defaultPolicyJson,
        }),
      );
    } catch (err) {
      this.w.report(err);
      return;
    }
    const { counters, onEvent } = this.w;
    if (!row) {
      counters.stale++;
      onEvent({ kind: "stale", job });
    } else if (row.state === "failed") {
      counters.failed++;
      onEvent({ kind: "failed", job, cause, error });
    } else if (row.state === "canceled") {
      // An operator's cancel arrived before this worker's next heartbeat: the would-be retry became
      // `canceled` (the job's cancel trigger), and that is what happened.
      counters.canceled++;
      onEvent({ kind: "canceled", job });
    } else {
      counters.retried++;
      onEvent({
        kind: "retry_scheduled",
        job,
        cause,
        error,
        runAt: row.runAt as Date,
        delayMs: Number(row.delayMs),
      });
    }
  }

  /** Gives a running attempt back to `ready` on shutdown without counting it. */
  async release(job: ClaimedJob): Promise<void> {
    try {
      if (await this.persist(() => sql.releaseJob(this.w.pool, job, "shutdown"))) {
        this.w.counters.released++;
        this.w.onEvent({ kind: "released", job });
      }
    } catch (err) {
      this.w.report(err);
    }
  }

  /** Gives back a job claimed while stop() began, before it started. */
  async releaseUnstarted(job: ClaimedJob): Promise<void> {
    await this.persist(() => sql.releaseJob(this.w.pool, job, "shutdown")).catch((err) => this.w.report(err));
  }
}

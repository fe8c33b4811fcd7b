/** Timing in the worker runtime (retry delays, timers that outlast Node's 24.8-day cap) and its counters' starting values. */

import { isTransientDbError } from "../enqueue/errors";
import type { NormalizedRetryPolicy } from "../enqueue/types";
import type { WorkerStats } from "./types";

/** The delay after attempt `attempt` (1-based) failed; mirrors `workhorse.retry_delay_ms`. */
export function retryDelayMs(policy: NormalizedRetryPolicy, attempt: number): number {
  const exp = Math.min(Math.max(attempt - 1, 0), 60);
  return Math.min(policy.maxDelayMs, Math.round(policy.initialDelayMs * policy.multiplier ** exp));
}

const MAX_TIMER = 2_147_483_647;

/** setTimeout for any duration (Node caps one timer at ~24.8 days). Returns a cancel function. */
export function longTimeout(fn: () => void, ms: number): () => void {
  const at = Date.now() + ms;
  let timer: NodeJS.Timeout | null = null;
  const arm = () => {
    const left = at - Date.now();
    if (left <= 0) {
      timer = null;
      fn();
      return;
    }
    timer = setTimeout(arm, Math.min(left, MAX_TIMER));
    timer.unref();
  };
  arm();
  return () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Runs `op` until it succeeds. Transient database failures (connection lost, server restarting) are
 * reported and retried with backoff from 100 ms doubling to `maxDelayMs`; any other error, or one
 * arriving once `stop()` says so, is thrown.
 */
export async function untilDone<T>(
  op: () => Promise<T>,
  o: { maxDelayMs: number; stop: () => boolean; report: (err: unknown) => void },
): Promise<T> {
  let delay = 100;
  for (;;) {
    try {
      return await op();
    } catch (err) {
      if (!isTransientDbError(err) || o.stop()) throw err;
      o.report(err);
      await sleep(delay);
      delay = Math.min(delay * 2, o.maxDelayMs);
    }
  }
}

/** A worker's counters before its first claim (`Worker.stats()` without `running`). */
export function zeroCounters(): Omit<WorkerStats, "running"> {
  return { claimed: 0, succeeded: 0, retried: 0, failed: 0, stale: 0, released: 0, canceled: 0 };
}

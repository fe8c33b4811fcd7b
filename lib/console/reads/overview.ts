import "server-only";
import { bindingCounts, dbNow, stateCountRows } from "@/lib/store/console/status";
import type { JobStateName, OverviewDto } from "../wire/types";
import { iso, type Sql } from "./read-queries";

/** Counts beyond this are shown as "N+" so a poll never walks more than this many index entries. */
export const COUNT_CAP = 100_000;
/** State x queue counts are a full aggregate: computed at most once per this many ms per process. */
const COUNTS_TTL_MS = 15_000;

interface StateCounts {
  asOf: string;
  /** `retrying`: scheduled jobs with an error (a failed attempt, waiting for the next); only on scheduled rows. */
  rows: { queue: string; state: JobStateName; n: number; retrying: number }[];
}

const countsCache = new WeakMap<Sql, { at: number; value: Promise<StateCounts> }>();

/**
 * Jobs by queue and state. This one is a grouped scan of the job table (there is no counter table),
 * so it is shared by every viewer and poll for COUNTS_TTL_MS, and bounded by a statement timeout.
 */
export function stateCounts(db: Sql, now = Date.now()): Promise<StateCounts> {
  const hit = countsCache.get(db);
  if (hit && now - hit.at < COUNTS_TTL_MS) return hit.value;
  const value = (async () => {
    const rows = await stateCountRows(db);
    return {
      asOf: rows[0] ? iso(rows[0].as_of) : new Date(now).toISOString(),
      rows: rows.map((r) => ({ queue: r.queue, state: r.state, n: Number(r.n), retrying: Number(r.retrying) })),
    };
  })();
  countsCache.set(db, { at: now, value });
  value.catch(() => countsCache.delete(db));
  return value;
}

export function invalidateCounts(db: Sql): void {
  countsCache.delete(db);
}

/** The overview's figures besides the chart (lib/console/reads/series.ts): keys now, jobs by queue and state. */
export async function overview(db: Sql): Promise<OverviewDto> {
  const [counts, bindings, clock] = await Promise.all([stateCounts(db), bindingCounts(db, COUNT_CAP), dbNow(db)]);
  const byQueueMap = new Map<string, { queue: string; counts: Partial<Record<JobStateName, number>>; total: number }>();
  const byState: Partial<Record<JobStateName, number>> = {};
  for (const r of counts.rows) {
    const q = byQueueMap.get(r.queue) ?? { queue: r.queue, counts: {}, total: 0 };
    q.counts[r.state] = r.n;
    q.total += r.n;
    byQueueMap.set(r.queue, q);
    byState[r.state] = (byState[r.state] ?? 0) + r.n;
  }
  return {
    now: iso(clock ?? new Date()),
    countsAsOf: counts.asOf,
    byQueue: [...byQueueMap.values()],
    byState,
    liveBindings: bindings.live,
    expiringWithinHour: bindings.expiringWithinHour,
    expiredAwaitingCleanup: bindings.expired,
  };
}

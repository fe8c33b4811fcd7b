/**
 * Enqueue decisions of every producer, counted from the database (docs/observability.md,
 * "Decisions from the database"): what `StateGauges` exports as `workhorse.queue.decisions`
 * beside the state gauges. Each read of the state counts the decisions made since the previous
 * read (store/core/decision-counts.ts: a span bounded by its traffic) and adds them to totals kept in
 * this process, so the totals count from this process's start (at most an hour before its first
 * read) on.
 */
import { type DecisionSpan, selectDecisionCounts } from "../store/core/decision-counts";
import type { Sql } from "../store/layout";

/** The counter's name, unit and description (Prometheus: `workhorse_queue_decisions_total`). */
export const DECISION_COUNTS = {
  name: "workhorse.queue.decisions",
  unit: "{request}",
  description:
    "Enqueue decisions of every producer per queue and outcome, as the database recorded them (jobs accepted, observation log, debounce replacements), since this process started.",
} as const;

/**
 * The counter of key releases (Prometheus: `workhorse_key_releases_total`), per queue and reason:
 * the state change that released a key held with a lifetime (docs/enqueue.md, "Key lifetimes").
 */
export const KEY_RELEASE_COUNTS = {
  name: "workhorse.key.releases",
  unit: "{key}",
  description:
    "Keys held with a lifetime (holdUntil) released per queue and reason (the job's new state: started, succeeded, failed, canceled, purged), as the database recorded them, since this process started.",
} as const;

/** The outcomes counted (the observation log's `conflict` is `EnqueueIdempotencyConflictError`). */
export type DecisionOutcome = "accepted" | "replayed" | "conflict" | "replaced" | "coalesced" | "non_replaceable";

/**
 * How long after its time a decision is counted (ms): rows written late (observations are flushed
 * in batches; a job's `created_at` is its transaction's start) are in place by then. A decision whose
 * row arrives later than this (a producer transaction open longer) is not counted.
 */
export const DECISION_SETTLE_MS = 10_000;

/**
 * How far back the first read counts (ms): since this process started, at most this long before
 * the read, so the first read costs at most an hour's traffic.
 */
export const DECISION_FIRST_SPAN_MAX_MS = 3_600_000;

/** Since when this process runs, at most `DECISION_FIRST_SPAN_MAX_MS` (ms). */
function sinceProcessStart(): number {
  return Math.min(Math.floor(process.uptime() * 1000), DECISION_FIRST_SPAN_MAX_MS);
}

/** Totals per queue and outcome, advanced by one span per read. */
export class DecisionTally {
  private from: DecisionSpan["until"] | null = null;
  private readonly totals = new Map<string, number>();

  /**
   * @param settleMs how long after its time a decision is counted (default `DECISION_SETTLE_MS`)
   * @param firstSpanMs how far back the first read counts (default: since this process started,
   *   at most an hour)
   */
  constructor(
    private readonly settleMs: number = DECISION_SETTLE_MS,
    private readonly firstSpanMs: () => number = sinceProcessStart,
  ) {}

  /** Counts the span since the previous call (the first: `firstSpanMs` back from its end). */
  async advance(db: Sql): Promise<void> {
    const span = await selectDecisionCounts(db, this.from, this.settleMs, this.from ? 0 : this.firstSpanMs());
    for (const r of span.rows) {
      const k = JSON.stringify([r.queue, r.outcome, r.reason]);
      this.totals.set(k, (this.totals.get(k) ?? 0) + r.n);
    }
    this.from = span.until;
  }

  /** The enqueue decisions' totals, sorted by queue then outcome. */
  list(): Array<{ queue: string; outcome: DecisionOutcome; total: number }> {
    return this.sorted()
      .filter((t) => t.outcome !== "key_released")
      .map(({ queue, outcome, total }) => ({ queue, outcome: outcome as DecisionOutcome, total }));
  }

  /** The key releases' totals, sorted by queue then reason. */
  releases(): Array<{ queue: string; reason: string; total: number }> {
    return this.sorted()
      .filter((t) => t.outcome === "key_released")
      .map(({ queue, reason, total }) => ({ queue, reason: reason ?? "unknown", total }));
  }

  private sorted(): Array<{ queue: string; outcome: string; reason: string | null; total: number }> {
    const key = (t: { queue: string; outcome: string; reason: string | null }) => [t.queue, t.outcome, t.reason ?? ""];
    return [...this.totals]
      .map(([k, total]) => {
        const [queue, outcome, reason] = JSON.parse(k) as [string, string, string | null];
        return { queue, outcome, reason, total };
      })
      .sort((a, b) => {
        const x = key(a);
        const y = key(b);
        for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return (x[i] as string) < (y[i] as string) ? -1 : 1;
        return 0;
      });
  }
}

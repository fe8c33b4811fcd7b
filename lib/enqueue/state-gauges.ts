/**
 * Gauges that need the database (docs/observability.md): queue depth by state, lag, dead letters,
 * workers (by heartbeat), paused queues, live (estimated) and expired bindings. One statement (store/core/state-gauges.ts), read at
 * most once per `maxAgeMs` however many collections ask (concurrent asks share the read), and
 * registered as observable gauges on any meter provider.
 */
import { type BatchObservableResult, type MeterProvider, metrics, type ObservableGauge } from "@opentelemetry/api";
import { type StateRow, selectStateRows } from "../store/core/state-gauges";
import type { Sql } from "../store/layout";
import { DECISION_COUNTS, type DecisionOutcome, DecisionTally, KEY_RELEASE_COUNTS } from "./decision-counts";
import { EnqueueValidationError } from "./errors";
import { INSTRUMENTATION_NAME } from "./telemetry";

export interface StateGaugeOptions {
  /** How long one read serves (ms, 0..3,600,000). Default 15,000. */
  maxAgeMs?: number;
}

/** One read of the state, as numbers per queue. */
export interface StateSnapshot {
  /** When PostgreSQL was read (this process's clock). */
  readAt: Date;
  queues: Array<{
    queue: string;
    /**
     * Jobs waiting or running: `ready` pending jobs that are due (run_at now or past, whatever their
     * state column says: a due `scheduled` job is claimed like a ready one), `scheduled` pending jobs
     * not yet due, `active` jobs. Exact.
     */
    depth: { scheduled: number; ready: number; active: number };
    /** Seconds since the oldest due pending job became due (0 when none is due). */
    lagSeconds: number;
    /** Failed jobs not redriven yet (the dead-letter list's default): they leave once redriven or pruned. */
    deadLetters: number;
    /** Running workers that list this queue, by their heartbeat rows (fresh: not gone as the console shows it). */
    workers: number;
    paused: boolean;
  }>;
  /**
   * Enqueue decisions of every producer per queue and outcome, totals since this process started
   * (at most an hour before the first read; decision-counts.ts), as of `DECISION_SETTLE_MS` (10 s)
   * before the read.
   */
  decisions: Array<{ queue: string; outcome: DecisionOutcome; total: number }>;
  /**
   * Keys held with a lifetime released per queue and reason (the job's new state: `started`,
   * `succeeded`, `failed`, `canceled`, `purged`), totals counted like `decisions`.
   */
  keyReleases: Array<{ queue: string; reason: string; total: number }>;
  /**
   * Key bindings. `expired` is exact below `EXACT_BINDINGS_CAP` (10,000), else an estimate of at
   * least that; `live` is an estimate (the table's row estimate minus the expired ones) unless the
   * table was never analyzed. `exact` says which values are exact counts.
   */
  bindings: {
    live: number;
    expired: number;
    oldestExpiredAgeSeconds: number;
    exact: { live: boolean; expired: boolean };
  };
}

/** The gauge names, units and descriptions (Prometheus: dots become underscores, units a suffix). */
export const STATE_GAUGES = {
  depth: {
    name: "workhorse.queue.depth",
    unit: "{job}",
    description: "Jobs per queue: ready (pending and due), scheduled (pending, not yet due), active (running).",
  },
  lag: {
    name: "workhorse.queue.lag",
    unit: "s",
    description: "Seconds since the oldest due pending job of the queue became due (0 when none is due).",
  },
  deadLetters: {
    name: "workhorse.queue.dead_letters",
    unit: "{job}",
    description: "Failed jobs (dead letters) per queue not redriven yet, as the dead-letter list shows them.",
  },
  workers: {
    name: "workhorse.queue.workers",
    unit: "{worker}",
    description: "Running workers whose fresh heartbeat row lists the queue.",
  },
  paused: { name: "workhorse.queue.paused", unit: "1", description: "1 while the queue is paused, else 0." },
  bindings: {
    name: "workhorse.bindings",
    unit: "{binding}",
    description:
      "Key bindings: live and expired awaiting cleanup, each exact below 10,000 and estimated from table statistics above it.",
  },
  oldestExpired: {
    name: "workhorse.bindings.oldest_expired_age",
    unit: "s",
    description: "Seconds since the oldest expired binding awaiting cleanup expired (0 when none).",
  },
} as const;

/**
 * Views that lift the OpenTelemetry SDK's cardinality limit (2,000 attribute sets per instrument by
 * default, past which points merge into one `otel.metric.overflow` series) for the state gauges, so
 * they stay one exact series per queue whatever the number of queues. Plain objects in the shape of
 * `@opentelemetry/sdk-metrics`' `ViewOptions`: `new MeterProvider({ readers, views: STATE_GAUGE_VIEWS })`.
 * (The SDK keeps one small entry per attribute set it has ever seen for an asynchronous instrument.)
 */
export const STATE_GAUGE_VIEWS: ReadonlyArray<{
  meterName: string;
  instrumentName: string;
  aggregationCardinalityLimit: number;
}> = [...Object.values(STATE_GAUGES), DECISION_COUNTS, KEY_RELEASE_COUNTS].map((g) => ({
  meterName: INSTRUMENTATION_NAME,
  instrumentName: g.name,
  aggregationCardinalityLimit: Number.POSITIVE_INFINITY,
}));

/** A queue's numbers when it holds nothing. */
export function emptyQueue(queue: string): StateSnapshot["queues"][number] {
  return {
    queue,
    depth: { scheduled: 0, ready: 0, active: 0 },
    lagSeconds: 0,
    deadLetters: 0,
    workers: 0,
    paused: false,
  };
}

function snapshotOf(rows: StateRow[], tally: DecisionTally, readAt: Date): StateSnapshot {
  const byQueue = new Map<string, StateSnapshot["queues"][number]>();
  const queue = (name: string) => {
    let q = byQueue.get(name);
    if (!q) {
      q = emptyQueue(name);
      byQueue.set(name, q);
    }
    return q;
  };
  const bindings = { live: 0, expired: 0, oldestExpiredAgeSeconds: 0, exact: { live: true, expired: true } };
  for (const r of rows) {
    if (r.metric === "bindings") bindings[r.label === "live" ? "live" : "expired"] = r.value;
    else if (r.metric === "bindings_exact") bindings.exact[r.label === "live" ? "live" : "expired"] = r.value === 1;
    else if (r.metric === "oldest_expired_binding_age") bindings.oldestExpiredAgeSeconds = r.value;
    else if (r.queue !== null) {
      const q = queue(r.queue);
      if (r.metric === "depth") q.depth[r.label as keyof typeof q.depth] = r.value;
      else if (r.metric === "lag") q.lagSeconds = Math.max(0, r.value);
      else if (r.metric === "dead_letters") q.deadLetters = r.value;
      else if (r.metric === "workers") q.workers = r.value;
      else if (r.metric === "paused") q.paused = true;
    }
  }
  const queues = [...byQueue.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
  return { readAt, queues, decisions: tally.list(), keyReleases: tally.releases(), bindings };
}

/**
 * The state of one installation, cached.
 *
 * ```ts
 * const gauges = new StateGauges(pool);          // any process: a worker, the console, a sidecar
 * gauges.register();                             // observable gauges on the global meter provider
 * ```
 */
export class StateGauges {
  private readonly maxAgeMs: number;
  private last: { at: number; snapshot: StateSnapshot } | null = null;
  private inflight: Promise<StateSnapshot> | null = null;
  /** Reads of PostgreSQL so far. */
  reads = 0;
  /** Decisions of every producer, from the database (decision-counts.ts). */
  private readonly decisions = new DecisionTally();
  /** Queues the gauges reported last time (register()). */
  private reported = new Set<string>();
  /** Queues gone from `snapshot`, observed at 0 while it serves (register()). */
  private gone: { snapshot: StateSnapshot | null; queues: string[] } = { snapshot: null, queues: [] };

  constructor(
    private readonly db: Sql,
    options: StateGaugeOptions = {},
  ) {
    const maxAgeMs = options.maxAgeMs ?? 15_000;
    if (!Number.isInteger(maxAgeMs) || maxAgeMs < 0 || maxAgeMs > 3_600_000) {
      throw new EnqueueValidationError([{ option: "maxAgeMs", rule: "must be an integer 0..3600000" }]);
    }
    this.maxAgeMs = maxAgeMs;
  }

  /**
   * The state for a collection, never waiting on PostgreSQL once a read exists: the last read while
   * younger than `maxAgeMs`; once older, still the last read while a new one runs in the background
   * (at most one at a time), up to `2 × maxAgeMs`; beyond that (or before the first read), a new read
   * awaited (shared by everyone asking meanwhile; its error is thrown).
   */
  read(): Promise<StateSnapshot> {
    const last = this.last;
    const age = last ? performance.now() - last.at : Number.POSITIVE_INFINITY;
    if (last && age < this.maxAgeMs) return Promise.resolve(last.snapshot);
    if (last && age < 2 * this.maxAgeMs) {
      this.refresh().catch(() => {}); // the next collection tries again
      return Promise.resolve(last.snapshot);
    }
    return this.refresh();
  }

  /** A new read of PostgreSQL now (or the one already running). */
  refresh(): Promise<StateSnapshot> {
    if (!this.inflight) {
      this.reads++;
      this.inflight = Promise.all([selectStateRows(this.db), this.decisions.advance(this.db)])
        .then(([rows]) => {
          const snapshot = snapshotOf(rows, this.decisions, new Date());
          this.last = { at: performance.now(), snapshot };
          return snapshot;
        })
        .finally(() => {
          this.inflight = null;
        });
    }
    return this.inflight;
  }

  /** The queues reported before `s` and not in it (the same list for every collection `s` serves). */
  private goneFrom(s: StateSnapshot): string[] {
    if (this.gone.snapshot !== s) {
      const now = new Set(s.queues.map((q) => q.queue));
      this.gone = { snapshot: s, queues: [...this.reported].filter((q) => !now.has(q)) };
      this.reported = now;
    }
    return this.gone.queues;
  }

  /**
   * Registers the gauges on `meterProvider` (default the global one); returns a function that
   * removes them. Queues appear once they hold a pending, active or failed job (not redriven), are
   * paused, or a running worker lists them. A queue that no longer does is reported once more with
   * every gauge at 0 (for as long as the read that found it gone serves) and then no longer: a
   * reader with delta temporality for gauges (the console's) then drops its series; a cumulative one
   * keeps them at 0 (the SDK repeats the last value of an attribute set it does not see again).
   * Pass `STATE_GAUGE_VIEWS` to the provider so more than 2,000 queues stay exact.
   */
  register(meterProvider: MeterProvider = metrics.getMeterProvider()): () => void {
    const meter = meterProvider.getMeter(INSTRUMENTATION_NAME);
    const g = (key: keyof typeof STATE_GAUGES): ObservableGauge =>
      meter.createObservableGauge(STATE_GAUGES[key].name, {
        description: STATE_GAUGES[key].description,
        unit: STATE_GAUGES[key].unit,
      });
    const [depth, lag, dead, workers, paused, bindings, oldest] = (
      ["depth", "lag", "deadLetters", "workers", "paused", "bindings", "oldestExpired"] as const
    ).map(g) as [
      ObservableGauge,
      ObservableGauge,
      ObservableGauge,
      ObservableGauge,
      ObservableGauge,
      ObservableGauge,
      ObservableGauge,
    ];
    const decided = meter.createObservableCounter(DECISION_COUNTS.name, {
      description: DECISION_COUNTS.description,
      unit: DECISION_COUNTS.unit,
    });
    const released = meter.createObservableCounter(KEY_RELEASE_COUNTS.name, {
      description: KEY_RELEASE_COUNTS.description,
      unit: KEY_RELEASE_COUNTS.unit,
    });
    const all = [depth, lag, dead, workers, paused, bindings, oldest, decided, released];
    const callback = async (observer: BatchObservableResult) => {
      const s = await this.read();
      for (const q of [...s.queues, ...this.goneFrom(s).map(emptyQueue)]) {
        const at = { "messaging.system": "workhorse", "messaging.destination.name": q.queue };
        for (const state of ["scheduled", "ready", "active"] as const) {
          observer.observe(depth, q.depth[state], { ...at, "workhorse.job.state": state });
        }
        observer.observe(lag, q.lagSeconds, at);
        observer.observe(dead, q.deadLetters, at);
        observer.observe(workers, q.workers, at);
        observer.observe(paused, q.paused ? 1 : 0, at);
      }
      for (const d of s.decisions) {
        observer.observe(decided, d.total, {
          "messaging.system": "workhorse",
          "messaging.destination.name": d.queue,
          "workhorse.enqueue.outcome": d.outcome,
        });
      }
      for (const r of s.keyReleases) {
        observer.observe(released, r.total, {
          "messaging.system": "workhorse",
          "messaging.destination.name": r.queue,
          "workhorse.key.release_reason": r.reason,
        });
      }
      observer.observe(bindings, s.bindings.live, { "workhorse.binding.state": "live" });
      observer.observe(bindings, s.bindings.expired, { "workhorse.binding.state": "expired" });
      observer.observe(oldest, s.bindings.oldestExpiredAgeSeconds);
    };
    meter.addBatchObservableCallback(callback, all);
    return () => meter.removeBatchObservableCallback(callback, all);
  }
}

/**
 * What every view of one queue shares (the `Queue` and the `withClient` / `transaction` views): the
 * pool and how statements run on it, the observation log, coalesced wake-ups, the maintenance
 * timer, and the accounting that lets `close()` wait for calls in flight.
 */
import type pg from "pg";
import { type Sql, statementConfig } from "../store/layout";
import { withPoolClient } from "../store/pool-client";
import { runOn } from "../store/text-rows";
import { notifyQueues } from "../store/wake";
import { EXPECTED_SQLSTATES, QueueClosedError, sqlStateOf } from "./errors";
import type { KeyRing } from "./keys";
import { ObservationRecorder, type ObservationRecorderOptions } from "./observations";
import { QueueTelemetry, type TelemetryOptions } from "./telemetry";

export { WAKE_CHANNEL } from "../store/wake";

/**
 * Shortest time between two wake-up NOTIFYs from one `Queue`, in ms (docs/enqueue.md, "Wake-ups").
 * The first after a quiet spell goes at once; during a burst the next waits out the rest of this
 * interval and carries every queue named meanwhile, so a busy producer sends at most 100 a second
 * (each costs PostgreSQL a transaction of its own) and a job waits at most this long for its wake-up.
 */
export const WAKE_MIN_INTERVAL_MS = 10;

/** The pool's statements, one client each; the connection is kept for expected SQLSTATEs (a conflict
 * must not cost a reconnect: pg-pool destroys a client released with an error). */
function poolExecutor(pool: pg.Pool): Sql {
  const keep = (err: unknown) => {
    const state = sqlStateOf(err);
    return state !== undefined && EXPECTED_SQLSTATES.has(state);
  };
  return {
    query: <R extends pg.QueryResultRow>(statement: string | pg.QueryConfig, values?: unknown[]) =>
      withPoolClient(pool, (client) => runOn<R>(client, statementConfig(statement, values)), keep),
  };
}

export function clientExecutor(client: pg.ClientBase): Sql {
  return {
    query: <R extends pg.QueryResultRow>(statement: string | pg.QueryConfig, values?: unknown[]) =>
      runOn<R>(client, statementConfig(statement, values)),
  };
}

/** What the keyed-call retry did since the `Queue` was made (`queue.retryStats()`). */
export interface RetryStats {
  /** Calls that needed more than one try. */
  retriedCalls: number;
  /** Extra tries in all. */
  retries: number;
  /**
   * Retried calls whose last try still failed with a retryable error (connection lost, retryable
   * SQLSTATE; the error was thrown). A try answered with a conflict, a validation refusal or any
   * other error that is not retryable ends the call without counting here.
   */
  exhausted: number;
  /** Tries whose answer was our own earlier try's job, committed before the connection broke: reported as `accepted`. */
  recoveredAccepts: number;
}

/**
 * `exec` with each statement admitted on its own (`QueueContext.admit`): refused with
 * `QueueClosedError` once close() was called, so close() waits only for the statement in flight. For
 * work that is no caller's call (the maintenance timer's run).
 */
export function admittedPerStatement(context: QueueContext, exec: Sql): Sql {
  return {
    query: <R extends pg.QueryResultRow>(statement: string | pg.QueryConfig, values?: unknown[]) =>
      context.admit(() => exec.query<R>(statementConfig(statement, values))),
  };
}

/** A `Queue`'s settings, checked and defaulted (queue-settings.ts). */
export interface QueueConfig {
  maxPayloadBytes: number;
  source: string | null;
  notify: boolean;
  keys: KeyRing;
  maintenance:
    | false
    | { intervalMs: number; observationRetentionMs: number; jobRetentionMs: number; batchSize: number };
  retry: false | { attempts: number; maxDelayMs: number };
  coalesce: false | { maxStatements: number; maxCalls: number };
  telemetry: TelemetryOptions;
}

/** What every view of the queue shares: the pool, the observation log, the wake-ups. */
export class QueueContext {
  readonly recorder: ObservationRecorder;
  readonly telemetry: QueueTelemetry;
  readonly poolExec: Sql;
  private pendingWake = new Set<string>();
  private waking: Promise<void> | null = null;
  /** When the last wake-up NOTIFY was sent (`performance.now()`). */
  private lastWakeAt = Number.NEGATIVE_INFINITY;
  private maintenanceTimer: NodeJS.Timeout | null = null;
  private inflight = 0;
  private drained: (() => void) | null = null;
  private closing: Promise<void> | null = null;
  /** close() was called: new calls are refused. Calls made before it still run. */
  closed = false;
  /** Every call made before close() has settled: wake-ups stop. */
  private ended = false;
  readonly retryCounts: RetryStats = { retriedCalls: 0, retries: 0, exhausted: 0, recoveredAccepts: 0 };

  /**
   * `schema`: the check each call makes until it passes once (schema-check.ts): `known` tells whether
   * the pool's schema was found usable, `check` reads it (rejecting with `SchemaBehindError`).
   */
  constructor(
    readonly pool: pg.Pool,
    readonly config: QueueConfig,
    observations: ObservationRecorderOptions | undefined,
    private readonly schema: { known(pool: pg.Pool): boolean; check(pool: pg.Pool): Promise<void> },
  ) {
    this.recorder = new ObservationRecorder(pool, observations);
    this.telemetry = new QueueTelemetry(config.telemetry);
    this.poolExec = poolExecutor(pool);
  }

  /**
   * Coalesces wake-ups: at most one NOTIFY statement in flight and at most one per
   * `WAKE_MIN_INTERVAL_MS`, each carrying every queue named since the one before.
   */
  wake(queues: Iterable<string>): void {
    // A call made before close() that finishes while close() waits for it still wakes workers.
    if (!this.config.notify || this.ended) return;
    for (const q of queues) this.pendingWake.add(q);
    if (!this.waking) this.waking = this.sendWake();
  }

  private async sendWake(): Promise<void> {
    try {
      while (this.pendingWake.size > 0) {
        const wait = this.lastWakeAt + WAKE_MIN_INTERVAL_MS - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
        const queues = [...this.pendingWake];
        this.pendingWake.clear();
        this.lastWakeAt = performance.now();
        try {
          await notifyQueues(this.pool, queues);
        } catch {
          // A lost wake-up only delays a job: workers poll as well.
        }
      }
    } finally {
      this.waking = null;
    }
  }

  startMaintenance(run: () => Promise<unknown>): void {
    const m = this.config.maintenance;
    if (!m || this.maintenanceTimer) return;
    const tick = () => {
      this.maintenanceTimer = setTimeout(async () => {
        try {
          await run();
        } catch {
          // Next tick tries again; runMaintenance() reports errors to callers who ask.
        }
        if (!this.closed) tick();
      }, m.intervalMs);
      this.maintenanceTimer.unref();
    };
    tick();
  }

  /**
   * Runs one call of the queue's public surface (an enqueue, a lookup, an operator action, a
   * transaction), from its first step (reading the installation key, waiting for its coalesced
   * statement or a pool connection) to its last: refused with `QueueClosedError` once close() was
   * called, and counted until it settles, so close() waits for every call made before it. The first
   * call on a pool reads the schema's status first (schema-check.ts): a database behind this code is
   * refused with `SchemaBehindError` before anything is sent.
   */
  async admit<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed) throw new QueueClosedError();
    this.inflight++;
    try {
      if (!this.schema.known(this.pool)) await this.schema.check(this.pool);
      return await fn();
    } finally {
      this.inflight--;
      if (this.inflight === 0 && this.drained) this.drained();
    }
  }

  /**
   * Refuses new calls, waits for every call made before (they complete), then for their wake-ups,
   * and flushes the observation log. A second call waits for the same close.
   */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    if (this.maintenanceTimer) clearTimeout(this.maintenanceTimer);
    this.maintenanceTimer = null;
    if (this.inflight > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    this.ended = true;
    await this.waking;
    await this.recorder.close();
  }
}

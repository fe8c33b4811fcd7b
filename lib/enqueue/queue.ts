/**
 * `Queue`: the public operations over a caller-owned pool (queue-operations.ts), the views over a
 * caller's client or transaction, and the queue's lifetime (retry and observation counters, close).
 */

import type pg from "pg";
import type { CoalesceStats } from "./coalesce";
import { EnqueueValidationError, isConnectionLoss, sqlStateOf, WorkhorseDatabaseError, WorkhorseError } from "./errors";
import type { ObservationStats } from "./observations";
import { answeredByServer, withPoolClient } from "../store/pool-client";
import { admittedPerStatement, clientExecutor, QueueContext, type RetryStats } from "./queue-context";
import { QueueOperations } from "./queue-operations";
import { type QueueOptions, queueSettings } from "./queue-settings";

export type { MaintenanceResult } from "./maintenance";
export { type RetryStats, WAKE_CHANNEL } from "./queue-context";
export { QueueOperations } from "./queue-operations";
export type { QueueOptions } from "./queue-settings";

/**
 * The enqueue core over a caller-owned `pg.Pool`.
 *
 * ```ts
 * const queue = new Queue({ pool });
 * await migrate(pool);
 * const jobId = await queue.enqueue("invoice.capture", { invoiceId }, {
 *   queue: "billing",
 *   idempotency: { key: `capture:${invoiceId}`, scope: "invoice-capture", ttlMs: 86_400_000 },
 * });
 * ```
 */
export class Queue extends QueueOperations {
  constructor(options: QueueOptions) {
    const context = new QueueContext(options?.pool, queueSettings(options), options.observations);
    super(context, context.poolExec, false);
    // The timer's run is no caller's call: close() does not wait for all of it, only for the
    // statement it is in (each statement is admitted on its own, the rest are refused).
    const timer = new QueueOperations(context, admittedPerStatement(context, context.poolExec), false, true);
    context.startMaintenance(() => timer.runMaintenance({ trigger: "schedule" }));
  }

  /**
   * The same operations on the caller's client, inside whatever transaction it has open: the job,
   * binding and event commit or roll back with the caller's work. The wake-up NOTIFY is sent inside
   * that transaction (PostgreSQL delivers it on commit only). Under REPEATABLE READ or SERIALIZABLE a
   * racing insert of the same key fails with SQLSTATE 40001 (`WorkhorseDatabaseError.retryable`):
   * retry the transaction.
   */
  withClient(client: pg.ClientBase): QueueOperations {
    if (!client || typeof client.query !== "function") {
      throw new EnqueueValidationError([{ option: "client", rule: "must be a connected pg client" }]);
    }
    return new QueueOperations(this.context, clientExecutor(client), true);
  }

  /**
   * Runs `fn` in one transaction on a client from the pool: everything `tx` writes (jobs, bindings,
   * events, audit rows through `tx.recordOperatorAction`) commits together when `fn` resolves, and
   * rolls back when it throws (the error is rethrown). SQL: `begin` / `commit` / `rollback` around
   * `fn`'s statements. Keyed calls inside are not retried: the transaction is yours. A transaction
   * started before `close()` runs to its end (`tx` keeps working) and `close()` waits for it, so
   * do not await `close()` inside `fn`.
   *
   * ```ts
   * const jobId = await queue.transaction(async (tx) => {
   *   const id = await tx.enqueue("invoice.capture", { invoiceId }, { idempotency: { key } });
   *   await tx.recordOperatorAction({ actor, action: "enqueue_test", target: `job:${id}`, result: {} });
   *   return id;
   * });
   * ```
   */
  async transaction<T>(fn: (tx: QueueOperations) => Promise<T>): Promise<T> {
    if (typeof fn !== "function") {
      throw new EnqueueValidationError([{ option: "fn", rule: "must be a function (tx) => Promise" }]);
    }
    return this.call(() => this.inTransaction(fn));
  }

  private async inTransaction<T>(fn: (tx: QueueOperations) => Promise<T>): Promise<T> {
    try {
      return await withPoolClient(
        this.context.pool,
        async (client) => {
          await client.query("begin");
          try {
            // Admitted with the transaction: its calls run even once close() was called.
            const result = await fn(new QueueOperations(this.context, clientExecutor(client), true, true));
            await client.query("commit");
            return result;
          } catch (err) {
            await client.query("rollback").catch(() => {});
            throw err;
          }
        },
        answeredByServer,
      );
    } catch (err) {
      // fn's own errors pass through as they are; begin/commit failures become typed.
      if (err instanceof WorkhorseError || !(sqlStateOf(err) || isConnectionLoss(err))) throw err;
      throw new WorkhorseDatabaseError(`transaction failed: ${(err as Error)?.message ?? String(err)}`, err);
    }
  }

  /** What the keyed-call retry did so far (see `QueueOptions.retry`). */
  retryStats(): RetryStats {
    return { ...this.context.retryCounts };
  }

  /**
   * What smart batching did so far (see `QueueOptions.coalesce`): calls through it, statements
   * sent, statements that carried several calls, the most calls in one. All zero when it is off.
   */
  coalesceStats(): CoalesceStats {
    return this.coalescer
      ? { ...this.coalescer.stats }
      : { calls: 0, statements: 0, sharedStatements: 0, largestStatement: 0 };
  }

  /** Observation recorder counters: recorded, written, dropped, buffered. */
  observationStats(): ObservationStats {
    return this.context.recorder.stats();
  }

  /** Writes buffered observations now. After `close()` (which flushed them) it rejects with `QueueClosedError`. */
  flushObservations(): Promise<void> {
    return this.call(() => this.context.recorder.flush());
  }

  /**
   * Closes the queue: calls made after it reject with `QueueClosedError`; every call made before it
   * completes, whatever it is waiting on (the installation key's first read, its coalesced
   * statement's turn, a pool connection, a transaction's callback), and `close()` resolves after
   * them, their wake-ups and the observation log's last flush. Stops the maintenance timer (a run in
   * progress stops after its current statement). Never ends the caller's pool. Calling it again
   * returns the same close.
   */
  async close(): Promise<void> {
    await this.context.close();
  }
}

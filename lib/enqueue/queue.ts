/**
 * `Queue` and its public operations (docs/enqueue.md). Each method hands over to the module with its
 * logic: enqueue-call.ts, lookups.ts, operator-actions.ts, maintenance.ts; the views share queue-context.ts.
 */
import type pg from "pg";
import type { Sql } from "../store/layout";
import { withTransaction } from "../store/pool-client";
import { Coalescer, type CoalesceStats } from "./coalesce";
import { loadKeys, type QueueView, runEnqueue } from "./enqueue-call";
import { checkBatch, namesAKey, normalizeBatch, normalizeRequest } from "./enqueue-input";
import { EnqueueValidationError, readSafely, transactionFailure } from "./errors";
import * as lookups from "./lookups";
import type { MaintenanceResult } from "./maintenance";
import * as maintenance from "./maintenance";
import { heldObservations, type ObservationStats, standingAfterRollback } from "./observations";
import * as actions from "./operator-actions";
import { admittedPerStatement, clientExecutor, QueueContext, type RetryStats } from "./queue-context";
import { type QueueOptions, queueSettings } from "./queue-settings";
import { checkSchema, schemaKnownCurrent } from "./schema-check";
import type * as T from "./types";

export type { MaintenanceResult } from "./maintenance";
export { type RetryStats, WAKE_CHANNEL } from "./queue-context";
export type { QueueOptions } from "./queue-settings";

/** The public operations, bound to an executor: the pool (`Queue`), a caller's client or a transaction. */
export class QueueOperations {
  /** What an enqueue call runs on (enqueue-call.ts). */
  protected readonly view: QueueView;
  /** Smart batching of single calls (coalesce.ts): the pool's view only, when not turned off. */
  protected readonly coalescer: Coalescer | null;

  /**
   * @internal
   * `admitted`: the view runs inside a call the queue already admitted (`transaction`'s `tx`, the
   * maintenance timer's run), so its own calls are not admitted again (see `call`).
   */
  constructor(
    protected readonly context: QueueContext,
    exec: Sql,
    inCallerTransaction: boolean,
    private readonly admitted = false,
    held: QueueView["held"] = null,
  ) {
    this.view = { context, exec, inCallerTransaction, held };
    const coalesce = context.config.coalesce;
    this.coalescer = coalesce && !inCallerTransaction ? new Coalescer(this.view, coalesce) : null;
  }

  /**
   * Runs one public call, whole: refused with `QueueClosedError` once `close()` was called; a call
   * made before `close()` completes (its key read, its wait for a statement or a connection, every
   * statement it sends), and `close()` waits for it.
   */
  protected call<R>(fn: () => Promise<R>): Promise<R> {
    return this.admitted ? fn() : this.context.admit(fn);
  }

  /**
   * Enqueues one job and returns its id (a UUID string). With `idempotency`, a repeated request
   * returns the original job's id and writes nothing. An accept writes the job row (which carries
   * its key and its `enqueued` timeline entry) and, when keyed, one `workhorse.key_binding` row.
   * With `debounce`, a repeat while the job is pending rewrites it in place (same id, a `debounced`
   * event); with `throttle`, an equivalent repeat inside the window returns the window's job and
   * writes nothing (docs/debounce-throttle.md). Either way the id returned is the job holding the key.
   *
   * SQL: one round trip, `workhorse.enqueue_one(...)` (a batch: `workhorse.enqueue_batch(...)` over typed arrays).
   * @throws EnqueueValidationError bad input (nothing sent to PostgreSQL)
   * @throws EnqueueIdempotencyConflictError the live key is bound to different work
   * @throws WorkhorseDatabaseError anything else from PostgreSQL (`cause` kept; `retryable` for 40001/40P01)
   */
  async enqueue(type: string, payload: unknown, options?: T.EnqueueOptions): Promise<string> {
    return (await this.enqueueWithResult(type, payload, options)).jobId;
  }

  /**
   * Like `enqueue`, and says what PostgreSQL decided: `{ jobId, outcome }` with outcome `accepted`,
   * `replayed` (idempotency), `replaced` (debounce), `coalesced` (throttle), or
   * `{ jobId, outcome: "non_replaceable", reason }` for a debounce repeat that could not change the
   * job (`incompatible_key_mode` | `not_pending` | `window_elapsed_pending`; only the observation is
   * written). `reason` exists only on that member of the union.
   */
  async enqueueWithResult(type: string, payload: unknown, options?: T.EnqueueOptions): Promise<T.EnqueueResult> {
    return this.call(async () => {
      if (!this.context.config.keys.loaded && namesAKey(options)) await loadKeys(this.view, true);
      const request = normalizeRequest(type, payload, options, this.context.config);
      if (this.coalescer) return this.coalescer.submit(request);
      const [result] = await runEnqueue(this.view, [request]);
      return result as T.EnqueueResult;
    });
  }

  /**
   * Enqueues up to 1,000 requests atomically in one round trip; returns job ids in input order.
   * Equivalent requests for one key inside the batch share one job. Keys are locked in sorted
   * (scope, hash) order, so overlapping batches never deadlock. Any conflict rolls back the batch.
   *
   * SQL: one round trip, `workhorse.enqueue_batch(...)` with one typed array per column (ids `uuid[]`,
   * key hashes and field digests `bytea[]`, payloads one `jsonb` array, tags flattened with counts).
   * A keyed accept writes the job row and its `key_binding` row; a replay writes nothing.
   * @throws EnqueueValidationError bad input anywhere in the batch (nothing sent), or more than 1,000
   * @throws EnqueueIdempotencyConflictError with `ordinal`, the 1-based position of the request
   */
  async enqueueMany(requests: readonly T.EnqueueRequest[]): Promise<string[]> {
    return (await this.enqueueManyWithResults(requests)).map((r) => r.jobId);
  }

  /** Like `enqueueMany`, with an `EnqueueResult` per request, in input order. */
  async enqueueManyWithResults(requests: readonly T.EnqueueRequest[]): Promise<T.EnqueueResult[]> {
    return this.call(async () => {
      checkBatch(requests);
      if (requests.length === 0) return [];
      if (!this.context.config.keys.loaded && requests.some((r) => namesAKey(readSafely(() => r?.options)))) {
        // The batch is repeated on connection loss only when every request is keyed; so is this read.
        await loadKeys(
          this.view,
          requests.every((r) => namesAKey(readSafely(() => r?.options))),
        );
      }
      return runEnqueue(this.view, normalizeBatch(requests, this.context.config));
    });
  }

  /** The job with this id, or null. SQL: `select * from workhorse.job where id = $1`. */
  async getJob(jobId: string): Promise<T.Job | null> {
    return this.call(() => lookups.getJob(this.view, jobId));
  }

  /**
   * The binding of a scoped key, live or expired-awaiting-cleanup, or null when none exists (never
   * bound, released by a purge, or already cleaned up). The key is hashed here; only the hash is sent.
   */
  async findBinding(input: { key: string; scope?: string }): Promise<T.BindingInfo | null> {
    return this.call(() => lookups.findBinding(this.view, input));
  }

  /**
   * The bindings of one raw key in each of `scopes` (at most 200, the rest ignored): one round trip
   * of primary-key probes, either hash (before and after the HMAC upgrade). For "the right key in
   * the wrong scope". Ordered by scope.
   * @throws EnqueueValidationError a key or scope out of bounds
   */
  async findBindingInScopes(input: { key: string; scopes: string[] }): Promise<T.BindingInfo[]> {
    return this.call(() => lookups.findBindingInScopes(this.view, input));
  }

  /**
   * What operators may see of a scoped key: scope, preview, digest (of this installation's keyed
   * hash) and length, plus `legacyKeyDigest`, the digest the key had before the HMAC upgrade (bindings
   * and events made before it carry that one). Never the key or the installation secret.
   */
  async describeKey(input: { key: string; scope?: string }): Promise<T.KeyDescription> {
    return this.call(() => lookups.describeKey(this.view, input));
  }

  /**
   * Purges one `ready` or `scheduled` job: tombstone (state `purged`, actor, time, reason), a `purged`
   * event, the bindings it owns released, one audit row. SQL: `workhorse.purge_jobs(...)`.
   * @throws PurgeNotAllowedError the job is active or terminal (nothing changed; the refusal is audited)
   * @throws JobNotFoundError no job has this id
   */
  async purge(target: { jobId: string }, context: T.OperatorContext): Promise<T.PurgeResult> {
    return this.call(() => actions.purge(this.view, target, context));
  }

  /** Purges every `ready` and `scheduled` job of one queue, as `purge` does for one job. */
  async purgeQueue(queue: string, context: T.OperatorContext): Promise<T.PurgeResult> {
    return this.call(() => actions.purgeQueue(this.view, queue, context));
  }

  /**
   * Cancels jobs (docs/operator-actions.md), one round trip: `scheduled`/`ready` jobs become `canceled`;
   * `active` jobs are flagged (`cancel_requested`) and their worker aborts the handler at its next
   * heartbeat (no retry); terminal jobs are left alone. Key bindings are kept. One audit row (`cancel`).
   * `selection.jobIds`: 1..1,000 ids. SQL: `workhorse.cancel_jobs($1::uuid[], $2, $3)`.
   * @returns `{ canceled, cancelRequested, unchanged }` (`unchanged`: count per state, or `missing`)
   * @throws EnqueueValidationError bad ids or context (nothing written)
   * @throws JobNotFoundError a single id was given and no job has it
   */
  async cancel(selection: T.JobSelection, context: T.OperatorContext): Promise<T.CancelResult> {
    return this.call(() => actions.cancel(this.view, selection, context));
  }

  /**
   * Purges many jobs at once (the console's selection): each `ready`/`scheduled` job becomes a
   * tombstone with a `purged` event and releases the bindings it owns, as `purge` does; other jobs
   * are left alone and counted in `unchanged` (no error). One audit row (`purge_job`).
   * `selection.jobIds`: 1..1,000 ids. SQL: `workhorse.purge_job_list($1::uuid[], $2, $3)`.
   * @returns `{ purged, releasedBindings, unchanged }`
   * @throws EnqueueValidationError bad ids or context
   */
  async purgeJobs(selection: T.JobSelection, context: T.OperatorContext): Promise<T.PurgeJobsResult> {
    return this.call(() => actions.purgeJobs(this.view, selection, context));
  }

  /**
   * Clears dead letters: deletes the selected `failed` jobs with their events, checkpoints and
   * redrive requests; others are counted in `unchanged`. One that still owns a live key binding is kept
   * (`keptOwningLiveKey`) unless `context.releaseKeys`. One audit row (`delete_failed_jobs`).
   * `selection.jobIds`: 1..1,000 ids. SQL: `workhorse.delete_failed_jobs($1::uuid[], $2, $3, $4)`.
   * @throws EnqueueValidationError bad ids or context
   */
  async deleteFailedJobs(
    selection: T.JobSelection,
    context: T.DeleteFailedJobsContext,
  ): Promise<T.DeleteFailedJobsResult> {
    return this.call(() => actions.deleteFailedJobs(this.view, selection, context));
  }

  /**
   * Makes `scheduled` jobs `ready` now (`run_at = now()`, a `run_now` event, a wake-up NOTIFY); other
   * states are left alone. One audit row (`run_now`). `selection.jobIds`: 1..1,000 ids.
   * SQL: `workhorse.run_jobs_now($1::uuid[], $2, $3)`.
   * @returns `{ updated, unchanged }`
   * @throws EnqueueValidationError bad ids or context
   * @throws JobNotFoundError a single id was given and no job has it
   */
  async runNow(selection: T.JobSelection, context: T.OperatorContext): Promise<T.RunNowResult> {
    return this.call(() => actions.runNow(this.view, selection, context));
  }

  /**
   * Redrives failed jobs (docs/operator-actions.md), one round trip: each `failed` source gets a new
   * `ready` job at attempt 0 (its definition copied, not its deadline or checkpoints), linked both
   * ways; a live key binding of the source moves to it. Idempotent on (source job, HMAC of
   * `requestId`): the same request replays; the raw id is never sent. `dryRun` writes nothing. A
   * source another request already redrove answers `already_redriven` unless `again: true`. One audit
   * row (`redrive`) unless `dryRun`.
   * SQL: `workhorse.redrive_jobs($1::uuid[], $2::uuid[], $3::bytea, $4, $5, $6, $7)`.
   * @returns `{ results: [{ sourceJobId, status, jobId? }] }` in input order (duplicates once);
   *   status `redriven` | `replayed` | `already_redriven` | `eligible` | `not_found` | `not_failed`
   * @throws EnqueueValidationError bad input (1..1,000 ids; `requestId` 1..512 UTF-8 bytes;
   *   `requestedBy` 1..200 and `reason` 1..1,000 characters)
   * @throws RedriveIdempotencyConflictError `requestId` was used for a source with another requester
   *   or reason (nothing written)
   */
  async redrive(request: T.RedriveRequest): Promise<T.RedriveResult> {
    return this.call(() => actions.redrive(this.view, request));
  }

  /**
   * Failed jobs (dead letters), newest `finishedAt` first, keyset-paged on (finished_at, id).
   * Filters: `queue`, `type`, `errorName` (`lastError.name`), `finishedAfter` (exclusive),
   * `finishedBefore` (exclusive); `limit` 1..500 (default 50). Pass `nextCursor` back as `cursor` for
   * the next page; it is null on the last one. SQL: one select on the `job_dead_letter_idx` index.
   * @throws EnqueueValidationError bad filters or a cursor that is not a `nextCursor`
   */
  async listDeadLetters(query: T.DeadLetterQuery = {}): Promise<T.DeadLetterPage> {
    return this.call(() => actions.listDeadLetters(this.view, query));
  }

  /**
   * Pauses a queue: workers claim nothing from it (claim_jobs skips it from the next claim on; every
   * worker sees it within one poll interval). Jobs already running finish. One audit row
   * (`pause_queue`). SQL: `workhorse.pause_queue($1, $2, $3)`.
   * @returns `{ paused }`: true when it was running, false when it was already paused
   * @throws EnqueueValidationError bad queue name or context
   */
  async pauseQueue(queue: string, context: T.OperatorContext): Promise<{ paused: boolean }> {
    return this.call(() => actions.pauseQueue(this.view, queue, context));
  }

  /**
   * Resumes a paused queue (and wakes its workers). One audit row (`resume_queue`).
   * SQL: `workhorse.resume_queue($1, $2, $3)`.
   * @returns `{ resumed }`: true when it was paused
   */
  async resumeQueue(queue: string, context: T.OperatorContext): Promise<{ resumed: boolean }> {
    return this.call(() => actions.resumeQueue(this.view, queue, context));
  }

  /** Paused queues with who paused them, when and why (name order). */
  async listPausedQueues(): Promise<T.PausedQueue[]> {
    return this.call(() => actions.listPausedQueues(this.view));
  }

  /**
   * Retention: deletes jobs terminal for more than `olderThanMs` with their events, `limit` per
   * statement (oldest first, `SKIP LOCKED`) until none are left or `maxBatches` ran. A job that still
   * owns a live key binding is never deleted. SQL: `workhorse.prune_finished_jobs($1, $2)` per batch.
   */
  async pruneFinishedJobs(options: T.PruneFinishedJobsOptions = {}): Promise<T.PruneFinishedJobsResult> {
    return this.call(() => maintenance.pruneFinishedJobs(this.view, options));
  }

  /**
   * Appends one row to `workhorse.operator_audit` (for operator actions that are not purges, which
   * audit themselves): `action` such as `enqueue_test`, `target` such as `job:<id>` or `queue:billing`,
   * `result` any JSON object. `actor` must come from an authenticated session, never from a form.
   */
  async recordOperatorAction(entry: T.OperatorAuditEntry): Promise<void> {
    return this.call(() => actions.recordOperatorAction(this.view, entry));
  }

  /**
   * Deletes expired bindings, oldest first, `limit` per statement (1..100,000, default 1,000; `SKIP
   * LOCKED`, no long locks) until none are left or `maxBatches` (default: no limit) ran. A debounce
   * binding whose job has not started is kept past its window (docs/decisions.md). Returns the count.
   */
  async pruneExpiredBindings(options: { limit?: number; maxBatches?: number } = {}): Promise<number> {
    return this.call(() => maintenance.pruneExpiredBindings(this.view, options));
  }

  /**
   * Deletes observations older than `olderThanMs` (integer ms, at least 60,000; default 7 days), in
   * batches of `limit` (1..100,000, default 5,000).
   */
  async pruneObservations(options: { olderThanMs?: number; limit?: number } = {}): Promise<number> {
    return this.call(() => maintenance.pruneObservations(this.view, options));
  }

  /**
   * Gives back active jobs whose lease lapsed (a crashed or stalled worker): each gets a `lease_expired`
   * event and returns to `ready`, or becomes `failed` after its last attempt or past its deadline.
   * `limit` rows per statement (1..100,000, default 1,000), `SKIP LOCKED`.
   * SQL: `workhorse.reap_expired_leases(null, $1)`. Returns the count.
   */
  async reapExpiredLeases(options: { limit?: number } = {}): Promise<number> {
    return this.call(() => maintenance.reapExpiredLeases(this.view, options));
  }

  /**
   * One maintenance pass: expired bindings, observation retention, lapsed leases. Records each task
   * in `workhorse.maintenance_run` (what the console's maintenance panel shows).
   */
  async runMaintenance(options: T.MaintenanceOptions = {}): Promise<MaintenanceResult> {
    return this.call(() => maintenance.runMaintenance(this.view, options));
  }
}

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
    const context = new QueueContext(options?.pool, queueSettings(options), options.observations, {
      known: schemaKnownCurrent,
      check: checkSchema,
    });
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
    return new QueueOperations(this.context, clientExecutor(client), true, false, heldObservations("call"));
  }

  /**
   * Runs `fn` in one transaction on a client from the pool: everything `tx` writes (jobs, bindings,
   * events, audit rows through `tx.recordOperatorAction`) commits together when `fn` resolves, and
   * rolls back when it throws (the error is rethrown). SQL: `begin` / `commit` / `rollback` around
   * `fn`'s statements. Keyed calls inside are not retried: the transaction is yours. A transaction
   * started before `close()` runs to its end (`tx` keeps working) and `close()` waits for it, so
   * do not await `close()` inside `fn`. Its observations are logged once it committed; after a
   * rollback only conflicts naming jobs that exist outside it (docs/enqueue.md, Observations).
   *
   * ```ts
   * const jobId = await queue.transaction(async (tx) => {
   *   const id = await tx.enqueue("invoice.capture", { invoiceId }, { idempotency: { key } });
   *   await tx.recordOperatorAction({ actor, action: "enqueue_test", target: `job:${id}`, result: {} });
   *   return id;
   * });
   * ```
   */
  async transaction<R>(fn: (tx: QueueOperations) => Promise<R>): Promise<R> {
    if (typeof fn !== "function") {
      throw new EnqueueValidationError([{ option: "fn", rule: "must be a function (tx) => Promise" }]);
    }
    // Admitted with the transaction: its calls run even once close() was called. Its observations
    // are logged once it committed; after a rollback, only the refusals that stand.
    const held = heldObservations("transaction");
    const tx = (client: pg.PoolClient) =>
      fn(new QueueOperations(this.context, clientExecutor(client), true, true, held));
    return this.call(() =>
      withTransaction(this.context.pool, tx).then(
        (result) => this.context.recorder.recordAll(held.observations, result),
        (err) => {
          this.context.recorder.recordAll(standingAfterRollback(held), null);
          throw transactionFailure(err);
        },
      ),
    );
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

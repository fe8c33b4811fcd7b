/**
 * The public operations (README, docs/enqueue.md) on one view of a queue: the pool (`Queue`) or a
 * caller's client or transaction. Each method checks its input and hands over to the module that
 * holds its logic: enqueue-call.ts (enqueue), lookups.ts (getJob, findBinding, describeKey),
 * operator-actions.ts and maintenance.ts (one SQL function each). What the views share is
 * queue-context.ts.
 */
import type pg from "pg";
import { selectInstallation } from "../store/core/key-upgrade";
import { sqlOver } from "../store/layout";
import { Coalescer } from "./coalesce";
import { type CallView, mayRetry, repeating, runEnqueue } from "./enqueue-call";
import { checkBatch, namesAKey, normalizeBatch, normalizeRequest } from "./enqueue-input";
import { QueueClosedError, readSafely, WorkhorseDatabaseError } from "./errors";
import type { InstallationRow } from "./keys";
import * as lookups from "./lookups";
import type { MaintenanceResult } from "./maintenance";
import * as maintenance from "./maintenance";
import * as actions from "./operator-actions";
import type { Executor, OperationsDb, QueueContext } from "./queue-context";
import type {
  BindingInfo,
  CancelResult,
  DeadLetterPage,
  DeadLetterQuery,
  DeleteFailedJobsResult,
  EnqueueOptions,
  EnqueueRequest,
  EnqueueResult,
  Job,
  JobSelection,
  OperatorContext,
  PruneFinishedJobsResult,
  PurgeJobsResult,
  PurgeResult,
  RedriveRequest,
  RedriveResult,
  RunNowResult,
} from "./types";

/**
 * The public operations (README, docs/enqueue.md), bound to an executor: the pool (`Queue`) or a caller's client
 * (`queue.withClient(client)`).
 */
export class QueueOperations {
  /** What an enqueue call runs on (enqueue-call.ts). */
  private readonly view: CallView;
  /** Smart batching of single calls (coalesce.ts): the pool's view only, when not turned off. */
  protected readonly coalescer: Coalescer | null;

  /**
   * @internal
   * `admitted`: the view runs inside a call the queue already admitted (`transaction`'s `tx`, the
   * maintenance timer's run), so its own calls are not admitted again (see `call`).
   */
  constructor(
    protected readonly context: QueueContext,
    exec: Executor,
    inCallerTransaction: boolean,
    private readonly admitted = false,
  ) {
    this.view = { context, exec, inCallerTransaction };
    const coalesce = context.config.coalesce;
    this.coalescer = coalesce && !inCallerTransaction ? new Coalescer(this.view, coalesce) : null;
  }

  /**
   * Runs one public call, whole: refused with `QueueClosedError` once `close()` was called; a call
   * made before `close()` completes (its key read, its wait for a statement or a connection, every
   * statement it sends), and `close()` waits for it.
   */
  protected call<T>(fn: () => Promise<T>): Promise<T> {
    return this.admitted ? fn() : this.context.admit(fn);
  }

  /** What operator actions and maintenance (operator-actions.ts, maintenance.ts) run on. */
  protected get db(): OperationsDb {
    return {
      sql: (what, config) => this.sql(what, config),
      store: (what) => sqlOver(this.context.pool, { query: (config) => this.sql(what, config) }),
      rawStore: sqlOver(this.context.pool, this.view.exec),
      context: this.context,
      loadKeys: () => this.loadKeys(),
    };
  }

  /** One statement for the non-enqueue operations: driver errors become WorkhorseDatabaseError. */
  private async sql<R extends pg.QueryResultRow>(what: string, config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    try {
      return await this.view.exec.query<R>(config);
    } catch (err) {
      // Only the maintenance timer's statements are refused one by one (queue-context.ts).
      if (err instanceof QueueClosedError) throw err;
      throw new WorkhorseDatabaseError(`${what} failed: ${(err as Error)?.message ?? String(err)}`, err);
    }
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
  async enqueue(type: string, payload: unknown, options?: EnqueueOptions): Promise<string> {
    return (await this.enqueueWithResult(type, payload, options)).jobId;
  }

  /**
   * Like `enqueue`, and says what PostgreSQL decided: `{ jobId, outcome }` with outcome `accepted`,
   * `replayed` (idempotency), `replaced` (debounce), `coalesced` (throttle), or
   * `{ jobId, outcome: "non_replaceable", reason }` for a debounce repeat that could not change the
   * job (`incompatible_key_mode` | `not_pending` | `window_elapsed_pending`; only the observation is
   * written). `reason` exists only on that member of the union.
   */
  async enqueueWithResult(type: string, payload: unknown, options?: EnqueueOptions): Promise<EnqueueResult> {
    return this.call(async () => {
      if (!this.context.config.keys.loaded && namesAKey(options)) await this.loadKeys(true);
      const request = normalizeRequest(type, payload, options, this.context.config);
      if (this.coalescer) return this.coalescer.submit(request);
      const [result] = await runEnqueue(this.view, [request]);
      return result as EnqueueResult;
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
  async enqueueMany(requests: readonly EnqueueRequest[]): Promise<string[]> {
    return (await this.enqueueManyWithResults(requests)).map((r) => r.jobId);
  }

  /** Like `enqueueMany`, with an `EnqueueResult` per request, in input order. */
  async enqueueManyWithResults(requests: readonly EnqueueRequest[]): Promise<EnqueueResult[]> {
    return this.call(async () => {
      checkBatch(requests);
      if (requests.length === 0) return [];
      if (!this.context.config.keys.loaded && requests.some((r) => namesAKey(readSafely(() => r?.options)))) {
        // The batch is repeated on connection loss only when every request is keyed; so is this read.
        await this.loadKeys(requests.every((r) => namesAKey(readSafely(() => r?.options))));
      }
      return runEnqueue(this.view, normalizeBatch(requests, this.context.config));
    });
  }

  /** The job with this id, or null. SQL: `select * from workhorse.job where id = $1`. */
  async getJob(jobId: string): Promise<Job | null> {
    return this.call(() => lookups.getJob(this.db, jobId));
  }

  /**
   * The binding of a scoped key, live or expired-awaiting-cleanup, or null when none exists (never
   * bound, released by a purge, or already cleaned up). The key is hashed here; only the hash is sent.
   */
  async findBinding(input: { key: string; scope?: string }): Promise<BindingInfo | null> {
    return this.call(() => lookups.findBinding(this.db, input));
  }

  /**
   * The bindings of one raw key in each of `scopes` (at most 200, the rest ignored): one round trip
   * of primary-key probes, either hash (before and after the HMAC upgrade). For "the right key in
   * the wrong scope". Ordered by scope.
   * @throws EnqueueValidationError a key or scope out of bounds
   */
  async findBindingInScopes(input: { key: string; scopes: string[] }): Promise<BindingInfo[]> {
    return this.call(() => lookups.findBindingInScopes(this.db, input));
  }

  /**
   * What operators may see of a scoped key: scope, preview, digest (of this installation's keyed
   * hash) and length, plus `legacyKeyDigest`, the digest the key had before the HMAC upgrade (bindings
   * and events made before it carry that one). Never the key or the installation secret.
   */
  async describeKey(input: { key: string; scope?: string }): Promise<{
    scope: string;
    keyPreview: string;
    keyDigest: string;
    keyLength: number;
    legacyKeyDigest: string;
  }> {
    return this.call(() => lookups.describeKey(this.db, input));
  }

  /** Reads the installation secret (unless one was supplied) and the legacy window, once per Queue. */
  private loadKeys(forKeyedCall = false): Promise<void> {
    return this.context.config.keys.load(async (external): Promise<InstallationRow> => {
      const read = async () => {
        const row = await selectInstallation(this.db.store("reading the installation key"), external);
        if (!row) throw new WorkhorseDatabaseError("workhorse.installation is empty: run migrate() first", null);
        return row;
      };
      // A keyed call that will repeat itself through an outage repeats this read too.
      return forKeyedCall && mayRetry(this.view) ? repeating(this.context, read) : read();
    });
  }

  /**
   * Purges one `ready` or `scheduled` job: tombstone (state `purged`, actor, time, reason), a `purged`
   * event, the bindings it owns released, one audit row. SQL: `workhorse.purge_jobs(...)`.
   * @throws PurgeNotAllowedError the job is active or terminal (nothing changed; the refusal is audited)
   * @throws JobNotFoundError no job has this id
   */
  async purge(target: { jobId: string }, context: OperatorContext): Promise<PurgeResult> {
    return this.call(() => actions.purge(this.db, target, context));
  }

  /** Purges every `ready` and `scheduled` job of one queue, as `purge` does for one job. */
  async purgeQueue(queue: string, context: OperatorContext): Promise<PurgeResult> {
    return this.call(() => actions.purgeQueue(this.db, queue, context));
  }

  /**
   * Cancels jobs (docs/operator-actions.md), one round trip: `scheduled`/`ready` jobs become `canceled` at once (a
   * `canceled` event); `active` jobs are flagged (a `cancel_requested` event) and their worker aborts
   * the handler at its next heartbeat (`signal.reason` is a `JobCanceledError`), recording the
   * attempt `canceled` with no retry; terminal jobs are left alone. Key bindings are kept (a replay
   * still finds the canceled job; `purge` releases them). One `operator_audit` row (`cancel`).
   * `selection.jobIds`: 1..1,000 ids. SQL: `workhorse.cancel_jobs($1::uuid[], $2, $3)`.
   * @returns `{ canceled, cancelRequested, unchanged }` (`unchanged`: count per state, or `missing`)
   * @throws EnqueueValidationError bad ids or context (nothing written)
   * @throws JobNotFoundError a single id was given and no job has it
   */
  async cancel(selection: JobSelection, context: OperatorContext): Promise<CancelResult> {
    return this.call(() => actions.cancel(this.db, selection, context));
  }

  /**
   * Purges many jobs at once (the console's selection): each `ready`/`scheduled` job becomes a
   * tombstone with a `purged` event and releases the bindings it owns, as `purge` does; other jobs
   * are left alone and counted in `unchanged` (no error). One audit row (`purge_job`).
   * `selection.jobIds`: 1..1,000 ids. SQL: `workhorse.purge_job_list($1::uuid[], $2, $3)`.
   * @returns `{ purged, releasedBindings, unchanged }`
   * @throws EnqueueValidationError bad ids or context
   */
  async purgeJobs(selection: JobSelection, context: OperatorContext): Promise<PurgeJobsResult> {
    return this.call(() => actions.purgeJobs(this.db, selection, context));
  }

  /**
   * Clears dead letters: deletes the selected `failed` jobs with their events, checkpoints and
   * redrive requests; other jobs are left alone and counted in `unchanged`. A failed job that still
   * owns a live key binding is kept and listed in `keptOwningLiveKey` (a replay of its request would
   * otherwise find no job) unless `context.releaseKeys` is true: then its bindings are released and
   * it is deleted too. One audit row (`delete_failed_jobs`) with the reason and the counts.
   * `selection.jobIds`: 1..1,000 ids. SQL: `workhorse.delete_failed_jobs($1::uuid[], $2, $3, $4)`.
   * @throws EnqueueValidationError bad ids or context
   */
  async deleteFailedJobs(
    selection: JobSelection,
    context: OperatorContext & { releaseKeys?: boolean },
  ): Promise<DeleteFailedJobsResult> {
    return this.call(() => actions.deleteFailedJobs(this.db, selection, context));
  }

  /**
   * Makes `scheduled` jobs `ready` now (`run_at = now()`, a `run_now` event, a wake-up NOTIFY); other
   * states are left alone. One audit row (`run_now`). `selection.jobIds`: 1..1,000 ids.
   * SQL: `workhorse.run_jobs_now($1::uuid[], $2, $3)`.
   * @returns `{ updated, unchanged }`
   * @throws EnqueueValidationError bad ids or context
   * @throws JobNotFoundError a single id was given and no job has it
   */
  async runNow(selection: JobSelection, context: OperatorContext): Promise<RunNowResult> {
    return this.call(() => actions.runNow(this.db, selection, context));
  }

  /**
   * Redrives failed jobs (docs/operator-actions.md), one round trip. Each `failed` source gets a new `ready` job at
   * attempt 0 copying queue, type, payload, tags, concurrency key, retry policy, max attempts and
   * execution timeout (not the deadline, not checkpoints), linked both ways (`redrivenFrom`,
   * `redriveJobIds`); a live key binding of the source moves to the new job, so a replay of the
   * original keyed request returns the job that will run. Idempotent on (source job,
   * HMAC-SHA256 of `requestId` under the installation secret): the same request replays (`replayed`,
   * same `jobId`); the raw request id is never sent to PostgreSQL. `dryRun` answers `eligible` and
   * writes nothing. One audit row (`redrive`) unless `dryRun`. A source an earlier request (another
   * `requestId`) already redrove is not redriven twice: it answers `already_redriven` with the `jobId`
   * of the job its latest redrive made (in a dry run too), unless `again: true`.
   * SQL: `workhorse.redrive_jobs($1::uuid[], $2::uuid[], $3::bytea, $4, $5, $6, $7)`.
   * @returns `{ results: [{ sourceJobId, status, jobId? }] }` in input order (duplicates once);
   *   status `redriven` | `replayed` | `already_redriven` | `eligible` | `not_found` | `not_failed`
   * @throws EnqueueValidationError bad input (1..1,000 ids; `requestId` 1..512 UTF-8 bytes;
   *   `requestedBy` 1..200 and `reason` 1..1,000 characters)
   * @throws RedriveIdempotencyConflictError `requestId` was used for a source with another requester
   *   or reason (nothing written)
   */
  async redrive(request: RedriveRequest): Promise<RedriveResult> {
    return this.call(() => actions.redrive(this.db, request));
  }

  /**
   * Failed jobs (dead letters), newest `finishedAt` first, keyset-paged on (finished_at, id).
   * Filters: `queue`, `type`, `errorName` (`lastError.name`), `finishedAfter` (exclusive),
   * `finishedBefore` (exclusive); `limit` 1..500 (default 50). Pass `nextCursor` back as `cursor` for
   * the next page; it is null on the last one. SQL: one select on the `job_dead_letter_idx` index.
   * @throws EnqueueValidationError bad filters or a cursor that is not a `nextCursor`
   */
  async listDeadLetters(query: DeadLetterQuery = {}): Promise<DeadLetterPage> {
    return this.call(() => actions.listDeadLetters(this.db, query));
  }

  /**
   * Pauses a queue: workers claim nothing from it (claim_jobs skips it from the next claim on; every
   * worker sees it within one poll interval). Jobs already running finish. One audit row
   * (`pause_queue`). SQL: `workhorse.pause_queue($1, $2, $3)`.
   * @returns `{ paused }`: true when it was running, false when it was already paused
   * @throws EnqueueValidationError bad queue name or context
   */
  async pauseQueue(queue: string, context: OperatorContext): Promise<{ paused: boolean }> {
    return this.call(() => actions.pauseQueue(this.db, queue, context));
  }

  /**
   * Resumes a paused queue (and wakes its workers). One audit row (`resume_queue`).
   * SQL: `workhorse.resume_queue($1, $2, $3)`.
   * @returns `{ resumed }`: true when it was paused
   */
  async resumeQueue(queue: string, context: OperatorContext): Promise<{ resumed: boolean }> {
    return this.call(() => actions.resumeQueue(this.db, queue, context));
  }

  /** Paused queues with who paused them, when and why (name order). */
  async listPausedQueues(): Promise<Array<{ queue: string; pausedAt: Date; pausedBy: string; reason: string }>> {
    return this.call(() => actions.listPausedQueues(this.db));
  }

  /**
   * Retention: deletes terminal jobs (`succeeded`, `failed`, `canceled`, `purged`) that became
   * terminal more than `olderThanMs` ago (integer ms, at least 60,000; default 7 days), with their
   * events, `limit` per statement (1..100,000, default 1,000; oldest first, `SKIP LOCKED`), until
   * none are left or `maxBatches` ran. A job that still owns a live key binding is never deleted
   * (a replay must find it). SQL: `workhorse.prune_finished_jobs($1, $2)` per batch.
   */
  async pruneFinishedJobs(
    options: { olderThanMs?: number; limit?: number; maxBatches?: number } = {},
  ): Promise<PruneFinishedJobsResult> {
    return this.call(() => actions.pruneFinishedJobs(this.db, options));
  }

  /**
   * Appends one row to `workhorse.operator_audit` (for operator actions that are not purges, which
   * audit themselves): `action` such as `enqueue_test`, `target` such as `job:<id>` or `queue:billing`,
   * `result` any JSON object. `actor` must come from an authenticated session, never from a form.
   */
  async recordOperatorAction(entry: {
    actor: string;
    action: string;
    target: string;
    reason?: string | null;
    result: Record<string, unknown>;
  }): Promise<void> {
    return this.call(() => actions.recordOperatorAction(this.db, entry));
  }

  /**
   * Deletes expired bindings, oldest first, `limit` per statement (1..100,000, default 1,000) with
   * `SKIP LOCKED`, until none are left or `maxBatches` (default: no limit) ran. Each batch is its own short statement: no long locks.
   * A debounce binding whose job has not started yet is kept past its window: it is what answers
   * `non_replaceable` / `window_elapsed_pending` instead of a second job (docs/decisions.md).
   * Returns how many were deleted.
   */
  async pruneExpiredBindings(options: { limit?: number; maxBatches?: number } = {}): Promise<number> {
    return this.call(() => maintenance.pruneExpiredBindings(this.db, options));
  }

  /**
   * Deletes observations older than `olderThanMs` (integer ms, at least 60,000; default 7 days), in
   * batches of `limit` (1..100,000, default 5,000).
   */
  async pruneObservations(options: { olderThanMs?: number; limit?: number } = {}): Promise<number> {
    return this.call(() => maintenance.pruneObservations(this.db, options));
  }

  /**
   * Gives back active jobs whose lease lapsed (their worker crashed or stalled): each gets a
   * `lease_expired` event and returns to `ready` for a new attempt, or becomes `failed` when that was
   * its last attempt or its deadline passed. Running workers do this too; maintenance does it so a
   * job is not stuck `active` while no worker runs its queue. `limit` rows per statement (1..100,000,
   * default 1,000), `SKIP LOCKED`. SQL: `workhorse.reap_expired_leases(null, $1)`. Returns the count.
   */
  async reapExpiredLeases(options: { limit?: number } = {}): Promise<number> {
    return this.call(() => maintenance.reapExpiredLeases(this.db, options));
  }

  /**
   * One maintenance pass: expired bindings, observation retention, lapsed leases. Records each task
   * in `workhorse.maintenance_run` (what the console's maintenance panel shows).
   */
  async runMaintenance(
    options: { trigger?: "schedule" | "manual"; observationRetentionMs?: number; jobRetentionMs?: number } = {},
  ): Promise<MaintenanceResult> {
    return this.call(() => maintenance.runMaintenance(this.db, options));
  }
}

/**
 * The public operations (README, docs/enqueue.md): `Queue` over a pool and the `QueueOperations`
 * views over a caller's client or transaction. Enqueue calls validate (validate.ts), send one
 * statement (enqueue-sql.ts) and turn its rows into results or typed errors; operator actions and
 * maintenance each call one SQL function. What the views share is in shared.ts, row mapping in
 * rows.ts.
 */
import type pg from "pg";
import { v7 as uuidv7 } from "uuid";
import {
  batchValues,
  bucketIds,
  type ConflictDetail,
  distributedOneValues,
  ENQUEUE_BATCH_SQL,
  ENQUEUE_ONE_AT_SQL,
  type EnqueueRow,
  idBucket,
  oneRequestStatement,
  oneRequestValues,
} from "./enqueue-sql";
import {
  EnqueueIdempotencyConflictError,
  EnqueueValidationError,
  isConnectionLoss,
  isRetryableDbError,
  QueueClosedError,
  readSafely,
  SqlState,
  sqlStateOf,
  WorkhorseDatabaseError,
  WorkhorseError,
} from "./errors";
import { installationSql } from "./key-upgrade";
import {
  type InstallationRow,
  KeyRing,
  keyDigestOf,
  keyLengthOf,
  keyPreviewOf,
  legacyKeyHash,
  parseKeySecret,
} from "./keys";
import type { MaintenanceResult } from "./maintenance";
import * as maintenance from "./maintenance";
import type { Observation, ObservationRecorderOptions, ObservationStats } from "./observations";
import { answeredByServer, withPoolClient } from "./pool-client";
import { BINDING_COLUMNS, type BindingRow, bindingFromRow, type JobRow, jobFromRow } from "./rows";

export type { MaintenanceResult };

import * as actions from "./operator-actions";
import { clientExecutor, type Executor, type OperationsDb, Shared, WAKE_CHANNEL } from "./shared";
import type {
  BindingInfo,
  CancelResult,
  DeadLetterPage,
  DeadLetterQuery,
  EnqueueOptions,
  EnqueueRequest,
  EnqueueResult,
  Job,
  JobSelection,
  NonReplaceableReason,
  OperatorContext,
  PruneFinishedJobsResult,
  PurgeJobsResult,
  PurgeResult,
  RedriveRequest,
  RedriveResult,
  RunNowResult,
} from "./types";
import {
  LIMITS,
  maintenanceConfigSchema,
  type NormalizedRequest,
  normalizeRequest,
  parseJobId,
  parseMaintenanceOptions,
  parseRetryOption,
  parseScopedKey,
  sourceLabel,
  unknownOptionNames,
} from "./validate";

export interface QueueOptions {
  /** Caller-owned pool. `close()` never ends it. */
  pool: pg.Pool;
  /** Largest payload accepted, in bytes of JSON. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Default `source` label for observations. */
  source?: string;
  observations?: ObservationRecorderOptions;
  /**
   * Expired-binding cleanup and observation retention on a timer. Default every 5 minutes with 7 days
   * of observations; `false` turns the timer off (call `runMaintenance()` yourself).
   */
  maintenance?:
    | false
    | { intervalMs?: number; observationRetentionMs?: number; jobRetentionMs?: number; batchSize?: number };
  /** Send a wake-up NOTIFY after accepted jobs commit (coalesced, off the commit path). Default true. */
  notify?: boolean;
  /**
   * Keyed calls through the pool repeat themselves after connection loss or a retryable SQLSTATE
   * (`WorkhorseDatabaseError.retryable`): a keyed request is safe to repeat, so the caller sees one
   * answer. `attempts` is how many times a call is tried in all (1..20, default 12); the wait between
   * tries doubles from 25 ms up to `maxDelayMs` (0..60,000, default 3,000), with jitter: up to about 15 s in all, as long as a restart may take. Never for
   * keyless requests (or a batch holding one), never inside `withClient` (the caller owns that
   * transaction). `false` turns it off. See `retryStats()`.
   */
  retry?: false | { attempts?: number; maxDelayMs?: number };
  /**
   * The installation secret that keys the key hashes, kept outside the database: 64 hex characters
   * or a 32-byte Buffer. Default: `process.env.WORKHORSE_KEY_SECRET`, else the secret that the first
   * `migrate()` stored in `workhorse.installation`. Every process of one installation must use the
   * same secret, or keys stop replaying across them.
   */
  keySecret?: string | Buffer;
}

/** Every `QueueOptions` name: `new Queue` refuses any other (a misspelt option would otherwise do nothing). */
const QUEUE_OPTION_NAMES = {
  pool: true,
  maxPayloadBytes: true,
  source: true,
  observations: true,
  maintenance: true,
  notify: true,
  retry: true,
  keySecret: true,
} as const satisfies Record<keyof QueueOptions, true>;

const OBSERVATION_OPTION_NAMES = {
  maxBuffered: true,
  flushIntervalMs: true,
  batchSize: true,
} as const satisfies Record<keyof ObservationRecorderOptions, true>;

/** What the keyed-call retry did since the `Queue` was made (`queue.retryStats()`). */
export interface RetryStats {
  /** Calls that needed more than one try. */
  retriedCalls: number;
  /** Extra tries in all. */
  retries: number;
  /** Calls that still failed after their last try (the error was thrown). */
  exhausted: number;
  /** Tries whose answer was our own earlier try's job, committed before the connection broke: reported as `accepted`. */
  recoveredAccepts: number;
}

export { bucketedId, idBucket, keyBucket } from "./enqueue-sql";
export { jobFromRow } from "./rows";
export { WAKE_CHANNEL };

/** Whether these enqueue options ask for a keyed mode (so the installation key is needed). */
function namesAKey(options: unknown): boolean {
  if (options === null || typeof options !== "object") return false;
  return (
    readSafely(() => {
      const o = options as Record<string, unknown>;
      return o.idempotency !== undefined || o.debounce !== undefined || o.throttle !== undefined;
    }) !== false
  );
}

/** Parameters of workhorse.enqueue_one() for one normalised request. */

/**
 * The public operations (README, docs/enqueue.md), bound to an executor: the pool (`Queue`) or a caller's client
 * (`queue.withClient(client)`).
 */
export class QueueOperations {
  private readonly exec: Executor;

  /** @internal */
  constructor(
    protected readonly shared: Shared,
    private readonly rawExec: Executor,
    private readonly inCallerTransaction: boolean,
  ) {
    const executor = rawExec;
    this.exec = {
      query: <R extends pg.QueryResultRow>(config: pg.QueryConfig) => shared.guard(() => executor.query<R>(config)),
    };
  }

  /** What operator actions and maintenance (operator-actions.ts, maintenance.ts) run on. */
  protected get db(): OperationsDb {
    return {
      sql: (what, config) => this.sql(what, config),
      distributed: (what) => this.distributed(what),
      exec: this.exec,
      shared: this.shared,
      loadKeys: () => this.loadKeys(),
    };
  }

  /** Whether the schema has the distributed layout (read once per Queue, through this.sql). */
  private distributed(what: string): Promise<boolean> {
    return this.shared.distributedLayout((config) => this.sql(what, config));
  }

  /** One statement for the non-enqueue operations: driver errors become WorkhorseDatabaseError. */
  private async sql<R extends pg.QueryResultRow>(what: string, config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    try {
      return await this.exec.query<R>(config);
    } catch (err) {
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
    if (!this.shared.config.keys.loaded && namesAKey(options)) await this.loadKeys(true);
    const request = normalizeRequest(type, payload, options, this.shared.config);
    const [result] = await this.run([request]);
    return result as EnqueueResult;
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
    if (!Array.isArray(requests)) {
      throw new EnqueueValidationError([
        { option: "requests", rule: "must be an array of { type, payload, options }" },
      ]);
    }
    if (requests.length > LIMITS.maxBatch) {
      throw new EnqueueValidationError([
        {
          option: "requests",
          rule: `at most ${LIMITS.maxBatch} requests per batch (got ${requests.length}); split it`,
        },
      ]);
    }
    if (requests.length === 0) return [];
    if (!this.shared.config.keys.loaded && requests.some((r) => namesAKey(readSafely(() => r?.options)))) {
      // The batch is repeated on connection loss only when every request is keyed; so is this read.
      await this.loadKeys(requests.every((r) => namesAKey(readSafely(() => r?.options))));
    }
    const normalized: NormalizedRequest[] = [];
    let totalBytes = 0;
    for (let i = 0; i < requests.length; i++) {
      const option = `requests[${i}]`;
      let r: EnqueueRequest | undefined;
      let type: unknown;
      let payload: unknown;
      let options: unknown;
      try {
        r = requests[i];
        if (typeof r !== "object" || r === null) {
          throw new EnqueueValidationError([{ option, rule: "must be { type, payload, options }" }]);
        }
        const extra = Object.keys(r).filter((k) => k !== "type" && k !== "payload" && k !== "options");
        if (extra.length > 0) {
          throw new EnqueueValidationError([{ option: `${option}.${extra[0]}`, rule: "is not a known field" }]);
        }
        ({ type, payload, options } = r);
      } catch (err) {
        if (err instanceof EnqueueValidationError) throw err;
        throw new EnqueueValidationError([
          { option, rule: `could not be read: ${(err as Error)?.message ?? String(err)}` },
        ]);
      }
      const n = normalizeRequest(type, payload, options, this.shared.config, option);
      totalBytes += n.payloadJson.length;
      if (totalBytes > LIMITS.maxBatchPayloadBytes) {
        throw new EnqueueValidationError([
          {
            option: "requests",
            rule: `the payloads of one batch may total at most ${LIMITS.maxBatchPayloadBytes} bytes; split the batch`,
          },
        ]);
      }
      normalized.push(n);
    }
    return this.run(normalized);
  }

  private async run(requests: NormalizedRequest[]): Promise<EnqueueResult[]> {
    const ids = requests.map(() => uuidv7());
    if (!this.mayRetry() || !requests.every((r) => r.keyed !== null)) {
      return this.decide(requests, ids, await this.send(this.exec, requests, ids));
    }
    // Keyed requests are safe to repeat. The job ids proposed on the first try are proposed again,
    // and a retry says so (the functions' p_retry): when an earlier try committed but its answer was
    // lost, PostgreSQL recognises that try's job by its id, writes nothing, and answers what that try
    // decided, its own job as a replay of our own id: that request was accepted, and is reported so.
    return this.shared.guard(() =>
      this.repeating(async (attempt) =>
        this.decide(requests, ids, await this.send(this.rawExec, requests, ids, attempt > 1), attempt > 1),
      ),
    );
  }

  /** Keyed calls through the pool repeat themselves (QueueOptions.retry); never inside a caller's transaction. */
  private mayRetry(): boolean {
    const retry = this.shared.config.retry;
    return retry !== false && retry.attempts > 1 && !this.inCallerTransaction;
  }

  /** Runs `fn` until it succeeds, fails for good, or runs out of tries, waiting with jittered backoff between tries. */
  private async repeating<T>(fn: (attempt: number) => Promise<T>): Promise<T> {
    const retry = this.shared.config.retry as { attempts: number; maxDelayMs: number };
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn(attempt);
      } catch (err) {
        const cause = err instanceof WorkhorseDatabaseError ? err.cause : err;
        if (!isRetryableDbError(cause) || attempt >= retry.attempts) {
          if (attempt > 1) this.shared.retryCounts.exhausted++;
          throw err;
        }
        if (attempt === 1) this.shared.retryCounts.retriedCalls++;
        this.shared.retryCounts.retries++;
        const ceiling = Math.min(retry.maxDelayMs, 25 * 2 ** (attempt - 1));
        await new Promise((r) => setTimeout(r, ceiling / 2 + Math.random() * (ceiling / 2)));
      }
    }
  }

  /** One round trip: the scalar function for one request, the set-based one for a batch. */
  private async send(
    exec: Executor,
    requests: NormalizedRequest[],
    ids: string[],
    retry = false,
  ): Promise<EnqueueRow[]> {
    const notifyInside = this.inCallerTransaction && this.shared.config.notify;
    try {
      // Read inside the enqueue call (its executor, its error translation, every try alike).
      const distributed = await this.shared.distributedLayout((config) => exec.query(config));
      // Citus: a keyed job lives in its key's bucket; an unkeyed one in the random bucket its id has.
      if (distributed) bucketIds(requests, ids);
      // One request: the scalar hot path (a named statement, so its plan is cached per connection).
      // A batch: one set-based statement; left unnamed so each batch is planned for its own size.
      const one = requests.length === 1 ? (requests[0] as NormalizedRequest) : null;
      const res = one
        ? distributed
          ? await exec.query<EnqueueRow>({
              name: "workhorse_enqueue_one_at",
              text: ENQUEUE_ONE_AT_SQL,
              values: distributedOneValues(one, ids[0] as string, notifyInside, retry),
            })
          : await exec.query<EnqueueRow>({
              ...oneRequestStatement(one, retry),
              values: oneRequestValues(one, ids[0] as string, notifyInside, retry),
            })
        : await exec.query<EnqueueRow>({
            text: ENQUEUE_BATCH_SQL,
            values: batchValues(requests, ids, notifyInside, retry),
          });
      return res.rows;
    } catch (err) {
      throw this.translate(err, requests);
    }
  }

  /**
   * Results in input order; replays, coalesces and non-replaceable requests are observed (a
   * replacement is in the job's own history), accepted queues woken.
   */
  private decide(requests: NormalizedRequest[], ids: string[], rows: EnqueueRow[], retried = false): EnqueueResult[] {
    const results: EnqueueResult[] = new Array(rows.length);
    const acceptedQueues = new Set<string>();
    const now = new Date();
    for (const row of rows) {
      const req = requests[row.ordinal - 1] as NormalizedRequest;
      let outcome = row.outcome;
      if (retried && outcome !== "accepted" && row.job_id === ids[row.ordinal - 1]) {
        outcome = "accepted"; // an earlier try of this very call committed it
        this.shared.retryCounts.recoveredAccepts++;
      }
      if (outcome === "non_replaceable") {
        results[row.ordinal - 1] = {
          jobId: row.job_id,
          outcome,
          reason: row.reason as NonReplaceableReason,
        };
      } else {
        results[row.ordinal - 1] = { jobId: row.job_id, outcome };
      }
      if (outcome === "accepted") {
        acceptedQueues.add(req.queue);
      } else if (req.keyed && outcome !== "replaced") {
        const rejected = outcome === "non_replaceable";
        this.shared.recorder.record({
          at: now,
          outcome,
          reason: rejected ? row.reason : null,
          queue: req.queue,
          type: req.type,
          scope: req.keyed.key.scope,
          keyPreview: req.keyed.key.keyPreview,
          keyDigest: req.keyed.key.keyDigest,
          keyLength: req.keyed.key.keyLength,
          jobId: row.job_id,
          storedRequestDigest: rejected ? null : row.request_digest,
          rejectedRequestDigest: rejected ? row.request_digest : null,
          source: req.source,
        });
      }
    }
    if (acceptedQueues.size > 0 && !this.inCallerTransaction) this.shared.wake(acceptedQueues);
    return results;
  }

  /** Turns driver errors into typed ones; the one place SQLSTATEs are interpreted. */
  private translate(err: unknown, requests: NormalizedRequest[]): Error {
    if (err instanceof QueueClosedError) return err;
    const state = sqlStateOf(err);
    if (state === SqlState.idempotencyConflict) {
      const detail = JSON.parse((err as { detail?: string }).detail ?? "{}") as ConflictDetail;
      const req = requests[detail.ordinal - 1];
      if (req?.keyed) {
        const k = req.keyed.key;
        const conflict = new EnqueueIdempotencyConflictError(
          {
            scope: k.scope,
            keyPreview: k.keyPreview,
            keyDigest: k.keyDigest,
            keyLength: k.keyLength,
            existingJobId: detail.existingJobId,
            existingMode: detail.existingMode,
            conflictingFields: detail.conflictingFields,
            storedRequestDigest: detail.storedRequestDigest,
            rejectedRequestDigest: detail.rejectedRequestDigest,
            ordinal: detail.ordinal,
            ...(detail.payloadPaths ? { payloadPaths: detail.payloadPaths } : {}),
            ...(detail.payloadPathsTruncated ? { payloadPathsTruncated: true } : {}),
          },
          { cause: err },
        );
        this.observeConflict(conflict, req);
        return conflict;
      }
    }
    if (
      state === SqlState.checkViolation ||
      state === SqlState.untranslatableCharacter ||
      state === SqlState.invalidTextRepresentation
    ) {
      // Client validation mirrors the stored bounds; reaching here means input slipped past it
      // (or the clocks of this process and PostgreSQL disagree about "now").
      const e = err as { constraint?: string; dataType?: string; message?: string };
      if (e.constraint === "job_payload_depth") {
        return new EnqueueValidationError([
          {
            option: "payload",
            rule: `must be nested at most ${LIMITS.maxPayloadDepth} levels deep (objects and arrays); refused by PostgreSQL`,
          },
        ]);
      }
      if (e.constraint === "job_deadline_after_run_at") {
        return new EnqueueValidationError([
          { option: "options.deadline", rule: "must be after runAt (which defaults to PostgreSQL's now())" },
        ]);
      }
      return new EnqueueValidationError([
        { option: e.dataType ? `request (${e.dataType})` : "request", rule: `rejected by PostgreSQL: ${e.message}` },
      ]);
    }
    return new WorkhorseDatabaseError(`enqueue failed: ${(err as Error).message}`, err);
  }

  private observeConflict(e: EnqueueIdempotencyConflictError, req: NormalizedRequest): void {
    const o: Observation = {
      at: new Date(),
      outcome: "conflict",
      queue: req.queue,
      type: req.type,
      scope: e.scope,
      keyPreview: e.keyPreview,
      keyDigest: e.keyDigest,
      keyLength: e.keyLength,
      jobId: e.existingJobId,
      conflictingFields: e.conflictingFields,
      payloadPaths: e.payloadPaths ?? null,
      storedRequestDigest: e.storedRequestDigest,
      rejectedRequestDigest: e.rejectedRequestDigest,
      source: req.source,
    };
    this.shared.recorder.record(o);
  }

  /** The job with this id, or null. SQL: `select * from workhorse.job where id = $1`. */
  async getJob(jobId: string): Promise<Job | null> {
    const id = parseJobId(jobId);
    const { rows } = (await this.distributed("getJob"))
      ? // Citus: the job's shard from the bucket in its id; the redrives (anywhere) by a separate subplan.
        await this.sql<JobRow>("getJob", {
          name: "workhorse_get_job_at",
          text: `select j.*, coalesce((select array_agg(r.id order by r.id) from workhorse.job r
                                        where r.redriven_from = $1::uuid), '{}') as redrive_job_ids
                   from workhorse.job j where j.id = $1::uuid and j.bucket = $2::integer`,
          values: [id, idBucket(id)],
        })
      : await this.sql<JobRow>("getJob", {
          name: "workhorse_get_job",
          text: `select j.*, array(select r.id from workhorse.job r where r.redriven_from = j.id order by r.id) as redrive_job_ids
               from workhorse.job j where j.id = $1::uuid`,
          values: [id],
        });
    return rows[0] ? jobFromRow(rows[0]) : null;
  }

  /**
   * The binding of a scoped key, live or expired-awaiting-cleanup, or null when none exists (never
   * bound, released by a purge, or already cleaned up). The key is hashed here; only the hash is sent.
   */
  async findBinding(input: { key: string; scope?: string }): Promise<BindingInfo | null> {
    const { key, scope } = parseScopedKey(input);
    if (!this.shared.config.keys.loaded) await this.loadKeys();
    // Both hashes: a binding made before the HMAC upgrade is found too. The live one wins.
    const { rows } = await this.sql<BindingRow>("findBinding", {
      name: "workhorse_find_binding",
      text: `select ${BINDING_COLUMNS}
               from workhorse.key_binding b where b.scope = $1 and b.key_hash = any($2::bytea[])
              order by b.expires_at desc limit 1`,
      values: [scope, [this.shared.config.keys.hash(scope, key), legacyKeyHash(scope, key)]],
    });
    return rows[0] ? bindingFromRow(rows[0]) : null;
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
    const { key, scope } = parseScopedKey(input);
    if (!this.shared.config.keys.loaded) await this.loadKeys();
    return {
      scope,
      keyPreview: keyPreviewOf(key),
      keyDigest: keyDigestOf(this.shared.config.keys.hash(scope, key)),
      keyLength: keyLengthOf(key),
      legacyKeyDigest: keyDigestOf(legacyKeyHash(scope, key)),
    };
  }

  /** Reads the installation secret (unless one was supplied) and the legacy window, once per Queue. */
  private loadKeys(forKeyedCall = false): Promise<void> {
    return this.shared.config.keys.load(async (external): Promise<InstallationRow> => {
      const read = async () => {
        const { rows } = await this.sql<InstallationRow>("reading the installation key", {
          text: installationSql(external),
        });
        const row = rows[0];
        if (!row) throw new WorkhorseDatabaseError("workhorse.installation is empty: run migrate() first", null);
        return row;
      };
      // A keyed call that will repeat itself through an outage repeats this read too.
      return forKeyedCall && this.mayRetry() ? this.repeating(read) : read();
    });
  }

  /**
   * Purges one `ready` or `scheduled` job: tombstone (state `purged`, actor, time, reason), a `purged`
   * event, the bindings it owns released, one audit row. SQL: `workhorse.purge_jobs(...)`.
   * @throws PurgeNotAllowedError the job is active or terminal (nothing changed; the refusal is audited)
   * @throws JobNotFoundError no job has this id
   */
  async purge(target: { jobId: string }, context: OperatorContext): Promise<PurgeResult> {
    return actions.purge(this.db, target, context);
  }

  /** Purges every `ready` and `scheduled` job of one queue, as `purge` does for one job. */
  async purgeQueue(queue: string, context: OperatorContext): Promise<PurgeResult> {
    return actions.purgeQueue(this.db, queue, context);
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
    return actions.cancel(this.db, selection, context);
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
    return actions.purgeJobs(this.db, selection, context);
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
    return actions.runNow(this.db, selection, context);
  }

  /**
   * Redrives failed jobs (docs/operator-actions.md), one round trip. Each `failed` source gets a new `ready` job at
   * attempt 0 copying queue, type, payload, tags, concurrency key, retry policy, max attempts and
   * execution timeout (not the deadline, not checkpoints), linked both ways (`redrivenFrom`,
   * `redriveJobIds`); a live key binding of the source moves to the new job, so a replay of the
   * original keyed request returns the job that will run. Idempotent on (source job,
   * HMAC-SHA256 of `requestId` under the installation secret): the same request replays (`replayed`,
   * same `jobId`); the raw request id is never sent to PostgreSQL. `dryRun` answers `eligible` and
   * writes nothing. One audit row (`redrive`) unless `dryRun`.
   * SQL: `workhorse.redrive_jobs($1::uuid[], $2::uuid[], $3::bytea, $4, $5, $6)`.
   * @returns `{ results: [{ sourceJobId, status, jobId? }] }` in input order (duplicates once);
   *   status `redriven` | `replayed` | `eligible` | `not_found` | `not_failed`
   * @throws EnqueueValidationError bad input (1..1,000 ids; `requestId` 1..512 UTF-8 bytes;
   *   `requestedBy` 1..200 and `reason` 1..1,000 characters)
   * @throws RedriveIdempotencyConflictError `requestId` was used for a source with another requester
   *   or reason (nothing written)
   */
  async redrive(request: RedriveRequest): Promise<RedriveResult> {
    return actions.redrive(this.db, request);
  }

  /**
   * Failed jobs (dead letters), newest `finishedAt` first, keyset-paged on (finished_at, id).
   * Filters: `queue`, `type`, `errorName` (`lastError.name`), `finishedAfter` (exclusive),
   * `finishedBefore` (exclusive); `limit` 1..500 (default 50). Pass `nextCursor` back as `cursor` for
   * the next page; it is null on the last one. SQL: one select on the `job_dead_letter_idx` index.
   * @throws EnqueueValidationError bad filters or a cursor that is not a `nextCursor`
   */
  async listDeadLetters(query: DeadLetterQuery = {}): Promise<DeadLetterPage> {
    return actions.listDeadLetters(this.db, query);
  }

  /**
   * Pauses a queue: workers claim nothing from it (claim_jobs skips it from the next claim on; every
   * worker sees it within one poll interval). Jobs already running finish. One audit row
   * (`pause_queue`). SQL: `workhorse.pause_queue($1, $2, $3)`.
   * @returns `{ paused }`: true when it was running, false when it was already paused
   * @throws EnqueueValidationError bad queue name or context
   */
  async pauseQueue(queue: string, context: OperatorContext): Promise<{ paused: boolean }> {
    return actions.pauseQueue(this.db, queue, context);
  }

  /**
   * Resumes a paused queue (and wakes its workers). One audit row (`resume_queue`).
   * SQL: `workhorse.resume_queue($1, $2, $3)`.
   * @returns `{ resumed }`: true when it was paused
   */
  async resumeQueue(queue: string, context: OperatorContext): Promise<{ resumed: boolean }> {
    return actions.resumeQueue(this.db, queue, context);
  }

  /** Paused queues with who paused them, when and why (name order). */
  async listPausedQueues(): Promise<Array<{ queue: string; pausedAt: Date; pausedBy: string; reason: string }>> {
    return actions.listPausedQueues(this.db);
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
    return actions.pruneFinishedJobs(this.db, options);
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
    return actions.recordOperatorAction(this.db, entry);
  }

  /**
   * Deletes expired bindings, oldest first, `limit` per statement (1..100,000, default 1,000) with
   * `SKIP LOCKED`, until none are left or `maxBatches` (default: no limit) ran. Each batch is its own short statement: no long locks.
   * A debounce binding whose job has not started yet is kept past its window: it is what answers
   * `non_replaceable` / `window_elapsed_pending` instead of a second job (docs/decisions.md).
   * Returns how many were deleted.
   */
  async pruneExpiredBindings(options: { limit?: number; maxBatches?: number } = {}): Promise<number> {
    return maintenance.pruneExpiredBindings(this.db, options);
  }

  /**
   * Deletes observations older than `olderThanMs` (integer ms, at least 60,000; default 7 days), in
   * batches of `limit` (1..100,000, default 5,000).
   */
  async pruneObservations(options: { olderThanMs?: number; limit?: number } = {}): Promise<number> {
    return maintenance.pruneObservations(this.db, options);
  }

  /**
   * Gives back active jobs whose lease lapsed (their worker crashed or stalled): each gets a
   * `lease_expired` event and returns to `ready` for a new attempt, or becomes `failed` when that was
   * its last attempt or its deadline passed. Running workers do this too; maintenance does it so a
   * job is not stuck `active` while no worker runs its queue. `limit` rows per statement (1..100,000,
   * default 1,000), `SKIP LOCKED`. SQL: `workhorse.reap_expired_leases(null, $1)`. Returns the count.
   */
  async reapExpiredLeases(options: { limit?: number } = {}): Promise<number> {
    return maintenance.reapExpiredLeases(this.db, options);
  }

  /**
   * One maintenance pass: expired bindings, observation retention, lapsed leases. Records each task
   * in `workhorse.maintenance_run` (what the console's maintenance panel shows).
   */
  async runMaintenance(
    options: { trigger?: "schedule" | "manual"; observationRetentionMs?: number; jobRetentionMs?: number } = {},
  ): Promise<MaintenanceResult> {
    return maintenance.runMaintenance(this.db, options);
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
    if (!options || typeof options.pool?.connect !== "function") {
      throw new EnqueueValidationError([{ option: "pool", rule: "must be a pg.Pool" }]);
    }
    const unknown = [
      ...unknownOptionNames(options, QUEUE_OPTION_NAMES),
      ...(options.observations && typeof options.observations === "object"
        ? unknownOptionNames(options.observations, OBSERVATION_OPTION_NAMES).map((n) => `observations.${n}`)
        : []),
    ];
    if (unknown.length > 0) {
      throw new EnqueueValidationError(unknown.map((option) => ({ option, rule: "is not a known option" })));
    }
    const maxPayloadBytes = options.maxPayloadBytes ?? LIMITS.defaultPayloadBytes;
    if (!Number.isInteger(maxPayloadBytes) || maxPayloadBytes < 2 || maxPayloadBytes > 256 * 1024 * 1024) {
      throw new EnqueueValidationError([{ option: "maxPayloadBytes", rule: "must be an integer 2..268435456" }]);
    }
    const maintenance =
      options.maintenance === false
        ? false
        : parseMaintenanceOptions(maintenanceConfigSchema, options.maintenance, "maintenance");
    const retry = parseRetryOption(options.retry);
    const source = options.source === undefined ? null : sourceLabel.safeParse(options.source);
    const outside = options.keySecret ?? process.env.WORKHORSE_KEY_SECRET;
    const keySecret = outside === undefined || outside === "" ? null : parseKeySecret(outside);
    if (outside !== undefined && outside !== "" && !keySecret) {
      throw new EnqueueValidationError([
        {
          option: options.keySecret === undefined ? "WORKHORSE_KEY_SECRET" : "keySecret",
          rule: "must be 64 hexadecimal characters (32 bytes), e.g. from `openssl rand -hex 32`",
        },
      ]);
    }
    if (source && !source.success) {
      throw new EnqueueValidationError([{ option: "source", rule: source.error.issues[0]?.message ?? "is invalid" }]);
    }
    const shared = new Shared(
      options.pool,
      {
        maxPayloadBytes,
        source: source ? source.data : null,
        notify: options.notify ?? true,
        keys: new KeyRing(keySecret),
        maintenance,
        retry,
      },
      options.observations,
    );
    super(shared, shared.poolExec, false);
    shared.startMaintenance(() => this.runMaintenance({ trigger: "schedule" }));
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
    return new QueueOperations(this.shared, clientExecutor(client), true);
  }

  /**
   * Runs `fn` in one transaction on a client from the pool: everything `tx` writes (jobs, bindings,
   * events, audit rows through `tx.recordOperatorAction`) commits together when `fn` resolves, and
   * rolls back when it throws (the error is rethrown). SQL: `begin` / `commit` / `rollback` around
   * `fn`'s statements. Keyed calls inside are not retried: the transaction is yours.
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
    if (this.shared.closed) throw new QueueClosedError();
    try {
      return await withPoolClient(
        this.shared.pool,
        async (client) => {
          await client.query("begin");
          try {
            const result = await fn(new QueueOperations(this.shared, clientExecutor(client), true));
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
    return { ...this.shared.retryCounts };
  }

  /** Observation recorder counters: recorded, written, dropped, buffered. */
  observationStats(): ObservationStats {
    return this.shared.recorder.stats();
  }

  /** Writes buffered observations now. */
  flushObservations(): Promise<void> {
    return this.shared.recorder.flush();
  }

  /** Flushes observations and pending wake-ups, stops timers. Never ends the caller's pool. */
  async close(): Promise<void> {
    await this.shared.close();
  }
}

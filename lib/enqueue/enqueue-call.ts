/**
 * One enqueue call from normalised requests to results: send the statement (store/core/enqueue.ts), repeat
 * it when keyed and the connection broke, report what PostgreSQL decided as `EnqueueResult`s (with
 * observations and wake-ups), and translate its SQLSTATEs into typed errors.
 */
import type pg from "pg";
import { v7 as uuidv7 } from "uuid";
import { type ConflictDetail, type EnqueueRow, enqueueRows } from "../store/core/enqueue";
import { selectInstallation } from "../store/core/key-upgrade";
import { type Sql, sqlOver } from "../store/layout";
import type { NormalizedRequest } from "./enqueue-input";
import {
  EnqueueIdempotencyConflictError,
  EnqueueValidationError,
  isRetryableDbError,
  QueueClosedError,
  SqlState,
  sqlStateOf,
  WorkhorseDatabaseError,
} from "./errors";
import type { InstallationRow } from "./keys";
import { LIMITS } from "./limits";
import { type HeldObservations, writeHeldObservations } from "./observations";
import type { QueueContext } from "./queue-context";
import { traceparentOf } from "./telemetry";
import type { EnqueueResult, NonReplaceableReason, Observation } from "./types";

/**
 * One view of a queue: the pool's (`Queue`), a caller's client (`withClient`) or a transaction's `tx`.
 * What enqueue calls, lookups, operator actions and maintenance run on.
 */
export interface QueueView {
  context: QueueContext;
  /** Runs the call's statements (the call itself is counted in close()'s accounting, queue-context.ts `admit`). */
  exec: Sql;
  /** Inside a caller's transaction: no repeats, and the wake-up NOTIFY is sent inside it. */
  inCallerTransaction: boolean;
  /**
   * Where the view's observations go: null, to the observation log at once (the pool's calls);
   * otherwise held here, for work that may yet roll back: `transaction` (until "transaction") hands them to
   * the log once it committed, `withClient` (until "call") writes them through the caller's client
   * after each enqueue call (observations.ts `writeHeldObservations`), so they commit or roll back
   * with the caller's transaction.
   */
  held: HeldObservations | null;
}

/** An observation of `view`'s work: logged now, or held until the work is known to commit. */
function observe(view: QueueView, o: Observation): void {
  if (view.held) view.held.observations.push(o);
  else view.context.recorder.record(o);
}

/** Keyed calls through the pool repeat themselves (QueueOptions.retry); never inside a caller's transaction. */
export function mayRetry(view: QueueView): boolean {
  const retry = view.context.config.retry;
  return retry !== false && retry.attempts > 1 && !view.inCallerTransaction;
}

/**
 * Runs `fn` until it succeeds, fails for good, or runs out of tries, waiting with jittered backoff between tries.
 * Exhausted (`retryStats().exhausted`, `workhorse.enqueue.retries_exhausted`) is a retried call whose last
 * try still failed retryably; a later try that fails for good (a conflict, a validation refusal, any
 * error not retryable) is that call's answer, as it would have been on the first try.
 */
export async function repeating<T>(context: QueueContext, fn: (attempt: number) => Promise<T>): Promise<T> {
  const retry = context.config.retry as { attempts: number; maxDelayMs: number };
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      const cause = err instanceof WorkhorseDatabaseError ? err.cause : err;
      const retryable = isRetryableDbError(cause);
      if (!retryable || attempt >= retry.attempts) {
        if (retryable && attempt > 1) {
          context.retryCounts.exhausted++;
          context.telemetry.retriesExhausted();
        }
        throw err;
      }
      if (attempt === 1) context.retryCounts.retriedCalls++;
      context.retryCounts.retries++;
      context.telemetry.retried();
      const ceiling = Math.min(retry.maxDelayMs, 25 * 2 ** (attempt - 1));
      await new Promise((r) => setTimeout(r, ceiling / 2 + Math.random() * (ceiling / 2)));
    }
  }
}

/** One statement for the non-enqueue operations: driver errors become WorkhorseDatabaseError. */
async function statement<R extends pg.QueryResultRow>(
  view: QueueView,
  what: string,
  config: pg.QueryConfig,
): Promise<pg.QueryResult<R>> {
  try {
    return await view.exec.query<R>(config);
  } catch (err) {
    // Only the maintenance timer's statements are refused one by one (queue-context.ts).
    if (err instanceof QueueClosedError) throw err;
    throw new WorkhorseDatabaseError(`${what} failed: ${(err as Error)?.message ?? String(err)}`, err);
  }
}

/** The view's statements for a store function, driver errors becoming `WorkhorseDatabaseError` naming `what`; the layout read once per pool. */
export function storeOf(view: QueueView, what: string): Sql {
  return sqlOver(view.context.pool, { query: (config) => statement(view, what, config) });
}

/** The same over the view's own statements (driver errors untouched), for calls that translate SQLSTATEs themselves. */
export function rawStoreOf(view: QueueView): Sql {
  return sqlOver(view.context.pool, view.exec);
}

/**
 * Reads the installation secret (unless one was supplied) and the legacy window, once per Queue.
 * SQL: `select ... from workhorse.installation` (store/core/key-upgrade.ts).
 */
export function loadKeys(view: QueueView, forKeyedCall = false): Promise<void> {
  return view.context.config.keys.load(async (external): Promise<InstallationRow> => {
    const read = async () => {
      const row = await selectInstallation(storeOf(view, "reading the installation key"), external);
      if (!row) throw new WorkhorseDatabaseError("workhorse.installation is empty: run migrate() first", null);
      return row;
    };
    // A keyed call that will repeat itself through an outage repeats this read too.
    return forKeyedCall && mayRetry(view) ? repeating(view.context, read) : read();
  });
}

/**
 * Enqueues normalised requests in one round trip (repeated when all are keyed) and returns their
 * results in input order, inside the call's producer span, with its metrics (telemetry.ts).
 */
export async function runEnqueue(view: QueueView, requests: NormalizedRequest[]): Promise<EnqueueResult[]> {
  const held = view.held?.until === "call" ? view.held : null;
  if (!held) return traced(view, requests, (trace) => decide(view, requests, trace));
  try {
    return await traced(view, requests, (trace) => decide(view, requests, trace));
  } finally {
    await writeHeldObservations(view.exec, held, view.context.recorder);
  }
}

/**
 * Runs `fn` (a call's decision) inside the call's producer span and records its metrics; `fn` gets
 * the span's traceparent (null when not sampled), which accepted jobs store.
 */
export async function traced(
  view: QueueView,
  requests: NormalizedRequest[],
  fn: (trace: string | null) => Promise<EnqueueResult[]>,
): Promise<EnqueueResult[]> {
  const telemetry = view.context.telemetry;
  const startedAt = performance.now();
  const span = telemetry.startSend(requests);
  try {
    const results = await fn(traceparentOf(span));
    telemetry.sendSucceeded(span, startedAt, requests, results);
    return results;
  } catch (err) {
    telemetry.sendFailed(span, startedAt, requests, err);
    throw err;
  }
}

/** The decision itself; `trace`: the producer span's traceparent, stored with accepted jobs (or null). */
export async function decide(
  view: QueueView,
  requests: NormalizedRequest[],
  trace: string | null,
): Promise<EnqueueResult[]> {
  const ids = requests.map(() => uuidv7());
  if (!mayRetry(view) || !requests.every((r) => r.keyed !== null)) {
    return reportResults(view, requests, ids, await send(view, view.exec, requests, ids, false, trace));
  }
  // Keyed requests are safe to repeat. The job ids proposed on the first try are proposed again,
  // and a retry says so (the functions' p_retry): when an earlier try committed but its answer was
  // lost, PostgreSQL recognises that try's job by its id, writes nothing, and answers what that try
  // decided, its own job as a replay of our own id: that request was accepted, and is reported so.
  return repeating(view.context, async (attempt) =>
    reportResults(view, requests, ids, await send(view, view.exec, requests, ids, attempt > 1, trace), attempt > 1),
  );
}

/**
 * Goes on with one keyed request whose first try failed with `firstError` (retryable) inside a
 * statement it shared with other calls: the same repeats, waits and accounting as if that try had
 * been its own, its job id proposed again with the retry flag.
 */
export function retryAlone(
  view: QueueView,
  request: NormalizedRequest,
  id: string,
  firstError: Error,
): Promise<EnqueueResult> {
  return repeating(view.context, async (attempt) => {
    if (attempt === 1) throw firstError;
    const rows = await send(view, view.exec, [request], [id], true, null);
    return reportResults(view, [request], [id], rows, true)[0] as EnqueueResult;
  });
}

/** One round trip: the scalar function for one request, the set-based one for a batch. */
export async function send(...args: Parameters<typeof sendRaw>): Promise<EnqueueRow[]> {
  try {
    return await sendRaw(...args);
  } catch (err) {
    const [view, , requests] = args;
    throw translate(view, err, requests);
  }
}

/** `send` without the error translation: the driver's error as it came (coalesce.ts reads it first). */
export function sendRaw(
  view: QueueView,
  exec: Sql,
  requests: NormalizedRequest[],
  ids: string[],
  retry: boolean,
  trace: string | null,
): Promise<EnqueueRow[]> {
  const notifyInside = view.inCallerTransaction && view.context.config.notify;
  // The layout is read inside the enqueue call (its executor, its error handling, every try alike).
  return enqueueRows(sqlOver(view.context.pool, exec), requests, ids, notifyInside, retry, trace);
}

/**
 * PostgreSQL's decisions as results in input order, with what operators may see of each key;
 * replays, coalesces and non-replaceable requests are observed (a replacement is in the job's own
 * history), accepted queues woken.
 */
export function reportResults(
  view: QueueView,
  requests: NormalizedRequest[],
  ids: string[],
  rows: EnqueueRow[],
  retried = false,
): EnqueueResult[] {
  const { context } = view;
  const results: EnqueueResult[] = new Array(rows.length);
  const acceptedQueues = new Set<string>();
  const now = new Date();
  for (const row of rows) {
    const req = requests[row.ordinal - 1] as NormalizedRequest;
    let outcome = row.outcome;
    if (retried && outcome !== "accepted" && row.job_id === ids[row.ordinal - 1]) {
      outcome = "accepted"; // an earlier try of this very call committed it
      context.retryCounts.recoveredAccepts++;
      context.telemetry.recoveredAccept(req.queue);
    }
    const k = req.keyed?.key;
    const key = k ? { keyPreview: k.keyPreview, keyDigest: k.keyDigest, keyLength: k.keyLength } : null;
    results[row.ordinal - 1] =
      outcome === "non_replaceable"
        ? { jobId: row.job_id, outcome, reason: row.reason as NonReplaceableReason, ...key }
        : { jobId: row.job_id, outcome, ...key };
    if (outcome === "accepted") {
      acceptedQueues.add(req.queue);
      view.held?.accepted.add(row.job_id);
    } else if (k && key && outcome !== "replaced") {
      const rejected = outcome === "non_replaceable";
      observe(view, {
        at: now,
        outcome,
        reason: rejected ? row.reason : null,
        queue: req.queue,
        type: req.type,
        scope: k.scope,
        ...key,
        jobId: row.job_id,
        storedRequestDigest: rejected ? null : row.request_digest,
        rejectedRequestDigest: rejected ? row.request_digest : null,
        source: req.source,
      });
    }
  }
  if (acceptedQueues.size > 0 && !view.inCallerTransaction) context.wake(acceptedQueues);
  return results;
}

/** Turns driver errors into typed ones; the one place SQLSTATEs are interpreted. */
export function translate(view: QueueView, err: unknown, requests: NormalizedRequest[], ordinalShown?: number): Error {
  if (err instanceof QueueClosedError) return err;
  const state = sqlStateOf(err);
  if (state === SqlState.idempotencyConflict) {
    const detail = JSON.parse((err as { detail?: string }).detail ?? "{}") as ConflictDetail;
    const req = requests[detail.ordinal - 1];
    if (req?.keyed) {
      const { scope, keyPreview, keyDigest, keyLength } = req.keyed.key;
      const shown = { scope, keyPreview, keyDigest, keyLength };
      const conflict = new EnqueueIdempotencyConflictError(
        // The constructor keeps payloadPaths and payloadPathsTruncated only when set.
        {
          ...shown,
          ...detail,
          ordinal: ordinalShown ?? detail.ordinal,
          payloadPaths: detail.payloadPaths ?? undefined,
        },
        { cause: err },
      );
      observe(view, {
        at: new Date(),
        outcome: "conflict",
        queue: req.queue,
        type: req.type,
        ...shown,
        jobId: detail.existingJobId,
        conflictingFields: detail.conflictingFields,
        payloadPaths: conflict.payloadPaths ?? null,
        storedRequestDigest: detail.storedRequestDigest,
        rejectedRequestDigest: detail.rejectedRequestDigest,
        source: req.source,
      });
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

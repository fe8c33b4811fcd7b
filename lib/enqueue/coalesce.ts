/**
 * Smart batching (docs/enqueue.md "Concurrent calls share a statement"): single enqueue calls on
 * one `Queue` that overlap go to PostgreSQL together. At most `maxStatements` enqueue statements of
 * this queue are in flight; a call that arrives while they are all busy waits, and the next
 * statement to leave carries every waiting call (one `enqueue_batch`). No timer: a lone call is sent
 * at once, exactly as without coalescing.
 *
 * Each call gets what it would have got alone. A shared statement can fail because of the calls
 * sharing it (it locks all their keys, in a fixed key order, so it may hold one key while waiting
 * on another that none of them alone would have waited for: a deadlock, a lock or statement
 * timeout, a serialization failure; or a neighbour's request is refused), so no call takes a shared
 * statement's failure as its own answer unless the failure names it:
 * - its own result (the batch answers per request);
 * - its own conflict: a conflict rolls the shared statement back; the call it names is answered with
 *   its `EnqueueIdempotencyConflictError` (ordinal 1, as a single call's), the others wait again and
 *   go with the next statement;
 * - any other error PostgreSQL answered (40P01, 40001, 55P03, 57014, a check violation, ...): the
 *   statement rolled back and wrote nothing, so each of its calls is sent again, alone, and gets its
 *   own answer (input is checked before a call waits, so nothing invalid is coalesced);
 * - no answer (the connection broke, or the session ended: the statement may have committed before
 *   its reply was lost): a keyed call repeats alone with the job id it proposed (so such a commit
 *   is recognised), a keyless call gets the retryable error, as alone.
 * Calls on one scope and key are decided in the order they were made: a call waits while an earlier
 * call on its key is in a statement in flight (or repeating alone) or still waiting, so it sees that
 * call's decision; a rolled-back statement's calls wait again first in line. The payloads of one statement total at most
 * `LIMITS.maxBatchPayloadBytes`, as an `enqueueMany` batch's. Calls on `withClient` / `transaction`
 * never coalesce.
 */
import { v7 as uuidv7 } from "uuid";
import {
  decide,
  mayRetry,
  type QueueView,
  reportResults,
  retryAlone,
  sendRaw,
  traced,
  translate,
} from "./enqueue-call";
import type { NormalizedRequest } from "./enqueue-input";
import { isConnectionLoss, refusedByServer, SqlState, sqlStateOf } from "./errors";
import { LIMITS } from "./limits";
import type { EnqueueResult } from "./types";

/** `QueueOptions.coalesce`, checked and defaulted. */
export interface CoalesceConfig {
  /** Enqueue statements of one Queue in flight at once (1..100). */
  maxStatements: number;
  /** Calls one statement carries at most (2..1,000). */
  maxCalls: number;
}

/** What coalescing did since the `Queue` was made (`queue.coalesceStats()`). */
export interface CoalesceStats {
  /** Single calls that went through the coalescer. */
  calls: number;
  /** Statements sent for them (a call sent again after its statement failed counts again). */
  statements: number;
  /** Statements that carried more than one call. */
  sharedStatements: number;
  /** The most calls one statement carried. */
  largestStatement: number;
}

interface Waiting {
  request: NormalizedRequest;
  /** scope and key hash of a keyed request: never two of one key in a statement. */
  key: string | null;
  /** Must be sent alone: its shared statement failed as a whole, or it is traced (below). */
  alone: boolean;
  /**
   * The call's traceparent when its producer span is sampled: stored with its job, so the call goes
   * alone (a shared statement carries no per-request trace context).
   */
  trace: string | null;
  resolve(result: EnqueueResult): void;
  reject(error: unknown): void;
}

export class Coalescer {
  private waiting: Waiting[] = [];
  private inFlight = 0;
  /** Keys of calls sent and not yet answered (a call repeating alone after a lost reply included), with their counts. */
  private readonly keysInFlight = new Map<string, number>();
  readonly stats: CoalesceStats = { calls: 0, statements: 0, sharedStatements: 0, largestStatement: 0 };

  constructor(
    private readonly view: QueueView,
    private readonly config: CoalesceConfig,
  ) {}

  /** Enqueues one normalised request, alone or with the calls waiting beside it. */
  submit(request: NormalizedRequest): Promise<EnqueueResult> {
    // The call is counted in close()'s accounting by its caller (queue.ts), so close()
    // waits for it while it waits for its statement. Its producer span and metrics are its own,
    // whichever statement carries it.
    return traced(this.view, [request], (trace) =>
      new Promise<EnqueueResult>((resolve, reject) => {
        this.stats.calls++;
        const k = request.keyed?.key;
        const key = k ? `${k.scope}\u0000${k.keyHash.toString("hex")}` : null;
        this.waiting.push({ request, key, alone: trace !== null, trace, resolve, reject });
        this.pump();
      }).then((r) => [r]),
    ).then(([result]) => result as EnqueueResult);
  }

  /** Sends statements while fewer than maxStatements are in flight and calls wait that may go. */
  private pump(): void {
    while (this.inFlight < this.config.maxStatements && this.waiting.length > 0) {
      const group = this.take();
      if (group.length === 0) return; // every waiting call waits for an earlier call on its key
      for (const w of group) {
        if (w.key !== null) this.keysInFlight.set(w.key, (this.keysInFlight.get(w.key) ?? 0) + 1);
      }
      this.inFlight++;
      this.stats.statements++;
      if (group.length > 1) this.stats.sharedStatements++;
      if (group.length > this.stats.largestStatement) this.stats.largestStatement = group.length;
      void this.send(group).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /**
   * The next statement's calls, in arrival order: up to maxCalls and `LIMITS.maxBatchPayloadBytes`
   * of payloads; an alone-marked call by itself. A call on a key goes only when no earlier call on
   * that key is in flight or still waiting (so calls on one key are decided in the order they were
   * made); empty when every waiting call waits for one.
   */
  private take(): Waiting[] {
    const group: Waiting[] = [];
    const rest: Waiting[] = [];
    // Keys taken into this statement or held back: a later call on one of them waits too.
    const blocked = new Set<string>();
    let bytes = 0;
    let closed = false;
    for (const w of this.waiting) {
      const free = w.key === null || (!blocked.has(w.key) && !this.keysInFlight.has(w.key));
      const size = w.request.payloadJson.length;
      const fits =
        !closed &&
        free &&
        (w.alone
          ? group.length === 0
          : group.length < this.config.maxCalls && (group.length === 0 || bytes + size <= LIMITS.maxBatchPayloadBytes));
      if (fits) {
        group.push(w);
        bytes += size;
        if (w.alone) closed = true;
      } else {
        rest.push(w);
      }
      if (w.key !== null) blocked.add(w.key);
    }
    this.waiting = rest;
    return group;
  }

  /** A call is answered, or waits again: its key no longer holds later calls on it back. */
  private release(w: Waiting): void {
    if (w.key === null) return;
    const n = (this.keysInFlight.get(w.key) ?? 1) - 1;
    if (n > 0) this.keysInFlight.set(w.key, n);
    else this.keysInFlight.delete(w.key);
  }

  private async send(group: Waiting[]): Promise<void> {
    if (group.length === 1) {
      const only = group[0] as Waiting;
      await decide(this.view, [only.request], only.trace).then(
        ([result]) => {
          this.release(only);
          only.resolve(result as EnqueueResult);
        },
        (err: unknown) => {
          this.release(only);
          only.reject(err);
        },
      );
      return;
    }
    const requests = group.map((w) => w.request);
    const ids = requests.map(() => uuidv7());
    try {
      const rows = await sendRaw(this.view, this.view.exec, requests, ids, false, null);
      const results = reportResults(this.view, requests, ids, rows);
      group.forEach((w, i) => {
        this.release(w);
        w.resolve(results[i] as EnqueueResult);
      });
    } catch (err) {
      this.failed(group, requests, ids, err);
    }
  }

  /** A shared statement failed: nothing of it was written (or, after a lost reply, maybe all of it). */
  private failed(group: Waiting[], requests: NormalizedRequest[], ids: string[], err: unknown): void {
    // Calls that wait again go first in line, ahead of later calls on their keys; the others are answered.
    for (const w of group) this.release(w);
    if (sqlStateOf(err) === SqlState.idempotencyConflict) {
      // The call the conflict names gets it as its own; the rest were rolled back and wait again, first in line.
      const ordinal = conflictOrdinal(err);
      const named = ordinal !== null ? group[ordinal - 1] : undefined;
      if (named) {
        named.reject(translate(this.view, err, requests, 1));
        this.waiting.unshift(...group.filter((w) => w !== named));
        return;
      }
    }
    if (refusedByServer(err) || (sqlStateOf(err) === undefined && !isConnectionLoss(err))) {
      // PostgreSQL refused the statement as a whole (it rolled back), or it failed in this process
      // before it was sent: maybe because of the calls sharing it, so none of them takes the error
      // as its own. Each goes again, alone, and gets its own answer.
      this.waiting.unshift(...group.map((w) => ({ ...w, alone: true })));
      return;
    }
    // No answer: the connection broke or the session ended, and the statement may have committed
    // before its reply was lost. A keyed call repeats alone with its own proposed id and finds that
    // commit if there was one; a keyless call cannot know, as alone.
    const error = translate(this.view, err, requests);
    group.forEach((w, i) => {
      if (w.request.keyed && mayRetry(this.view)) {
        // It stays in flight until its repeats end: a later call on its key waits for that answer.
        const key = w.key as string;
        this.keysInFlight.set(key, (this.keysInFlight.get(key) ?? 0) + 1);
        const settle = () => {
          this.release(w);
          this.pump();
        };
        retryAlone(this.view, w.request, ids[i] as string, error).then(
          (r) => {
            settle();
            w.resolve(r);
          },
          (e: unknown) => {
            settle();
            w.reject(e);
          },
        );
      } else {
        w.reject(error);
      }
    });
  }
}

function conflictOrdinal(err: unknown): number | null {
  try {
    const detail = JSON.parse((err as { detail?: string }).detail ?? "{}") as { ordinal?: unknown };
    return typeof detail.ordinal === "number" ? detail.ordinal : null;
  } catch {
    return null;
  }
}

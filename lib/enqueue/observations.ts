import type pg from "pg";
import { insertObservations, insertObservationsInTransaction } from "../store/core/observations";
import type { Sql } from "../store/layout";
import type { ObservationRow } from "../store/rows";
import { OneShotTimer } from "./one-shot-timer";
import type { Observation } from "./types";

export type { Observation, StoredObservation } from "./types";

export interface ObservationStats {
  /** Handed to the recorder. */
  recorded: number;
  /** Committed to workhorse.enqueue_observation. */
  written: number;
  /** Lost: buffer full, recorder closed, or a failed write. */
  dropped: number;
  /** Waiting in the buffer. */
  buffered: number;
  /** INSERT statements issued (a batch of up to `batchSize` rows each). */
  batches: number;
}

export interface ObservationRecorderOptions {
  /** Observations held at most; beyond it new ones are dropped and counted. Default 10,000. */
  maxBuffered?: number;
  /** Longest an observation waits before a write, in ms. Default 200. */
  flushIntervalMs?: number;
  /** Rows per INSERT. Default 500. */
  batchSize?: number;
}

/**
 * Appends observations outside the enqueue transaction. `record` never blocks, throws or waits on
 * the database: it pushes into a bounded buffer that a timer writes in batches (one INSERT per batch
 * over `jsonb_to_recordset`). Anything that cannot be kept is counted in `stats().dropped`.
 */
export class ObservationRecorder {
  private buffer: Observation[] = [];
  private readonly timer = new OneShotTimer(() => void this.writeBuffered());
  private flushing: Promise<void> | null = null;
  private closed = false;
  private counts = { recorded: 0, written: 0, dropped: 0, batches: 0 };
  private readonly maxBuffered: number;
  private readonly flushIntervalMs: number;
  private readonly batchSize: number;

  constructor(
    private readonly pool: pg.Pool,
    options: ObservationRecorderOptions = {},
  ) {
    this.maxBuffered = options.maxBuffered ?? 10_000;
    this.flushIntervalMs = options.flushIntervalMs ?? 200;
    this.batchSize = options.batchSize ?? 500;
  }

  record(o: Observation): void {
    this.counts.recorded++;
    if (this.closed || this.buffer.length >= this.maxBuffered) {
      this.counts.dropped++;
      return;
    }
    this.buffer.push(o);
    this.schedule();
  }

  /** A full batch is written at once; anything less waits for the timer, so writes stay batched. */
  private schedule(): void {
    if (this.closed || this.flushing || this.timer.pending || this.buffer.length === 0) return;
    if (this.buffer.length >= this.batchSize) {
      void this.writeBuffered();
      return;
    }
    this.timer.start(this.flushIntervalMs);
  }

  /** Records each of `observations` (a committed transaction's), then returns `result`. */
  recordAll<R>(observations: readonly Observation[], result: R): R {
    for (const o of observations) this.record(o);
    return result;
  }

  /** Writes what is buffered now (in batches); what arrives meanwhile waits for the next round. */
  private writeBuffered(): Promise<void> {
    this.timer.cancel();
    if (!this.flushing) {
      this.flushing = this.drain(this.buffer.length).finally(() => {
        this.flushing = null;
        this.schedule();
      });
    }
    return this.flushing;
  }

  stats(): ObservationStats {
    return { ...this.counts, buffered: this.buffer.length };
  }

  /** Writes everything recorded before this call. Never rejects. */
  async flush(): Promise<void> {
    if (this.flushing) await this.flushing;
    if (this.buffer.length > 0) await this.writeBuffered();
  }

  private async drain(count: number): Promise<void> {
    let left = count;
    while (left > 0 && this.buffer.length > 0) {
      const batch = this.buffer.splice(0, Math.min(this.batchSize, left));
      left -= batch.length;
      const rows = alikeAsOne(batch);
      try {
        this.counts.batches++;
        await insertObservations(this.pool, rows);
        this.counts.written += batch.length;
      } catch {
        // One bad row must not cost the others: write them one by one, counting what still fails.
        for (const row of rows) {
          try {
            this.counts.batches++;
            await insertObservations(this.pool, [row]);
            this.counts.written += row.count;
          } catch {
            this.counts.dropped += row.count;
          }
        }
      }
    }
  }

  /** Flushes what is buffered, then refuses (and counts) further observations. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.flushing || this.buffer.length > 0) {
      await (this.flushing ?? this.writeBuffered());
    }
  }
}

/** An observation log row as `insertObservations` writes it (columns by name, times as ISO text). */
type ObservationRowIn = Omit<ObservationRow, "id" | "at" | "last_at"> & { at: string; last_at: string | null };

/**
 * The rows for `batch`, in the order of their first decision: decisions alike in every column but
 * the time (scope, key digest, outcome, request digests, reason, job, queue, type, source, key
 * length; conflicting fields and payload paths follow from the request digests) become one row
 * counting them, with the first and last times.
 */
export function alikeAsOne(batch: readonly Observation[]): ObservationRowIn[] {
  const rows = new Map<string, ObservationRowIn>();
  for (const o of batch) {
    const row: ObservationRowIn = {
      at: o.at.toISOString(),
      outcome: o.outcome,
      reason: o.reason ?? null,
      queue: o.queue,
      type: o.type,
      scope: o.scope,
      key_preview: o.keyPreview,
      key_digest: o.keyDigest,
      key_length: o.keyLength,
      job_id: o.jobId,
      conflicting_fields: o.conflictingFields ?? null,
      payload_paths: o.payloadPaths ?? null,
      stored_request_digest: o.storedRequestDigest ?? null,
      rejected_request_digest: o.rejectedRequestDigest ?? null,
      source: o.source ?? null,
      count: o.count ?? 1,
      last_at: o.lastAt?.toISOString() ?? null,
    };
    // Conflicting fields and payload paths follow from the two request digests.
    const key = [
      o.outcome,
      o.scope,
      o.keyDigest,
      o.storedRequestDigest,
      o.rejectedRequestDigest,
      o.reason,
      o.jobId,
      o.queue,
      o.type,
      o.source,
      o.keyLength,
    ].join("\u0000");
    const seen = rows.get(key);
    if (!seen) {
      rows.set(key, row);
      continue;
    }
    seen.count += row.count;
    const last = row.last_at ?? row.at;
    // ISO-8601 UTC strings of equal length compare as their times do. A merged row always has a
    // last_at, even when every replay fell in the same millisecond as the first.
    seen.last_at ??= seen.at;
    if (last > seen.last_at) seen.last_at = last;
    if (row.at < seen.at) seen.at = row.at;
  }
  return [...rows.values()];
}

/**
 * Observations held for work that may roll back, and the jobs that work accepted: a conflict naming
 * any other job (one that exists outside the caller's transaction) is a refusal that stands whatever
 * the transaction does, and is logged even after a rollback.
 */
export interface HeldObservations {
  observations: Observation[];
  until: "transaction" | "call";
  accepted: Set<string>;
}

/** Nothing held yet, until `until`. */
export function heldObservations(until: HeldObservations["until"]): HeldObservations {
  return { observations: [], until, accepted: new Set() };
}

/** Of `held`, the observations that stand after a rollback: conflicts naming jobs it did not create. */
export function standingAfterRollback(held: HeldObservations, observations = held.observations): Observation[] {
  return observations.filter((o) => o.outcome === "conflict" && !(o.jobId && held.accepted.has(o.jobId)));
}

/**
 * Writes the observations `held` for a call on the caller's client (`withClient`), through that
 * client, so they commit or roll back with the caller's work; they leave `held`. Best effort, never
 * failing the call (SQL: store/core/observations.ts `insertObservationsInTransaction`). Outside a
 * transaction every statement committed on its own: they go to `recorder`. In an aborted transaction
 * (after a conflict, say) nothing of it can commit: only the refusals that stand go to `recorder`
 * (`standingAfterRollback`).
 */
export async function writeHeldObservations(
  exec: Sql,
  held: HeldObservations,
  recorder: ObservationRecorder,
): Promise<void> {
  const batch = held.observations.splice(0);
  if (batch.length === 0) return;
  const outcome = await insertObservationsInTransaction(exec, alikeAsOne(batch));
  if (outcome === "no transaction") recorder.recordAll(batch, null);
  else if (outcome === "aborted") recorder.recordAll(standingAfterRollback(held, batch), null);
}

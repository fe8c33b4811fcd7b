/**
 * Debounce "replaced" decisions as a list (the console's /conflicts?outcome=replaced): they are not
 * observations but `debounced` job events (a repeat rewrote its pending job in place). Read in
 * statements that never join job_event to job (Citus refuses that join: job_event is distributed
 * by job id, job by bucket): a batch of events newest first over their partial `at` index
 * (migration 009), then their jobs by primary key (where the queue / type / scope / digest filters
 * apply), then the keys' previews from their bindings. Bounded: the first batch is the page itself
 * (`limit + 1` events, so an unfiltered page probes only the jobs it shows), later batches double
 * while filters leave the page short, and at most `maxScanned` events are read per page; when the
 * filters are that selective the page is shorter, `scannedTo` says where it stopped and the cursor
 * goes on from there.
 */
import type { Queryable } from "./layout";

export interface ReplacedRow {
  jobId: string;
  seq: string;
  /** Microseconds since the epoch (the keyset cursor's first half). */
  atUs: string;
  at: Date;
  queue: string;
  type: string;
  scope: string;
  keyDigest: string;
  keyPreview: string | null;
  keyLength: number | null;
  priorRequestDigest: string | null;
  requestDigest: string | null;
}

/** The largest batch of events read at once, and the most one page reads by default. */
const BATCH = 500;
export const REPLACED_MAX_SCANNED = 1000;

export async function replacedListRows(
  db: Queryable,
  f: {
    queue?: string;
    type?: string;
    scope?: string;
    digest?: string;
    from?: Date;
    to?: Date;
    sinceMs?: number;
    after?: { us: string; seq: string };
  },
  limit: number,
  maxScanned = REPLACED_MAX_SCANNED,
): Promise<{ rows: ReplacedRow[]; now: Date; scanned: number; scannedTo: { us: string; seq: string } | null }> {
  const out: ReplacedRow[] = [];
  const keyHashes = new Map<string, Buffer>();
  let cursor = f.after ?? null;
  let scanned = 0;
  let now: Date | null = null;
  let batch = Math.min(limit + 1, maxScanned);
  for (;;) {
    const { rows: events } = await db.query<{
      job_id: string;
      seq: string;
      at: Date;
      at_us: string;
      prior: string | null;
      digest: string | null;
      now: Date;
    }>(
      `select e.job_id, e.seq::text as seq, e.at, (extract(epoch from e.at) * 1000000)::bigint::text as at_us,
              e.data->>'priorRequestDigest' as prior, e.data->>'requestDigest' as digest, now() as now
         from workhorse.job_event e
        where e.kind = 'debounced'
          and ($1::timestamptz is null or e.at >= $1::timestamptz)
          and ($2::timestamptz is null or e.at < $2::timestamptz)
          and ($3::bigint is null or e.at >= now() - $3::bigint * interval '1 millisecond')
          and ($4::bigint is null
               or (e.at, e.seq) < (timestamptz 'epoch' + $4::bigint * interval '1 microsecond', $5::bigint))
        order by e.at desc, e.seq desc
        limit $6::integer`,
      [f.from ?? null, f.to ?? null, f.sinceMs ?? null, cursor?.us ?? null, cursor?.seq ?? null, batch],
    );
    now ??= events[0]?.now ?? null;
    scanned += events.length;
    if (events.length > 0) {
      const ids = [...new Set(events.map((e) => e.job_id))];
      const { rows: jobs } = await db.query<{
        id: string;
        queue: string;
        type: string;
        scope: string;
        key_hash: Buffer;
        key_digest: string;
      }>(
        `select j.id, j.queue, j.type, j.key_scope as scope, j.key_hash, encode(substr(j.key_hash, 1, 6), 'hex') as key_digest
           from workhorse.job j
          where j.id = any($1::uuid[]) and j.key_hash is not null
            and ($2::text is null or j.queue like $2) and ($3::text is null or j.type like $3)
            and ($4::text is null or j.key_scope like $4)
            and ($5::text is null or encode(substr(j.key_hash, 1, 6), 'hex') = $5)`,
        [ids, like(f.queue), like(f.type), like(f.scope), f.digest ?? null],
      );
      const byId = new Map(jobs.map((j) => [j.id, j]));
      for (const e of events) {
        const j = byId.get(e.job_id);
        if (!j) continue;
        keyHashes.set(j.id, j.key_hash);
        out.push({
          jobId: e.job_id,
          seq: e.seq,
          atUs: e.at_us,
          at: e.at,
          queue: j.queue,
          type: j.type,
          scope: j.scope,
          keyDigest: j.key_digest,
          keyPreview: null,
          keyLength: null,
          priorRequestDigest: e.prior,
          requestDigest: e.digest,
        });
        if (out.length > limit) break;
      }
    }
    const last = events[events.length - 1];
    if (last) cursor = { us: last.at_us, seq: last.seq };
    if (out.length > limit || events.length < batch) {
      await addPreviews(db, out, keyHashes);
      return { rows: out, now: now ?? new Date(), scanned, scannedTo: null };
    }
    if (scanned >= maxScanned) {
      await addPreviews(db, out, keyHashes);
      return { rows: out, now: now ?? new Date(), scanned, scannedTo: cursor };
    }
    batch = Math.min(BATCH, batch * 2, maxScanned - scanned);
  }
}

function like(s: string | undefined): string | null {
  return s === undefined ? null : `${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The key's preview and length from its binding while the job still owns it (none once cleaned up). */
async function addPreviews(db: Queryable, rows: ReplacedRow[], keyHashes: Map<string, Buffer>): Promise<void> {
  const jobs = [...new Set(rows.map((r) => r.jobId))].filter((id) => keyHashes.has(id));
  if (jobs.length === 0) return;
  const scopes = jobs.map((id) => rows.find((r) => r.jobId === id)?.scope ?? "");
  const { rows: keys } = await db.query<{ job_id: string; key_preview: string; key_length: number }>(
    `select b.job_id, b.key_preview, b.key_length
       from workhorse.key_binding b
       join unnest($1::text[], $2::bytea[], $3::uuid[]) u(scope, key_hash, job_id)
         on b.scope = u.scope and b.key_hash = u.key_hash and b.job_id = u.job_id`,
    [scopes, jobs.map((id) => keyHashes.get(id)), jobs],
  );
  const byJob = new Map(keys.map((k) => [k.job_id, k]));
  for (const r of rows) {
    const k = byJob.get(r.jobId);
    if (k) {
      r.keyPreview = k.key_preview;
      r.keyLength = k.key_length;
    }
  }
}

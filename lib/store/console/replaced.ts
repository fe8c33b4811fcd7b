/**
 * Debounce "replaced" decisions as a list (the console's /conflicts?outcome=replaced): they are not
 * observations but `debounced` job events (a repeat rewrote its pending job in place), newest first
 * over their partial `at` index (migration 009), each with its job (where the queue / type / scope /
 * digest filters apply) and its key's preview and length (the job row keeps them after its binding is
 * cleaned up). Bounded: at most `maxScanned`
 * events are read per page; when the filters are that selective the page is shorter, `scannedTo`
 * says where it stopped and the cursor goes on from there.
 *
 * On one node the page is one statement (`replacedPageJoined`): the event walk joined to the job by
 * primary key, stopping at the page. Citus refuses that join (job_event is distributed by job id,
 * job by bucket), so there (`replacedPageBatched`) a batch of events comes first, then their jobs
 * by primary key: the first batch is the page itself (`limit + 1` events, so an unfiltered page
 * probes only the jobs it shows; four times that when a filter on the jobs will drop some), later
 * batches double while filters leave the page short.
 */
import { queryPrepared, type Sql, sqlOf } from "../layout";

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

/** A replaced decision's job: what the list shows of it (JOB_COLUMNS). */
interface JobColumns {
  queue: string;
  type: string;
  scope: string;
  key_digest: string;
  key_preview: string | null;
  key_length: number | null;
}

const JOB_COLUMNS = `j.queue, j.type, j.key_scope as scope, encode(substr(j.key_hash, 1, 6), 'hex') as key_digest,
  j.key_preview, j.key_length`;

/** The job filters (queue, type and scope prefixes as `like` patterns, the key digest), parameters $n..$n+3. */
const jobFilters = (n: number) =>
  `j.key_hash is not null
   and ($${n}::text is null or j.queue like $${n}) and ($${n + 1}::text is null or j.type like $${n + 1})
   and ($${n + 2}::text is null or j.key_scope like $${n + 2})
   and ($${n + 3}::text is null or encode(substr(j.key_hash, 1, 6), 'hex') = $${n + 3})`;

export async function replacedListRows(
  db: Sql,
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
  return (await sqlOf(db).layout()) === "single"
    ? replacedPageJoined(db, f, limit, maxScanned)
    : replacedPageBatched(db, f, limit, maxScanned);
}

type ReplacedFilters = Parameters<typeof replacedListRows>[1];
type ReplacedPage = Awaited<ReturnType<typeof replacedListRows>>;

/**
 * Citus (which refuses a join of job_event to job): batches of events, then their jobs, then the
 * keys' previews, each its own statement (see the top of this file).
 */
export async function replacedPageBatched(
  db: Sql,
  f: ReplacedFilters,
  limit: number,
  maxScanned = REPLACED_MAX_SCANNED,
): Promise<ReplacedPage> {
  const out: ReplacedRow[] = [];
  let cursor = f.after ?? null;
  let scanned = 0;
  let now: Date | null = null;
  // A filter on the jobs (queue, type, scope, digest) drops events after they are read: start with
  // four pages' worth, so a filter matching a quarter of them fills the page in one pass (two
  // statements) instead of three.
  const jobFiltered = f.queue !== undefined || f.type !== undefined || f.scope !== undefined || f.digest !== undefined;
  let batch = Math.min((limit + 1) * (jobFiltered ? 4 : 1), BATCH, maxScanned);
  for (;;) {
    const events = await replacedEvents(db, f, cursor, batch);
    now ??= events[0]?.now ?? null;
    scanned += events.length;
    if (events.length > 0) {
      const ids = [...new Set(events.map((e) => e.job_id))];
      const { rows: jobs } = await queryPrepared<JobColumns & { id: string }>(
        db,
        "workhorse_console_replaced_jobs",
        `select j.id, ${JOB_COLUMNS}
           from workhorse.job j
          where j.id = any($1::uuid[]) and ${jobFilters(2)}`,
        [ids, like(f.queue), like(f.type), like(f.scope), f.digest ?? null],
      );
      const byId = new Map(jobs.map((j) => [j.id, j]));
      for (const e of events) {
        const j = byId.get(e.job_id);
        if (!j) continue;
        out.push({
          jobId: e.job_id,
          seq: e.seq,
          atUs: e.at_us,
          at: e.at,
          queue: j.queue,
          type: j.type,
          scope: j.scope,
          keyDigest: j.key_digest,
          keyPreview: j.key_preview,
          keyLength: j.key_length,
          priorRequestDigest: e.prior,
          requestDigest: e.digest,
        });
        if (out.length > limit) break;
      }
    }
    const last = events[events.length - 1];
    if (last) cursor = { us: last.at_us, seq: last.seq };
    if (out.length > limit || events.length < batch) {
      return { rows: out, now: now ?? new Date(), scanned, scannedTo: null };
    }
    if (scanned >= maxScanned) {
      return { rows: out, now: now ?? new Date(), scanned, scannedTo: cursor };
    }
    batch = Math.min(BATCH, batch * 2, maxScanned - scanned);
  }
}

interface EventRow {
  job_id: string;
  seq: string;
  at: Date;
  at_us: string;
  prior: string | null;
  digest: string | null;
  now: Date;
}

/**
 * One batch of `debounced` events, newest first, from `cursor` on. The statement holds only the
 * conditions this call has (one named statement per combination), so a prepared plan starts its
 * index walk at the cursor and bounds instead of filtering every event newer than them.
 */
/**
 * The conditions on the events a call has (its bounds and cursor), and the named statement's
 * suffix for that combination: one named statement per combination, so a prepared plan starts its
 * index walk at the cursor and bounds instead of filtering every event newer than them.
 */
function eventConditions(
  f: { from?: Date; to?: Date; sinceMs?: number },
  cursor: { us: string; seq: string } | null,
  values: unknown[],
): { where: string; shape: string } {
  const where: string[] = [];
  const add = (cond: (n: number) => string, ...vs: unknown[]) => {
    where.push(cond(values.length + 1));
    values.push(...vs);
  };
  if (f.from) add((n) => `e.at >= $${n}::timestamptz`, f.from);
  if (f.to) add((n) => `e.at < $${n}::timestamptz`, f.to);
  if (f.sinceMs !== undefined) add((n) => `e.at >= now() - $${n}::bigint * interval '1 millisecond'`, f.sinceMs);
  if (cursor) {
    add(
      (n) => `(e.at, e.seq) < (timestamptz 'epoch' + $${n}::bigint * interval '1 microsecond', $${n + 1}::bigint)`,
      cursor.us,
      cursor.seq,
    );
  }
  const shape = [f.from ? "f" : "", f.to ? "t" : "", f.sinceMs !== undefined ? "s" : "", cursor ? "c" : ""].join("");
  return { where: where.map((w) => ` and ${w}`).join(""), shape: shape ? `_${shape}` : "" };
}

/** One batch of `debounced` events, newest first, from `cursor` on. */
async function replacedEvents(
  db: Sql,
  f: { from?: Date; to?: Date; sinceMs?: number },
  cursor: { us: string; seq: string } | null,
  batch: number,
): Promise<EventRow[]> {
  const values: unknown[] = [];
  const { where, shape } = eventConditions(f, cursor, values);
  values.push(batch);
  const { rows } = await queryPrepared<EventRow>(
    db,
    `workhorse_console_replaced_events${shape}`,
    `select e.job_id, e.seq::text as seq, e.at, (extract(epoch from e.at) * 1000000)::bigint::text as at_us,
            e.data->>'priorRequestDigest' as prior, e.data->>'requestDigest' as digest, now() as now
       from workhorse.job_event e
      where e.kind = 'debounced'${where}
      order by e.at desc, e.seq desc
      limit $${values.length}::integer`,
    values,
  );
  return rows;
}

/**
 * One node: the page in one statement. The newest `maxScanned` events (from the cursor, within the
 * bounds) walked in order, each joined to its job by primary key (where the job filters apply),
 * stopping at `limit + 1` rows: a filter that drops events reads more of them,
 * never more than `maxScanned`. Only a page that comes out short reads the events again, to tell
 * whether they ran out or the bound stopped it (and where).
 */
export async function replacedPageJoined(
  db: Sql,
  f: ReplacedFilters,
  limit: number,
  maxScanned = REPLACED_MAX_SCANNED,
): Promise<ReplacedPage> {
  const values: unknown[] = [like(f.queue), like(f.type), like(f.scope), f.digest ?? null, limit + 1, maxScanned];
  const { where, shape } = eventConditions(f, f.after ?? null, values);
  const { rows } = await queryPrepared<EventRow & JobColumns>(
    db,
    `workhorse_console_replaced_page${shape}`,
    `select e.job_id, e.seq::text as seq, e.at, (extract(epoch from e.at) * 1000000)::bigint::text as at_us,
            e.data->>'priorRequestDigest' as prior, e.data->>'requestDigest' as digest, now() as now, j.*
       from (select e.job_id, e.seq, e.at, e.data from workhorse.job_event e
              where e.kind = 'debounced'${where}
              order by e.at desc, e.seq desc
              limit $6::integer) e
      cross join lateral (select ${JOB_COLUMNS} from workhorse.job j where j.id = e.job_id and ${jobFilters(1)}) j
      order by e.at desc, e.seq desc
      limit $5::integer`,
    values,
  );
  const out: ReplacedRow[] = rows.map((r) => ({
    jobId: r.job_id,
    seq: r.seq,
    atUs: r.at_us,
    at: r.at,
    queue: r.queue,
    type: r.type,
    scope: r.scope,
    keyDigest: r.key_digest,
    keyPreview: r.key_preview,
    keyLength: r.key_length,
    priorRequestDigest: r.prior,
    requestDigest: r.digest,
  }));
  if (out.length > limit) return { rows: out, now: rows[0]?.now ?? new Date(), scanned: 0, scannedTo: null };
  // Short: did the events run out, or did the bound stop the walk (and at which event)?
  const scanValues: unknown[] = [maxScanned];
  const scan = eventConditions(f, f.after ?? null, scanValues);
  const { rows: ends } = await queryPrepared<{ scanned: number; at_us: string | null; seq: string | null; now: Date }>(
    db,
    `workhorse_console_replaced_scan${scan.shape}`,
    `select x.scanned, x.at_us, x.seq, now() as now
       from (select (count(*) over ())::int as scanned, row_number() over (order by e.at, e.seq) as oldest_first,
                    (extract(epoch from e.at) * 1000000)::bigint::text as at_us, e.seq::text as seq
               from (select e.at, e.seq from workhorse.job_event e
                      where e.kind = 'debounced'${scan.where}
                      order by e.at desc, e.seq desc
                      limit $1::integer) e) x
      where x.oldest_first = 1`,
    scanValues,
  );
  const end = ends[0];
  const stopped = end && end.scanned >= maxScanned && end.at_us && end.seq ? { us: end.at_us, seq: end.seq } : null;
  return { rows: out, now: rows[0]?.now ?? end?.now ?? new Date(), scanned: end?.scanned ?? 0, scannedTo: stopped };
}

function like(s: string | undefined): string | null {
  return s === undefined ? null : `${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Reads of `workhorse.job` by the core: one job with its redrives (getJob), a page of dead letters
 * (listDeadLetters), and the console's job page (a job, the binding it owns, its timeline). Each
 * chooses its statement by the layout; rows become `Job`s through rows.ts's `jobFromRow` only.
 */

import type { Job } from "../../enqueue/types";
import { idBucket } from "../ids";
import { layoutOf, type Sql } from "../layout";
import { BINDING_COLUMNS, type BindingRow, type JobRow, jobFromRow } from "../rows";

/** The job with this id and the ids of the jobs redriven from it, or null. */
export async function selectJob(sql: Sql, id: string): Promise<Job | null> {
  const { rows } =
    (await layoutOf(sql)) === "distributed"
      ? // Citus: the job's shard from the bucket in its id; the redrives (anywhere) by a separate subplan.
        await sql.query<JobRow>({
          name: "workhorse_get_job_at",
          text: `select j.*, coalesce((select array_agg(r.id order by r.id) from workhorse.job r
                                      where r.redriven_from = $1::uuid), '{}') as redrive_job_ids
                 from workhorse.job j where j.id = $1::uuid and j.bucket = $2::integer`,
          values: [id, idBucket(id)],
        })
      : await sql.query<JobRow>({
          name: "workhorse_get_job",
          text: `select j.*, array(select r.id from workhorse.job r where r.redriven_from = j.id order by r.id) as redrive_job_ids
             from workhorse.job j where j.id = $1::uuid`,
          values: [id],
        });
  return rows[0] ? jobFromRow(rows[0]) : null;
}

/** A dead-letter page's filters and keyset cursor, checked (operator-input.ts). */
export interface DeadLetterFilter {
  queue?: string;
  type?: string;
  errorName?: string;
  finishedAfter?: Date;
  finishedBefore?: Date;
  cursor?: { finishedAt: string; id: string } | null;
  limit: number;
  /** Also the failed jobs redriven already (`redriven_to` set); left out by default. */
  includeRedriven?: boolean;
}

/**
 * Failed jobs newest first (finished_at, id), up to `limit + 1` rows (the extra one says there is a
 * next page), each with its redrives and its `finished_at` as microsecond text for the cursor.
 */
export async function selectDeadLetters(
  sql: Sql,
  q: DeadLetterFilter,
): Promise<Array<{ job: Job; finishedAtText: string }>> {
  // Citus runs no correlated subquery across shards: there the redrives are read by a second query.
  const distributed = (await layoutOf(sql)) === "distributed";
  const { rows } = await sql.query<JobRow & { finished_at_text: string }>({
    name: distributed ? "workhorse_list_dead_letters_at" : "workhorse_list_dead_letters",
    text: `select j.*, to_char(j.finished_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as finished_at_text,
                  ${
                    distributed
                      ? "'{}'::uuid[]"
                      : "array(select r.id from workhorse.job r where r.redriven_from = j.id order by r.id)"
                  } as redrive_job_ids
             from workhorse.job j
            where j.state = 'failed'
              and ($1::text is null or j.queue = $1::text)
              and ($2::text is null or j.type = $2::text)
              and ($3::text is null or j.last_error ->> 'name' = $3::text)
              and ($4::timestamptz is null or j.finished_at > $4::timestamptz)
              and ($5::timestamptz is null or j.finished_at < $5::timestamptz)
              and ($6::timestamptz is null or (j.finished_at, j.id) < ($6::timestamptz, $7::uuid))
              and ($9::boolean or j.redriven_to is null)
            order by j.finished_at desc, j.id desc
            limit $8::integer`,
    values: [
      q.queue ?? null,
      q.type ?? null,
      q.errorName ?? null,
      q.finishedAfter?.toISOString() ?? null,
      q.finishedBefore?.toISOString() ?? null,
      q.cursor?.finishedAt ?? null,
      q.cursor?.id ?? null,
      q.limit + 1,
      q.includeRedriven ?? false,
    ],
  });
  if (distributed && rows.length > 0) {
    const page = rows.slice(0, q.limit);
    const { rows: redrives } = await sql.query<{ source: string; ids: string[] }>({
      text: `select redriven_from as source, array_agg(id order by id) as ids from workhorse.job
              where redriven_from = any($1::uuid[]) group by redriven_from`,
      values: [page.map((r) => r.id)],
    });
    const bySource = new Map(redrives.map((r) => [r.source, r.ids]));
    for (const r of page) r.redrive_job_ids = bySource.get(r.id) ?? [];
  }
  return rows.map((r) => ({ job: jobFromRow(r), finishedAtText: r.finished_at_text }));
}

/** Whether a job with this id exists; `id` must be a UUID. */
export async function jobExists(sql: Sql, id: string): Promise<boolean> {
  const { rowCount } = await sql.query({ text: "select 1 from workhorse.job where id = $1::uuid", values: [id] });
  return (rowCount ?? 0) > 0;
}

/** One entry of a job's timeline (`workhorse.job_timeline`). */
export interface TimelineRow {
  seq: string;
  at: Date;
  kind: string;
  data: unknown;
}

/**
 * One job with the binding it owns (found by primary key through the job's own key columns; a key
 * that expired and was taken by another job, or moved to a redriven job, is not this job's), its
 * timeline (the `enqueued` entry the job carries, then its events, at most 500) and the database's
 * clock. Null when unknown. The payload is left out (null): a live view re-reads this every few
 * seconds, and a payload can be a MiB; `selectJobPayload` reads it once.
 */
export async function selectJobDetail(
  sql: Sql,
  id: string,
): Promise<{ job: Job; binding: BindingRow | null; events: TimelineRow[]; now: Date } | null> {
  const { rows } = await sql.query<JobRow & { now: Date; key_scope: string | null; key_hash: Buffer | null }>({
    // Uncorrelated subquery and no join below: the same plans on one node, and runnable on Citus.
    // The row without its payload, still typed as a job row (the payload never leaves the server).
    text: `select (jsonb_populate_record(null::workhorse.job, to_jsonb(j) - 'payload')).*, now() as now,
            coalesce((select array_agg(r.id::text order by r.id) from workhorse.job r
                       where r.redriven_from = $1::uuid), '{}') as redrive_job_ids
       from workhorse.job j where j.id = $1::uuid`,
    values: [id],
  });
  const j = rows[0];
  if (!j) return null;
  const [binding, events] = await Promise.all([
    sql.query<BindingRow>({
      text: `select ${BINDING_COLUMNS} from workhorse.key_binding b
        where b.scope = $2 and b.key_hash = $3 and b.job_id = $1::uuid`,
      values: [id, j.key_scope ?? null, j.key_hash ?? null],
    }),
    sql.query<TimelineRow>({
      text: "select seq, at, kind, data from workhorse.job_timeline where job_id = $1::uuid order by seq limit 500",
      values: [id],
    }),
  ]);
  return { job: jobFromRow(j), binding: binding.rows[0] ?? null, events: events.rows, now: j.now };
}

/** A job's payload (parsed JSON), or undefined when no job has this id. */
export async function selectJobPayload(sql: Sql, id: string): Promise<{ payload: unknown } | undefined> {
  const { rows } = await sql.query<{ payload: unknown }>({
    text: "select j.payload from workhorse.job j where j.id = $1::uuid",
    values: [id],
  });
  return rows[0];
}

/**
 * Job ids that start with a hex prefix: a range `[lo, hi]` over the primary key (the prefix padded
 * with 0s and with fs), so one index range read whatever the table's size. At most `limit` ids.
 */
export async function jobIdsInRange(sql: Sql, lo: string, hi: string, limit: number): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>({
    text: "select j.id from workhorse.job j where j.id between $1::uuid and $2::uuid order by j.id limit $3",
    values: [lo, hi, limit],
  });
  return rows.map((r) => r.id);
}

/**
 * Job ids whose hex digits (dashes left out) end with `hex` (at least 8 digits): one probe of the
 * index on the id's last 8 characters (migration 016), the longer suffix checked on those rows.
 * At most `limit` ids.
 */
export async function jobIdsEndingWith(sql: Sql, hex: string, limit: number): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>({
    text: `select j.id from workhorse.job j
            where right(j.id::text, 8) = right($1::text, 8) and right(replace(j.id::text, '-', ''), length($1::text)) = $1::text
            order by j.id limit $2`,
    values: [hex, limit],
  });
  return rows.map((r) => r.id);
}

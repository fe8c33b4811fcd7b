/**
 * The console's reads whose statement differs between the layouts (docs/scale-out.md, "Console and
 * maintenance"): each picks its Citus form here, so the single-node text and plans stay as they are.
 */
import type { JobState } from "../../enqueue/types";
import { queryPrepared, type Sql, sqlOf } from "../layout";
import { BINDING_COLUMNS, type BindingRow } from "../rows";

const distributed = async (db: Sql) => (await sqlOf(db).layout()) === "distributed";

export interface DeadLetterGroupRow {
  queue: string;
  type: string;
  error_name: string;
  n: string;
  newest_at: Date;
  newest_message: string | null;
  newest_id: string;
}

/**
 * Failed jobs grouped by queue, type and error name, with counts and the newest error message, the
 * largest groups first (at most 200 groups), over the newest `scan` failed jobs only: a backward
 * walk of the dead-letter index (finished_at desc, id desc) that stops there, so the read costs the
 * same at 50 or 500,000 failed jobs. `scanned` is how many it read: when it is `scan`, older failed
 * jobs may exist and every count is a lower bound. Jobs redriven already are left out (they went on
 * as their redriven jobs; they still count towards the walk). One statement on both layouts (on
 * Citus the bounded walk is merged on the coordinator, then grouped there).
 */
export async function deadLetterGroupRows(
  db: Sql,
  scan: number,
): Promise<{ rows: DeadLetterGroupRow[]; scanned: number }> {
  const { rows } = await db.query<DeadLetterGroupRow & { scanned: number }>(
    `with recent as materialized (
       select j.id, j.queue, j.type, j.finished_at, j.last_error, j.redriven_to
         from workhorse.job j where j.state = 'failed'
        order by j.finished_at desc, j.id desc limit $1::integer)
     select s.scanned, g.*
       from (select count(*)::int as scanned from recent) s
       left join lateral (
         select r.queue::text as queue, r.type::text as type, coalesce(r.last_error ->> 'name', 'Error') as error_name,
                count(*)::text as n, max(r.finished_at) as newest_at,
                (array_agg(left(r.last_error ->> 'message', 300) order by r.finished_at desc, r.id desc))[1]
                  as newest_message,
                (array_agg(r.id order by r.finished_at desc, r.id desc))[1] as newest_id
           from recent r where r.redriven_to is null
          group by 1, 2, 3
          order by count(*) desc, max(r.finished_at) desc
          limit 200) g on true`,
    [scan],
  );
  const scanned = rows[0]?.scanned ?? 0;
  return { rows: rows.filter((r) => r.queue !== null), scanned };
}

/**
 * Queues that have pending work now: a loose index scan over the pending-jobs index, one probe per
 * queue, however many jobs there are (at most 1,000 names).
 */
export async function pendingQueueNames(db: Sql): Promise<string[]> {
  // Citus refuses a recursive CTE without a filter on the distribution column: there each shard
  // answers its distinct queue names and the coordinator merges them.
  const { rows } = await db.query<{ queue: string }>(
    (await distributed(db))
      ? `select distinct j.queue::text as queue from workhorse.job j
          where j.state in ('scheduled', 'ready') order by 1 limit 1000`
      : `with recursive q(queue) as (
       (select j.queue from workhorse.job j where j.state in ('scheduled', 'ready') order by j.queue limit 1)
       union all
       select (select j.queue from workhorse.job j
                where j.state in ('scheduled', 'ready') and j.queue > q.queue order by j.queue limit 1)
         from q where q.queue is not null)
     select queue::text from q where queue is not null limit 1000`,
  );
  return rows.map((r) => r.queue);
}

/**
 * The planner's estimate of the jobs under `where` (text and values), or null where it means
 * nothing: on Citus the coordinator's estimate is not the shards' rows.
 */
export async function trustedJobsEstimate(db: Sql, where: { toString(): string; values: unknown[] }) {
  if (await distributed(db)) return null;
  return jobsEstimate(db, where);
}

/** The planner's estimate of the jobs under `where` (text and values). */
export async function jobsEstimate(db: Sql, where: { toString(): string; values: unknown[] }) {
  const { rows } = await db.query<{ "QUERY PLAN": { Plan: { "Plan Rows": number } }[] }>(
    `explain (format json) select 1 from workhorse.job ${where}`,
    where.values,
  );
  return Math.round(rows[0]?.["QUERY PLAN"][0]?.Plan["Plan Rows"] ?? 0);
}

export type DigestBindingRow = BindingRow & {
  job_state: JobState | null;
  job_queue: string | null;
  job_type: string | null;
  scopes: string;
  now: Date;
};

/**
 * Bindings (at most 50, newest first) whose key hash lies in [lo, hi], with their jobs' state,
 * queue and type, across at most `maxScopes` scopes (`scopes`: how many were walked; "0" on Citus,
 * where every scope is searched). The binding's primary key is (scope, key_hash): on one node the
 * scopes are walked with a recursive "skip scan" (one index probe per scope), each a key_hash range.
 * Each scope's range is read in a subquery with its own LIMIT (its newest 50, so the newest 50 of
 * all are among them): a subquery with a LIMIT is not merged into the join, so the planner cannot
 * turn the probes into one scan of every binding filtered by the range, which it prefers for a table
 * of a few thousand bindings.
 */
export async function bindingsByDigest(
  sql: Sql,
  lo: Buffer,
  hi: Buffer,
  maxScopes: number,
): Promise<{ rows: DigestBindingRow[] }> {
  return (await distributed(sql))
    ? bindingsByDigestDistributed(sql, lo, hi)
    : queryPrepared<DigestBindingRow>(
        sql,
        "workhorse_console_bindings_by_digest",
        `with recursive scopes(scope, n) as (
         (select scope, 1 from workhorse.key_binding order by scope limit 1)
         union all
         select (select b.scope from workhorse.key_binding b where b.scope > s.scope order by b.scope limit 1),
                s.n + 1
           from scopes s where s.scope is not null and s.n < $3
       )
       select x.*, j.state as job_state, j.queue as job_queue, j.type as job_type,
              (select count(*) from scopes where scope is not null)::text as scopes, now() as now
         from scopes s
        cross join lateral (
          select ${BINDING_COLUMNS} from workhorse.key_binding b
           where b.scope = s.scope and b.key_hash between $1::bytea and $2::bytea
           order by b.created_at desc limit 50
        ) x
         left join workhorse.job j on j.id = x.job_id
        where s.scope is not null
        order by x.created_at desc
        limit 50`,
        [lo, hi, maxScopes],
      );
}

/**
 * The distributed (Citus) form of the bindings half of lookupDigest: Citus refuses the recursive
 * skip scan, so each shard scans its bindings for the hash range (the primary key leads with the
 * bucket, so no index serves it: a full scan per shard, bounded by the shards' sizes), and the jobs
 * are read in a second query by id. Every scope is searched.
 */
async function bindingsByDigestDistributed(sql: Sql, lo: Buffer, hi: Buffer) {
  const { rows } = await sql.query<BindingRow & { now: Date }>(
    `select ${BINDING_COLUMNS}, now() as now from workhorse.key_binding b
      where b.key_hash between $1::bytea and $2::bytea
      order by b.created_at desc limit 50`,
    [lo, hi],
  );
  const ids = rows.map((r) => r.job_id);
  const { rows: jobs } = ids.length
    ? await sql.query<{ id: string; state: JobState; queue: string; type: string }>(
        "select id, state, queue, type from workhorse.job where id = any($1::uuid[])",
        [ids],
      )
    : { rows: [] };
  const byId = new Map(jobs.map((j) => [j.id, j]));
  return {
    rows: rows.map((r) => {
      const j = byId.get(r.job_id);
      return { ...r, job_state: j?.state ?? null, job_queue: j?.queue ?? null, job_type: j?.type ?? null, scopes: "0" };
    }),
  };
}

/**
 * Scope names that hold bindings, in name order, at most `max`: on one node a skip scan over the
 * binding primary key (one index probe per scope); on Citus each shard's distinct scopes, merged.
 */
export async function bindingScopes(db: Sql, max: number): Promise<string[]> {
  const { rows } = await db.query<{ scope: string }>(
    (await distributed(db))
      ? "select distinct b.scope::text as scope from workhorse.key_binding b order by 1 limit $1"
      : `with recursive s(scope, n) as (
       (select b.scope, 1 from workhorse.key_binding b order by b.scope limit 1)
       union all
       select (select b.scope from workhorse.key_binding b where b.scope > s.scope order by b.scope limit 1), s.n + 1
         from s where s.scope is not null and s.n < $1
     )
     select scope::text as scope from s where scope is not null`,
    [max],
  );
  return rows.map((r) => r.scope);
}

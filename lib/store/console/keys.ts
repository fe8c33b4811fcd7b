/**
 * The console's reads by key (lib/console: find-key.ts, digest.ts): a binding's owning job, what
 * became of a key with no binding, and the observations under a key digest.
 */
import type { JobState } from "../../enqueue/types";
import type { Sql } from "../layout";
import type { ObservationRow } from "../rows";

/** The owning job of a binding if it still exists (id null otherwise) and the database's clock, in one round trip. */
export async function owningJob(db: Sql, jobId: string) {
  const { rows } = await db.query<{
    id: string | null;
    state: JobState;
    queue: string;
    type: string;
    created_at: Date;
    purged_at: Date | null;
    now: Date;
  }>(
    `select j.id, j.state, j.queue, j.type, j.created_at, j.purged_at, now() as now
         from (select 1) one left join workhorse.job j on j.id = $1`,
    [jobId],
  );
  return rows[0];
}

/**
 * The newest job accepted under a key (jobs carry their scope and key hash) or, for jobs accepted
 * before the storage upgrade, the newest `enqueued` event carrying one of its digests and its scope.
 * Neither has an index for this: run it under a statement timeout.
 */
export async function newestJobUnderKey(sql: Sql, scope: string, digests: string[]) {
  const { rows } = await sql.query<{ job_id: string; purged_at: Date | null; expires_at: string | null }>(
    `select x.job_id, j.purged_at, x.expires_at
               from (select j.id as job_id, j.created_at as at,
                            to_jsonb(j.created_at + j.key_ttl_ms * interval '1 millisecond') #>> '{}' as expires_at
                       from workhorse.job j
                      where j.key_scope = $2 and left(encode(j.key_hash, 'hex'), 12) = any($1::text[])
                     union all
                     select e.job_id, e.at, e.data->>'expiresAt'
                       from workhorse.job_event e
                      where e.kind = 'enqueued' and e.data->>'keyDigest' = any($1::text[]) and e.data->>'scope' = $2) x
               left join workhorse.job j on j.id = x.job_id
              order by x.at desc limit 1`,
    [digests, scope],
  );
  return rows[0];
}

/**
 * Purged jobs whose key has this digest (jobs keep their scope and key hash after a purge), newest
 * purge first, at most 5. `prefix` is the digest's 6 bytes: the comparison is the expression of
 * job_purged_key_digest_idx (migration 029), so the read is one probe of that index.
 */
const PURGED_JOBS_UNDER_DIGEST_SQL = `select j.id as job_id, j.key_scope as scope, j.purged_at from workhorse.job j
      where j.state = 'purged' and j.key_hash is not null and substring(j.key_hash from 1 for 6) = $1::bytea
      order by j.purged_at desc limit 5`;

export async function purgedJobsUnderDigest(sql: Sql, prefix: Buffer) {
  const { rows } = await sql.query<{ job_id: string; scope: string; purged_at: Date }>({
    name: "workhorse_console_purged_by_digest",
    text: PURGED_JOBS_UNDER_DIGEST_SQL,
    values: [prefix],
  });
  return rows;
}

/** The newest observations under a digest: an index scan on (key_digest, id) (migration 015). */
export const OBSERVATIONS_BY_DIGEST_SQL =
  "select * from workhorse.enqueue_observation where key_digest = $1 order by id desc limit 20";

export async function observationsByDigest(sql: Sql, digest: string): Promise<ObservationRow[]> {
  return (
    await sql.query<ObservationRow>({
      name: "workhorse_console_observations_by_digest",
      text: OBSERVATIONS_BY_DIGEST_SQL,
      values: [digest],
    })
  ).rows;
}

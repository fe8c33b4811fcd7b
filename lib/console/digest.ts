import "server-only";
import type pg from "pg";
import { BINDING_COLUMNS, type BindingRow, bindingDto } from "./jobs";
import { type ObservationRow, observationDto } from "./observation-reads";
import { DIGEST_LOOKUPS_PER_MINUTE, digestLookupLimiter, type RequestLimiter } from "./rate-limit";
import { isDistributed, iso, readWithTimeout } from "./read-queries";
import type { DigestLookupDto, JobStateName } from "./wire-types";

/** A key digest: the first 12 hex characters of the key's SHA-256 (what errors and logs carry). */
export const DIGEST_RE = /^[0-9a-f]{12}$/;

export { DIGEST_LOOKUPS_PER_MINUTE };

/** How long the observation search (an index range since migration 015) may take before we say so. */
const DIGEST_SEARCH_TIMEOUT_MS = 500;
/** Scopes walked for bindings; beyond this the answer says the search stopped. */
const DIGEST_MAX_SCOPES = 1000;

type LimitedDigestLookup =
  | { status: "ok"; result: DigestLookupDto }
  | { status: "limited"; retryInSeconds: number; message: string };

/**
 * lookupDigest, at most DIGEST_LOOKUPS_PER_MINUTE times a minute per `who` (the console session, or
 * the client address without sign-in). Past that, no query runs and the answer says how long to wait.
 */
export async function lookupDigestLimited(
  pool: pg.Pool,
  digest: string,
  who: string,
  limiter: RequestLimiter = digestLookupLimiter,
  now = Date.now(),
): Promise<LimitedDigestLookup> {
  const waitMs = limiter.take(who, now);
  if (waitMs > 0) {
    const retryInSeconds = Math.ceil(waitMs / 1000);
    return {
      status: "limited",
      retryInSeconds,
      message: `Too many digest lookups from this session (${DIGEST_LOOKUPS_PER_MINUTE} a minute): wait ${retryInSeconds} s and try again.`,
    };
  }
  return { status: "ok", result: await lookupDigest(pool, digest) };
}

/**
 * Everything the console knows under one key digest, across scopes:
 * - live and expired bindings whose key hash starts with the digest. The binding's primary key is
 *   (scope, key_hash): the scopes are walked with a recursive "skip scan" over that index (one index
 *   probe per scope) and each scope is a key_hash range probe, so no table scan;
 * - the jobs those bindings hold (state, queue, type);
 * - the newest observations (replays, conflicts) under the digest: an index range on
 *   (key_digest, id) (migration 015), still read-only under a statement timeout, and the answer says
 *   when it was cut short.
 * Six bytes of digest can, rarely, match two keys: every binding found is listed with its scope.
 */
export async function lookupDigest(pool: pg.Pool, digest: string): Promise<DigestLookupDto> {
  const lo = Buffer.concat([Buffer.from(digest, "hex"), Buffer.alloc(26, 0)]);
  const hi = Buffer.concat([Buffer.from(digest, "hex"), Buffer.alloc(26, 0xff)]);
  const [bindings, observations] = await Promise.all([
    (await isDistributed(pool))
      ? bindingsByDigestDistributed(pool, lo, hi)
      : pool.query<
          BindingRow & {
            job_state: JobStateName | null;
            job_queue: string | null;
            job_type: string | null;
            scopes: string;
            now: Date;
          }
        >(
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
        ) x
         left join workhorse.job j on j.id = x.job_id
        where s.scope is not null
        order by x.created_at desc
        limit 50`,
          [lo, hi, DIGEST_MAX_SCOPES],
        ),
    searchObservations(pool, digest),
  ]);
  const first = bindings.rows[0];
  return {
    digest,
    bindings: bindings.rows.map((r) => ({
      binding: bindingDto(r),
      job: r.job_state ? { state: r.job_state, queue: r.job_queue ?? "", type: r.job_type ?? "" } : null,
    })),
    scopesSearchedAll: first ? Number(first.scopes) < DIGEST_MAX_SCOPES : true,
    observations: observations.rows,
    observationsComplete: observations.complete,
    now: iso(first?.now ?? new Date()),
  };
}

/** The newest observations under a digest: an index scan on (key_digest, id) (migration 015). */
export const OBSERVATIONS_BY_DIGEST_SQL =
  "select * from workhorse.enqueue_observation where key_digest = $1 order by id desc limit 20";

async function searchObservations(pool: pg.Pool, digest: string) {
  const r = await readWithTimeout(pool, DIGEST_SEARCH_TIMEOUT_MS, (client) =>
    client.query<ObservationRow>(OBSERVATIONS_BY_DIGEST_SQL, [digest]),
  );
  return r.timedOut ? { rows: [], complete: false } : { rows: r.value.rows.map(observationDto), complete: true };
}

/**
 * The distributed (Citus) form of the bindings half of lookupDigest: Citus refuses the recursive
 * skip scan, so each shard scans its bindings for the hash range (the primary key leads with the
 * bucket, so no index serves it: a full scan per shard, bounded by the shards' sizes), and the jobs
 * are read in a second query by id. Every scope is searched.
 */
async function bindingsByDigestDistributed(pool: pg.Pool, lo: Buffer, hi: Buffer) {
  const { rows } = await pool.query<BindingRow & { now: Date }>(
    `select ${BINDING_COLUMNS}, now() as now from workhorse.key_binding b
      where b.key_hash between $1::bytea and $2::bytea
      order by b.created_at desc limit 50`,
    [lo, hi],
  );
  const ids = rows.map((r) => r.job_id);
  const { rows: jobs } = ids.length
    ? await pool.query<{ id: string; state: JobStateName; queue: string; type: string }>(
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

/**
 * Search by what support knows (the console's /search): jobs whose payload holds a value at a JSON
 * path (`orderId = ORD-123`), optionally of one type, bounded twice so it never scans a big table
 * unbounded: in time (jobs created inside the window, a range of the time-ordered UUIDv7 primary
 * key) and in rows (only the newest `scanCap` jobs of that range are looked at). The payload test is
 * a lax-mode SQL/JSON path (`jsonb_path_exists(payload, '$."items"."sku" ? (@ == $v0)', vars)`),
 * which, unlike containment, also finds a value inside arrays on the way; no index serves it and none
 * is needed (at most `scanCap` payloads are tested), so there is no index cost on enqueue.
 */
import type { Sql } from "../layout";

/** A payload test: an SQL/JSON path over the payload and its variables (`$v0`, …). */
export interface PayloadMatch {
  /** `$."orderId" ? (@ == $v0 || @ == $v1)`: the path's segments quoted, the values as variables. */
  jsonpath: string;
  vars: Record<string, unknown>;
}

export interface PayloadSearch {
  match: PayloadMatch;
  type?: string;
  /** UUIDv7 lower bound of the window (inclusive). */
  fromId: string;
  /** Where an earlier search stopped (exclusive upper bound): this one goes on with older jobs. */
  beforeId?: string;
  limit: number;
  scanCap: number;
}

const NO_UPPER_BOUND = "ffffffff-ffff-ffff-ffff-ffffffffffff";

/**
 * The matches, newest first (at most `limit`), how many jobs were looked at (`scanCap` at most) and
 * the oldest of them (where a search that reached its bound goes on). One backward range read of the
 * primary key; each job's payload is tested as it is read, so only ids and flags are kept.
 */
export async function payloadSearchRows(db: Sql, s: PayloadSearch) {
  const { rows } = await db.query<{
    id: string | null;
    queue: string | null;
    type: string | null;
    state: string | null;
    created_at: Date | null;
    scanned: string;
    oldest: string | null;
    now: Date;
  }>(
    `with recent as (
       select j.id, j.queue, j.type, j.state, j.created_at,
              ($3::text is null or j.type = $3::text) and jsonb_path_exists(j.payload, $4::jsonpath, $7::jsonb) as hit
         from workhorse.job j
        where j.id >= $1::uuid and j.id < $6::uuid
        order by j.id desc
        limit $2::integer)
     select m.id, m.queue, m.type, m.state, m.created_at, c.n::text as scanned, c.oldest, now() as now
       from (select count(*) as n, min(r.id::text) as oldest from recent r) c
       left join lateral (
             select r.id, r.queue, r.type, r.state, r.created_at from recent r
              where r.hit
              order by r.id desc
              limit $5::integer) m on true`,
    [s.fromId, s.scanCap, s.type ?? null, s.match.jsonpath, s.limit, s.beforeId ?? NO_UPPER_BOUND, s.match.vars],
  );
  const scanned = Number(rows[0]?.scanned ?? 0);
  const now = rows[0]?.now ?? new Date();
  const jobs = rows.flatMap((r) =>
    r.id && r.queue && r.type && r.state && r.created_at
      ? [{ id: r.id, queue: r.queue, type: r.type, state: r.state, createdAt: r.created_at }]
      : [],
  );
  return { jobs, scanned, oldestScanned: rows[0]?.oldest ?? null, now };
}

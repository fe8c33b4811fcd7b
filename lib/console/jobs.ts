import "server-only";
import type { JobFilters } from "./filters";
import { type Db, iso, isoOrNull, Where } from "./sql";
import type { BindingDto, JobDetailDto, JobRowDto, JobStateName, Page } from "./types";

export const JOBS_PAGE_SIZE = 50;

interface JobListRow {
  id: string;
  queue: string;
  type: string;
  state: JobStateName;
  attempt: number;
  max_attempts: number;
  tags: string[];
  run_at: Date;
  created_at: Date;
  now: Date;
}

function toRow(r: JobListRow): JobRowDto {
  return {
    id: r.id,
    queue: r.queue,
    type: r.type,
    state: r.state,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    tags: r.tags,
    runAt: iso(r.run_at),
    createdAt: iso(r.created_at),
  };
}

/**
 * Newest first, keyset-paginated on the primary key (job ids are UUIDv7, so id order is creation
 * order): `after` = older than that id, `before` = newer. No OFFSET, no count.
 */
export async function listJobs(db: Db, f: JobFilters, limit = JOBS_PAGE_SIZE): Promise<Page<JobRowDto>> {
  const w = new Where();
  if (f.queue) w.add((p) => `queue = ${p}`, f.queue);
  if (f.type) w.add((p) => `type = ${p}`, f.type);
  if (f.state) w.add((p) => `state = ${p}`, f.state);
  if (f.tag) w.add((p) => `tags @> array[${p}::text]`, f.tag);
  const backwards = !f.after && !!f.before;
  if (f.after) w.add((p) => `id < ${p}::uuid`, f.after);
  else if (f.before) w.add((p) => `id > ${p}::uuid`, f.before);
  const { rows } = await db.query<JobListRow>(
    `select id, queue, type, state, attempt, max_attempts, tags, run_at, created_at, now() as now
       from workhorse.job ${w} order by id ${backwards ? "asc" : "desc"} limit ${limit + 1}`,
    w.values,
  );
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  if (backwards) page.reverse();
  const dtos = page.map(toRow);
  const now = rows[0]?.now ? iso(rows[0].now) : new Date().toISOString();
  if (backwards) {
    return { rows: dtos, prev: more ? (dtos[0]?.id ?? null) : null, next: dtos.at(-1)?.id ?? f.before ?? null, now };
  }
  return {
    rows: dtos,
    next: more ? (dtos.at(-1)?.id ?? null) : null,
    prev: f.after ? (dtos[0]?.id ?? f.after) : null,
    now,
  };
}

export interface BindingRow {
  scope: string;
  key_hash: Buffer;
  job_id: string;
  mode: BindingDto["mode"];
  key_preview: string;
  key_length: number;
  request_digest: string;
  ttl_ms: string;
  created_at: Date;
  expires_at: Date;
  expired: boolean;
}

/** Columns of `workhorse.key_binding` (alias `b`) as a `BindingRow`. */
export const BINDING_COLUMNS = `b.scope, b.key_hash, b.job_id, b.mode, b.key_preview, b.key_length,
  encode(b.request_digest, 'hex') as request_digest, b.ttl_ms,
  b.created_at, b.expires_at, b.expires_at <= now() as expired`;

export function bindingDto(r: BindingRow): BindingDto {
  return {
    scope: r.scope,
    keyPreview: r.key_preview,
    keyDigest: r.key_hash.toString("hex", 0, 6),
    keyLength: r.key_length,
    jobId: r.job_id,
    mode: r.mode,
    requestDigest: r.request_digest,
    ttlMs: Number(r.ttl_ms),
    createdAt: iso(r.created_at),
    expiresAt: iso(r.expires_at),
    expired: r.expired,
  };
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v, null, 2));

/**
 * One job with the binding it owns (found by primary key through the job's own key columns; a key
 * that expired and was taken by another job, or moved to a redriven job, is not this job's) and its
 * timeline (`workhorse.job_timeline`: the `enqueued` entry the job carries, then its events).
 * Null when unknown.
 */
export async function jobDetail(db: Db, id: string): Promise<JobDetailDto | null> {
  const { rows } = await db.query<Record<string, unknown>>(
    "select j.*, now() as now from workhorse.job j where j.id = $1::uuid",
    [id],
  );
  const j = rows[0];
  if (!j) return null;
  const [binding, events] = await Promise.all([
    db.query<BindingRow>(
      `select ${BINDING_COLUMNS} from workhorse.job j
         join workhorse.key_binding b on b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
        where j.id = $1::uuid`,
      [id],
    ),
    db.query<{ seq: string; at: Date; kind: string; data: unknown }>(
      "select seq, at, kind, data from workhorse.job_timeline where job_id = $1::uuid order by seq limit 500",
      [id],
    ),
  ]);
  const d = (k: string) => isoOrNull(j[k] as Date | null);
  return {
    id: j.id as string,
    queue: j.queue as string,
    type: j.type as string,
    state: j.state as JobStateName,
    payloadJson: JSON.stringify(j.payload, null, 2),
    attempt: j.attempt as number,
    maxAttempts: j.max_attempts as number,
    tags: j.tags as string[],
    runAt: iso(j.run_at as Date),
    createdAt: iso(j.created_at as Date),
    updatedAt: iso(j.updated_at as Date),
    startedAt: d("started_at"),
    finishedAt: d("finished_at"),
    deadline: d("deadline"),
    executionTimeoutMs: j.execution_timeout_ms === null ? null : Number(j.execution_timeout_ms),
    concurrencyKey: (j.concurrency_key as string | null) ?? null,
    retryPolicy: j.retry_policy ?? null,
    leaseOwner: (j.lease_owner as string | null) ?? null,
    leaseExpiresAt: d("lease_expires_at"),
    lastErrorJson: json(j.last_error),
    resultJson: json(j.result),
    purgedAt: d("purged_at"),
    purgedBy: (j.purged_by as string | null) ?? null,
    purgeReason: (j.purge_reason as string | null) ?? null,
    binding: binding.rows[0] ? bindingDto(binding.rows[0]) : null,
    events: events.rows.map((e) => ({ seq: Number(e.seq), at: iso(e.at), kind: e.kind, data: e.data })),
    now: iso(j.now as Date),
  };
}

export function canPurge(state: JobStateName): boolean {
  return state === "ready" || state === "scheduled";
}

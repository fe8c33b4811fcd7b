/**
 * The enqueue call as PostgreSQL sees it: the statement for one request (and its cached-plan name),
 * its positional parameters, a batch's typed arrays, and the distributed layout's buckets. The
 * decision itself is SQL (workhorse.enqueue_one / enqueue_batch, docs/enqueue.md "How it is
 * built"); queue.ts sends these statements and turns their rows into results and errors.
 */
import { createHash } from "node:crypto";
import { withLegacyProbe } from "./key-upgrade";
import type { EnqueueOutcome, NonReplaceableReason } from "./types";
import type { NormalizedRequest } from "./validate";

export const ENQUEUE_BATCH_SQL = `select ordinal, job_id, outcome, request_digest, reason
  from workhorse.enqueue_batch($1::uuid[], $2::text[], $3::text[], $4::jsonb, $5::timestamptz[], $6::integer[],
    $7::jsonb[], $8::timestamptz[], $9::bigint[], $10::text[], $11::text[], $12::integer[], $13::text[], $14::text[],
    $15::bytea[], $16::text[], $17::integer[], $18::bigint[], $19::bytea[], $20::bytea[], $21::boolean,
    $22::text[], $23::bigint[])`;
const ENQUEUE_ONE_SQL = `select 1 as ordinal, job_id, outcome, request_digest, reason
  from workhorse.enqueue_one($1::uuid, $2::text, $3::text, $4::jsonb, $5::timestamptz, $6::integer, $7::jsonb,
    $8::timestamptz, $9::bigint, $10::text, $11::text[], $12::text, $13::text, $14::bytea, $15::text, $16::integer,
    $17::bigint, $18::bytea, $19::boolean)`;
/** Debounce: the idempotency call plus schedule ($20) and max wait ($21). */
const ENQUEUE_DEBOUNCE_SQL = `select 1 as ordinal, job_id, outcome, request_digest, reason
  from workhorse.enqueue_one($1::uuid, $2::text, $3::text, $4::jsonb, $5::timestamptz, $6::integer, $7::jsonb,
    $8::timestamptz, $9::bigint, $10::text, $11::text[], $12::text, $13::text, $14::bytea, $15::text, $16::integer,
    $17::bigint, $18::bytea, $19::boolean, $20::text, $21::bigint)`;

const ENQUEUE_ONE_LEGACY_SQL = withLegacyProbe(ENQUEUE_ONE_SQL);
const ENQUEUE_DEBOUNCE_LEGACY_SQL = withLegacyProbe(ENQUEUE_DEBOUNCE_SQL, 22);

/** The statement (and its cached-plan name) for one request. */
export function oneRequestStatement(r: NormalizedRequest): { name: string; text: string } {
  const legacy = !!r.keyed?.key.legacyKeyHash;
  if (r.keyed?.mode === "debounce") {
    return legacy
      ? { name: "workhorse_enqueue_debounce_legacy", text: ENQUEUE_DEBOUNCE_LEGACY_SQL }
      : { name: "workhorse_enqueue_debounce", text: ENQUEUE_DEBOUNCE_SQL };
  }
  return legacy
    ? { name: "workhorse_enqueue_one_legacy", text: ENQUEUE_ONE_LEGACY_SQL }
    : { name: "workhorse_enqueue_one", text: ENQUEUE_ONE_SQL };
}

// Distributed layout (Citus): the same decision, delegated to the node holding the request's bucket
// ($1), which is also written into the job id (see bucketedId).
export const ENQUEUE_ONE_AT_SQL = `select 1 as ordinal, job_id, outcome, request_digest, reason
  from workhorse.enqueue_one_at($1::integer, 1, $2::uuid, $3::text, $4::text, $5::jsonb, $6::timestamptz, $7::integer,
    $8::jsonb, $9::timestamptz, $10::bigint, $11::text, $12::text[], $13::text, $14::text, $15::bytea, $16::text,
    $17::integer, $18::bigint, $19::bytea, $20::boolean, $21::text, $22::bigint)`;

/**
 * The distributed layout's bucket (0..4095) of a keyed request: the first 12 bits of
 * SHA-256(scope ‖ 0x00 ‖ key hash), as workhorse.key_bucket() computes it.
 */
export function keyBucket(scope: string, keyHash: Buffer): number {
  const d = createHash("sha256").update(scope, "utf8").update(ZERO_BYTE).update(keyHash).digest();
  return ((d[0] as number) << 4) | ((d[1] as number) >> 4);
}

/** The job id with its last 12 bits set to the bucket (workhorse.id_bucket() reads them back). */
export function bucketedId(id: string, bucket: number): string {
  return id.slice(0, 33) + bucket.toString(16).padStart(3, "0");
}

/** The bucket a job id carries (its last 12 bits). */
export function idBucket(id: string): number {
  return Number.parseInt(id.slice(33), 16);
}

const ZERO_BYTE = Buffer.from([0]);

/** Whether the schema has the distributed layout (migrate({ distributed: true }) made workhorse.shard_bucket). */
export const LAYOUT_SQL = "select to_regclass('workhorse.shard_bucket') is not null as distributed";

/** Gives every keyed request its key's bucket in its job id (in place; the same ids on every try). */
export function bucketIds(requests: readonly NormalizedRequest[], ids: string[]): void {
  for (let i = 0; i < requests.length; i++) {
    const k = (requests[i] as NormalizedRequest).keyed;
    if (k) ids[i] = bucketedId(ids[i] as string, keyBucket(k.key.scope, k.key.keyHash));
  }
}

export interface EnqueueRow {
  ordinal: number;
  job_id: string;
  outcome: EnqueueOutcome;
  /** The request's own digest (hex) when it did not create the job. */
  request_digest: string | null;
  reason: NonReplaceableReason | null;
}

export interface ConflictDetail {
  ordinal: number;
  existingJobId: string | null;
  existingMode: string;
  conflictingFields: string[];
  payloadPaths: string[] | null;
  payloadPathsTruncated: boolean;
  storedRequestDigest: string;
  rejectedRequestDigest: string;
}

export function oneRequestValues(r: NormalizedRequest, id: string, notify: boolean): unknown[] {
  const k = r.keyed;
  const values = [
    id,
    r.queue,
    r.type,
    r.payloadJson,
    r.runAt?.toISOString() ?? null,
    r.maxAttempts,
    r.retryPolicy === null ? null : JSON.stringify(r.retryPolicy),
    r.deadline?.toISOString() ?? null,
    r.executionTimeoutMs,
    r.concurrencyKey,
    r.tags,
    k?.mode ?? null,
    k?.key.scope ?? null,
    k?.key.keyHash ?? null,
    k?.key.keyPreview ?? null,
    k?.key.keyLength ?? null,
    k?.ttlMs ?? null,
    k?.fieldDigests ?? null,
    notify,
  ];
  if (k?.mode === "debounce") values.push(k.schedule, k.maxWaitMs);
  if (k?.key.legacyKeyHash) values.push(k.key.legacyKeyHash);
  return values;
}

/** Parameters of workhorse.enqueue_one_at() (distributed layout): the bucket, then as enqueue_one with debounce's two. */
export function distributedOneValues(r: NormalizedRequest, id: string, notify: boolean): unknown[] {
  const values = oneRequestValues(r, id, notify).slice(0, 19);
  const k = r.keyed;
  return [
    idBucket(id),
    ...values,
    k?.mode === "debounce" ? k.schedule : null,
    k?.mode === "debounce" ? k.maxWaitMs : null,
  ];
}

/** Parameters of workhorse.enqueue_batch(): one typed array per column, input order. */
export function batchValues(
  requests: readonly NormalizedRequest[],
  ids: readonly string[],
  notify: boolean,
): unknown[] {
  const n = requests.length;
  const queues = new Array<string>(n);
  const types = new Array<string>(n);
  const payloads = new Array<string>(n);
  const runAts = new Array<string | null>(n);
  const maxAttempts = new Array<number>(n);
  const policies = new Array<string | null>(n);
  const deadlines = new Array<string | null>(n);
  const timeouts = new Array<number | null>(n);
  const concurrencyKeys = new Array<string | null>(n);
  const tags: string[] = [];
  const tagCounts = new Array<number>(n);
  const modes = new Array<string | null>(n);
  const scopes = new Array<string | null>(n);
  const hashes = new Array<Buffer | null>(n);
  const previews = new Array<string | null>(n);
  const lengths = new Array<number | null>(n);
  const ttls = new Array<number | null>(n);
  const digests = new Array<Buffer | null>(n);
  let legacy: (Buffer | null)[] | null = null;
  // Only a batch holding a debounce request sends these (null otherwise).
  let schedules: (string | null)[] | null = null;
  let maxWaits: (number | null)[] | null = null;
  for (let i = 0; i < n; i++) {
    const r = requests[i] as NormalizedRequest;
    const k = r.keyed;
    queues[i] = r.queue;
    types[i] = r.type;
    payloads[i] = r.payloadJson;
    runAts[i] = r.runAt?.toISOString() ?? null;
    maxAttempts[i] = r.maxAttempts;
    policies[i] = r.retryPolicy === null ? null : JSON.stringify(r.retryPolicy);
    deadlines[i] = r.deadline?.toISOString() ?? null;
    timeouts[i] = r.executionTimeoutMs;
    concurrencyKeys[i] = r.concurrencyKey;
    for (const tag of r.tags) tags.push(tag);
    tagCounts[i] = r.tags.length;
    modes[i] = k?.mode ?? null;
    scopes[i] = k?.key.scope ?? null;
    hashes[i] = k?.key.keyHash ?? null;
    previews[i] = k?.key.keyPreview ?? null;
    lengths[i] = k?.key.keyLength ?? null;
    ttls[i] = k?.ttlMs ?? null;
    digests[i] = k?.fieldDigests ?? null;
    if (k?.key.legacyKeyHash) {
      legacy ??= new Array<Buffer | null>(n).fill(null);
      legacy[i] = k.key.legacyKeyHash;
    }
    if (k?.mode === "debounce") {
      schedules ??= new Array<string | null>(n).fill(null);
      maxWaits ??= new Array<number | null>(n).fill(null);
      schedules[i] = k.schedule;
      maxWaits[i] = k.maxWaitMs;
    }
  }
  return [
    ids,
    queues,
    types,
    `[${payloads.join(",")}]`,
    runAts,
    maxAttempts,
    policies,
    deadlines,
    timeouts,
    concurrencyKeys,
    tags,
    tagCounts,
    modes,
    scopes,
    hashes,
    previews,
    lengths,
    ttls,
    digests,
    legacy,
    notify,
    schedules,
    maxWaits,
  ];
}

/**
 * The enqueue call as PostgreSQL sees it: the statement for one request (and its cached-plan name),
 * its positional parameters, a batch's typed arrays, and the distributed layout's buckets. The
 * decision itself is SQL (workhorse.enqueue_one / enqueue_batch, docs/enqueue.md "How it is
 * built"); enqueue-call.ts sends these statements and turns their rows into results and errors.
 */
import type { NormalizedRequest } from "../../enqueue/enqueue-input";
import type { EnqueueOutcome, NonReplaceableReason } from "../../enqueue/types";
import { bucketedId, idBucket, keyBucket } from "../ids";
import { layoutOf, type Sql } from "../layout";
import { type TextFields, TextRowsStatement } from "../text-rows";
import { withLegacyProbe } from "./key-upgrade";

/**
 * The request's fields as enqueue_one and enqueue_batch take them, in their parameter order: one
 * table drives the statements' text, the single call's values and the batch's typed arrays.
 * test/request-fields.test.ts compares it with the functions' signatures in pg_proc.
 *   one / batch: the parameter's name in workhorse.enqueue_one / workhorse.enqueue_batch;
 *   type: its SQL type in enqueue_one (enqueue_batch takes an array of it, except as noted).
 */
interface Field {
  one: string;
  batch: string;
  type: string;
  of: (r: NormalizedRequest, id: string) => unknown;
}
const FIELDS: readonly Field[] = [
  { one: "p_id", batch: "p_ids", type: "uuid", of: (_r, id) => id },
  { one: "p_queue", batch: "p_queues", type: "text", of: (r) => r.queue },
  { one: "p_type", batch: "p_types", type: "text", of: (r) => r.type },
  // enqueue_batch: one jsonb array of every payload (JSON text joined, parsed once by PostgreSQL).
  { one: "p_payload", batch: "p_payloads", type: "jsonb", of: (r) => r.payloadJson },
  { one: "p_run_at", batch: "p_run_ats", type: "timestamptz", of: (r) => r.runAt?.toISOString() ?? null },
  { one: "p_max_attempts", batch: "p_max_attempts", type: "integer", of: (r) => r.maxAttempts },
  {
    one: "p_retry_policy",
    batch: "p_retry_policies",
    type: "jsonb",
    of: (r) => (r.retryPolicy === null ? null : JSON.stringify(r.retryPolicy)),
  },
  { one: "p_deadline", batch: "p_deadlines", type: "timestamptz", of: (r) => r.deadline?.toISOString() ?? null },
  { one: "p_execution_timeout_ms", batch: "p_execution_timeouts", type: "bigint", of: (r) => r.executionTimeoutMs },
  { one: "p_concurrency_key", batch: "p_concurrency_keys", type: "text", of: (r) => r.concurrencyKey },
  // enqueue_batch: every request's tags one after another (text[]), and p_tag_counts (integer[]).
  { one: "p_tags", batch: "p_tags", type: "text[]", of: (r) => r.tags },
  { one: "p_mode", batch: "p_modes", type: "text", of: (r) => r.keyed?.mode ?? null },
  { one: "p_scope", batch: "p_scopes", type: "text", of: (r) => r.keyed?.key.scope ?? null },
  { one: "p_key_hash", batch: "p_key_hashes", type: "bytea", of: (r) => r.keyed?.key.keyHash ?? null },
  { one: "p_key_preview", batch: "p_key_previews", type: "text", of: (r) => r.keyed?.key.keyPreview ?? null },
  { one: "p_key_length", batch: "p_key_lengths", type: "integer", of: (r) => r.keyed?.key.keyLength ?? null },
  { one: "p_ttl_ms", batch: "p_ttls", type: "bigint", of: (r) => r.keyed?.ttlMs ?? null },
  // Digests a client could send for PostgreSQL to check; this client sends none: PostgreSQL digests
  // the values it receives (sql/functions/request_field_digests.sql).
  { one: "p_field_digests", batch: "p_field_digests", type: "bytea", of: () => null },
];

/**
 * enqueue_one's parameters after the fields: the wake-up flag, then debounce's two (defaulted to
 * null), then the retry flag (default false: set from a call's second try on, so the function first
 * looks for the job an earlier try of the call committed).
 */
const ONE_TAIL = [
  { name: "p_notify", type: "boolean" },
  { name: "p_schedule", type: "text" },
  { name: "p_max_wait_ms", type: "bigint" },
  { name: "p_retry", type: "boolean" },
] as const;

/**
 * The last parameter of enqueue_one and enqueue_batch (and enqueue_one_at on Citus), after
 * everything above: the producer span's W3C traceparent, stored with the jobs the call accepts.
 * Defaulted to null in SQL, so clients that do not trace (Go, Python) omit it, and it stays out of
 * the parameter tables the cross-language conformance file shares (sdk/conformance/enqueue.json).
 */
export const ENQUEUE_TRACE_PARAM = { name: "p_trace_context", type: "text" } as const;

/**
 * After the trace context: the key's lifetime (docs/enqueue.md, "Key lifetimes"), defaulted to null
 * in SQL, so clients that predate it call as before. enqueue_batch takes an array of it
 * (`p_hold_untils`). Only a request with a lifetime sends it (and the trace context before it).
 */
export const ENQUEUE_HOLD_PARAM = { name: "p_hold_until", type: "text" } as const;

/** workhorse.enqueue_one's parameters, in order, with their SQL types. */
export const ENQUEUE_ONE_PARAMS: readonly { name: string; type: string }[] = [
  ...FIELDS.map((f) => ({ name: f.one, type: f.type })),
  ...ONE_TAIL,
];

/** workhorse.enqueue_batch's parameters, in order, with their SQL types. */
export const ENQUEUE_BATCH_PARAMS: readonly { name: string; type: string }[] = [
  ...FIELDS.flatMap((f) => {
    if (f.one === "p_payload") return [{ name: f.batch, type: "jsonb" }];
    if (f.one === "p_tags")
      return [
        { name: f.batch, type: "text[]" },
        { name: "p_tag_counts", type: "integer[]" },
      ];
    return [{ name: f.batch, type: `${f.type}[]` }];
  }),
  { name: "p_legacy_key_hashes", type: "bytea[]" },
  { name: "p_notify", type: "boolean" },
  { name: "p_schedules", type: "text[]" },
  { name: "p_max_waits", type: "bigint[]" },
  { name: "p_retry", type: "boolean" },
];

/** `$1::uuid, $2::text, …` for these parameter types, numbered from `from`. */
function placeholders(types: readonly string[], from = 1): string {
  return types.map((t, i) => `$${i + from}::${t}`).join(", ");
}

/** The columns every enqueue statement returns after the ordinal (`EnqueueRow`). */
const RESULT_COLUMNS = "job_id, outcome, request_digest, reason";
const oneCall = (count: number) =>
  `select 1 as ordinal, ${RESULT_COLUMNS}
  from workhorse.enqueue_one(${placeholders(
    [...ENQUEUE_ONE_PARAMS, ENQUEUE_TRACE_PARAM, ENQUEUE_HOLD_PARAM].slice(0, count).map((p) => p.type),
  )})`;

export const ENQUEUE_BATCH_SQL = `select ordinal, ${RESULT_COLUMNS}
  from workhorse.enqueue_batch(${placeholders(
    [...ENQUEUE_BATCH_PARAMS, ENQUEUE_TRACE_PARAM, { name: "p_hold_untils", type: "text[]" }].map((p) => p.type),
  )})`;
/** Idempotency and throttle: the fields and the wake-up flag. */
const ENQUEUE_ONE_SQL = oneCall(FIELDS.length + 1);
/** Debounce: the idempotency call plus schedule and max wait. */
const ENQUEUE_DEBOUNCE_SQL = oneCall(FIELDS.length + 3);
/** A retry, any mode: every parameter up to the retry flag. */
const ENQUEUE_RETRY_SQL = oneCall(FIELDS.length + 4);
/** A call inside a sampled span, any mode, first try or not: every parameter, the trace context last. */
const ENQUEUE_TRACED_SQL = oneCall(FIELDS.length + 5);
/** A request with a key lifetime, any mode, traced or not: every parameter, the lifetime last. */
const ENQUEUE_HOLD_SQL = oneCall(FIELDS.length + 6);

/** The 1-based position of a field's parameter in enqueue_one. */
const paramOf = (one: string): number => FIELDS.findIndex((f) => f.one === one) + 1;

// While pre-HMAC bindings can be live, the legacy hash travels as one more parameter, after the call's own.
const legacyProbe = (sql: string, count: number) =>
  withLegacyProbe(sql, { scope: paramOf("p_scope"), keyHash: paramOf("p_key_hash"), legacy: count + 1 });
const ENQUEUE_ONE_LEGACY_SQL = legacyProbe(ENQUEUE_ONE_SQL, FIELDS.length + 1);
const ENQUEUE_DEBOUNCE_LEGACY_SQL = legacyProbe(ENQUEUE_DEBOUNCE_SQL, FIELDS.length + 3);
const ENQUEUE_RETRY_LEGACY_SQL = legacyProbe(ENQUEUE_RETRY_SQL, FIELDS.length + 4);
const ENQUEUE_TRACED_LEGACY_SQL = legacyProbe(ENQUEUE_TRACED_SQL, FIELDS.length + 5);
const ENQUEUE_HOLD_LEGACY_SQL = legacyProbe(ENQUEUE_HOLD_SQL, FIELDS.length + 6);

/**
 * The statement (and its cached-plan name) for one request; `retry` from a call's second try on;
 * `traced` when the call carries a trace context (untraced calls keep their shorter statements).
 */
export function oneRequestStatement(
  r: NormalizedRequest,
  retry = false,
  traced = false,
): { name: string; text: string } {
  const legacy = !!r.keyed?.key.legacyKeyHash;
  if (r.keyed?.holdUntil) {
    return legacy
      ? { name: "workhorse_enqueue_hold_legacy", text: ENQUEUE_HOLD_LEGACY_SQL }
      : { name: "workhorse_enqueue_hold", text: ENQUEUE_HOLD_SQL };
  }
  if (traced) {
    return legacy
      ? { name: "workhorse_enqueue_traced_legacy", text: ENQUEUE_TRACED_LEGACY_SQL }
      : { name: "workhorse_enqueue_traced", text: ENQUEUE_TRACED_SQL };
  }
  if (retry) {
    return legacy
      ? { name: "workhorse_enqueue_retry_legacy", text: ENQUEUE_RETRY_LEGACY_SQL }
      : { name: "workhorse_enqueue_retry", text: ENQUEUE_RETRY_SQL };
  }
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
// ($1), which is also written into the job id (see bucketedId); the literal 1 is the ordinal.
export const ENQUEUE_ONE_AT_SQL = `select 1 as ordinal, ${RESULT_COLUMNS}
  from workhorse.enqueue_one_at($1::integer, 1, ${placeholders(
    [...ENQUEUE_ONE_PARAMS, ENQUEUE_TRACE_PARAM, ENQUEUE_HOLD_PARAM].map((p) => p.type),
    2,
  )})`;

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

/**
 * workhorse.enqueue_one's parameters, all of them: the fields in FIELDS order, then notify,
 * debounce's schedule and cap, retry, trace and the key's lifetime.
 */
function enqueueOneValues(r: NormalizedRequest, id: string, notify: boolean, retry: boolean, trace: string | null) {
  const k = r.keyed;
  const debounce = k?.mode === "debounce" ? k : null;
  return [
    ...FIELDS.map((f) => f.of(r, id)),
    notify,
    debounce?.schedule ?? null,
    debounce?.maxWaitMs ?? null,
    retry,
    trace,
    k?.holdUntil ?? null,
  ];
}

/**
 * Parameters of the statement oneRequestStatement(r, retry, trace !== null) chose: enqueue_one's
 * up to the last optional one it passes (the rest take their defaults), then the legacy key hash.
 */
export function oneRequestValues(
  r: NormalizedRequest,
  id: string,
  notify: boolean,
  retry = false,
  trace: string | null = null,
): unknown[] {
  const k = r.keyed;
  const optional = k?.holdUntil ? 5 : trace !== null ? 4 : retry ? 3 : k?.mode === "debounce" ? 2 : 0;
  const values = enqueueOneValues(r, id, notify, retry, trace).slice(0, FIELDS.length + 1 + optional);
  if (k?.key.legacyKeyHash) values.push(k.key.legacyKeyHash);
  return values;
}

/** Parameters of workhorse.enqueue_one_at() (distributed layout): the bucket, then enqueue_one's, all of them. */
export function distributedOneValues(...a: Parameters<typeof oneRequestValues>): unknown[] {
  const [r, id, notify, retry = false, trace = null] = a;
  return [idBucket(id), ...enqueueOneValues(r, id, notify, retry, trace)];
}

/** Parameters of workhorse.enqueue_batch(): one typed array per field (ENQUEUE_BATCH_PARAMS), input order. */
export function batchValues(
  requests: readonly NormalizedRequest[],
  ids: readonly string[],
  notify: boolean,
  retry = false,
  trace: string | null = null,
): unknown[] {
  const n = requests.length;
  const values: unknown[] = [];
  for (const f of FIELDS) {
    if (f.one === "p_payload") {
      values.push(`[${requests.map((r) => r.payloadJson).join(",")}]`);
    } else if (f.one === "p_tags") {
      values.push(requests.flatMap((r) => r.tags));
      values.push(requests.map((r) => r.tags.length));
    } else {
      const column = new Array<unknown>(n);
      for (let i = 0; i < n; i++) column[i] = f.of(requests[i] as NormalizedRequest, ids[i] as string);
      values.push(column);
    }
  }
  // Sent only when some request needs them (null otherwise).
  const legacy = requests.some((r) => r.keyed?.key.legacyKeyHash)
    ? requests.map((r) => r.keyed?.key.legacyKeyHash ?? null)
    : null;
  const debounce = requests.some((r) => r.keyed?.mode === "debounce");
  values.push(
    legacy,
    notify,
    debounce ? requests.map((r) => (r.keyed?.mode === "debounce" ? r.keyed.schedule : null)) : null,
    debounce ? requests.map((r) => (r.keyed?.mode === "debounce" ? r.keyed.maxWaitMs : null)) : null,
    retry,
    trace,
    requests.some((r) => r.keyed?.holdUntil) ? requests.map((r) => r.keyed?.holdUntil ?? null) : null,
  );
  return values;
}

/**
 * One round trip: the scalar function for one request, the set-based one for a batch; on Citus the
 * request's bucket goes into its job id (`ids`, in place) and one request is `enqueue_one_at`.
 */
export async function enqueueRows(
  sql: Sql,
  requests: NormalizedRequest[],
  ids: string[],
  notifyInside: boolean,
  retry: boolean,
  trace: string | null = null,
): Promise<EnqueueRow[]> {
  const distributed = (await layoutOf(sql)) === "distributed";
  // Citus: a keyed job lives in its key's bucket; an unkeyed one in the random bucket its id has.
  if (distributed) bucketIds(requests, ids);
  // One request: the scalar hot path (a named statement, so its plan is cached per connection).
  // A batch: one set-based statement; left unnamed so each batch is planned for its own size.
  // Both are read as text rows, without Describe (text-rows.ts).
  const one = requests.length === 1 ? (requests[0] as NormalizedRequest) : null;
  let statement: TextRowsStatement<EnqueueRow>;
  if (!one) {
    statement = new TextRowsStatement(
      "",
      ENQUEUE_BATCH_SQL,
      batchValues(requests, ids, notifyInside, retry, trace),
      enqueueRowOf,
    );
  } else if (distributed) {
    const values = distributedOneValues(one, ids[0] as string, notifyInside, retry, trace);
    statement = new TextRowsStatement("workhorse_enqueue_one_at", ENQUEUE_ONE_AT_SQL, values, enqueueRowOf);
  } else {
    const { name, text } = oneRequestStatement(one, retry, trace !== null);
    const values = oneRequestValues(one, ids[0] as string, notifyInside, retry, trace);
    statement = new TextRowsStatement(name, text, values, enqueueRowOf);
  }
  return (await sql.query<EnqueueRow>(statement)).rows;
}

/** An enqueue statement's row (`ordinal, ${RESULT_COLUMNS}`) from its text fields. */
function enqueueRowOf(f: TextFields): EnqueueRow {
  return {
    ordinal: Number(f[0]),
    job_id: String(f[1]),
    outcome: f[2] as EnqueueOutcome,
    request_digest: f[3] ?? null,
    reason: (f[4] ?? null) as NonReplaceableReason | null,
  };
}

/**
 * The contenders: Workhorse (lib/enqueue), the physical floor, pg-boss, graphile-worker and BullMQ.
 * Each gets a fresh database on the same server (BullMQ-on-Redis gets a private redis-server) and
 * exposes the same four operations, so every scenario times like against like:
 *
 * - accept(i):  a keyed request with a key never seen before
 * - replay(i):  the same request again for one of REPLAY_KEYS live keys
 * - conflict(i): same live key, different payload (ours only: the peers have no such outcome)
 * - batch(i):   BATCH_SIZE keyed requests in one call, half new keys, half live keys
 * - debounce(i): a debounce repeat on one of REPLAY_KEYS live keys whose job is pending (a new
 *   payload each call): ours `replaced`; pg-boss sendDebounced; BullMQ deduplication in debounce mode
 *   (extend + replace, delayed by the window)
 * - throttle(i): a throttle repeat of the same request on one of REPLAY_KEYS live keys: ours
 *   `coalesced`; pg-boss sendThrottled; BullMQ deduplication in throttle mode (a ttl)
 */
import { createHash, randomBytes } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { EnqueueRequest } from "@workhorse/core";
import * as core from "@workhorse/core";
import pg from "pg";
import { v7 as uuidv7 } from "uuid";
import { LEAN_TABLES } from "./lib/lean-tables";

export const REPLAY_KEYS = 1000;
export const BATCH_SIZE = 1000;
/** Callers share one pool of this many connections (the 8-caller scenarios saturate it). */
export const POOL_MAX = 8;

export type Op = (i: number) => Promise<unknown>;

/** A pool that reports (rather than crashes on) errors of idle clients, e.g. at server shutdown. */
export function benchPool(config: pg.PoolConfig, label: string): pg.Pool {
  const pool = new pg.Pool(config);
  pool.on("error", (err) => process.stderr.write(`[bench] ${label}: idle client error: ${err.message}\n`));
  return pool;
}

export interface Contender {
  id: string;
  label: string;
  /** Runs on PostgreSQL (WAL is measured) or not (Redis). */
  postgres: boolean;
  accept?: Op;
  replay?: Op;
  conflict?: Op;
  batch?: Op;
  debounce?: Op;
  throttle?: Op;
  /** What the debounce / throttle rows call this contender (its API for that scenario). */
  labels?: { debounce?: string; throttle?: string };
  /** Binds REPLAY_KEYS live keys for replay, conflict and the batch's repeated half. */
  prepare(): Promise<void>;
  /** Called after each timed segment, outside the clock (e.g. flush buffered writes before the WAL reading). */
  settle?(): Promise<void>;
  close(): Promise<void>;
}

export interface ContenderContext {
  /** URL of a fresh, empty database for this contender. */
  database(name: string): Promise<string>;
  redis: { host: string; port: number } | null;
}

const RUN = randomBytes(3).toString("hex");

/** A realistic small payload (~100 bytes of JSON), a function of the key so replays repeat it exactly. */
export function payloadFor(n: string) {
  return { invoiceId: `INV-${n}`, amount: 4200, currency: "EUR", customer: `cus_${n}`, lines: [1, 2, 3] };
}

function newKey(prefix: string, i: number): string {
  return `${prefix}-${RUN}-${i}`;
}
function liveKey(i: number): string {
  return `live-${RUN}-${i % REPLAY_KEYS}`;
}
/** Debounce and throttle keys, bound by prepare() (a window of WINDOW_MS: they stay live). */
function debounceKey(i: number): string {
  return `debounce-${RUN}-${i % REPLAY_KEYS}`;
}
function throttleKey(i: number): string {
  return `throttle-${RUN}-${i % REPLAY_KEYS}`;
}
const WINDOW_MS = 3_600_000;
/** A debounced request: the same document, a new edit each call. */
function editFor(key: string, i: number) {
  return { ...payloadFor(key), edit: i };
}

/** Batch b: BATCH_SIZE/2 new keys and BATCH_SIZE/2 live keys, interleaved. */
function batchKeys(b: number, next: () => number): { key: string; fresh: boolean }[] {
  const out: { key: string; fresh: boolean }[] = [];
  for (let j = 0; j < BATCH_SIZE; j++) {
    if (j % 2 === 0) out.push({ key: newKey("batch", next()), fresh: true });
    else out.push({ key: liveKey(b * (BATCH_SIZE / 2) + (j >> 1)), fresh: false });
  }
  return out;
}

function counter(): () => number {
  let n = 0;
  return () => n++;
}

// ---------------------------------------------------------------------------------------------
// Workhorse
// ---------------------------------------------------------------------------------------------

export async function ours(
  ctx: ContenderContext,
  opts: {
    id?: string;
    label?: string;
    notify?: boolean;
    /** SQL run after the migrations, in this contender's database only (a core prototype). */
    setupSql?: string;
    /** A patched copy of lib/enqueue (a client-side prototype); default the real one. */
    module?: string;
    /** QueueOptions.coalesce; default the shipped default. */
    coalesce?: false | { maxStatements?: number };
    /** QueueOptions.telemetry (an installed OpenTelemetry SDK); default none (the API's no-ops). */
    telemetry?: core.QueueOptions["telemetry"];
    /** Called by close(), after the queue closed (e.g. to shut an SDK's reader down). */
    onClose?: () => Promise<void>;
  } = {},
): Promise<Contender> {
  const { EnqueueIdempotencyConflictError, migrate, Queue } = (
    opts.module ? await import(opts.module) : core
  ) as typeof core;
  const url = await ctx.database(`bench_${(opts.id ?? "ours").replace(/\W/g, "_")}`);
  const pool = benchPool({ connectionString: url, max: POOL_MAX }, opts.id ?? "ours");
  await migrate(pool);
  if (opts.setupSql) await pool.query(opts.setupSql);
  const queue = new Queue({
    pool,
    maintenance: false,
    notify: opts.notify ?? true,
    ...(opts.coalesce === undefined ? {} : { coalesce: opts.coalesce }),
    ...(opts.telemetry === undefined ? {} : { telemetry: opts.telemetry }),
  });
  const options = (key: string) => ({ queue: "billing", idempotency: { key, scope: "invoice-capture" } });
  const debounced = (key: string) => ({
    queue: "search",
    debounce: { key, scope: "search-index", windowMs: WINDOW_MS },
  });
  const throttled = (key: string) => ({ queue: "notices", throttle: { key, scope: "shipped", windowMs: WINDOW_MS } });
  const nextNew = counter();
  const nextBatchNew = counter();
  return {
    id: opts.id ?? "ours",
    label: opts.label ?? "Workhorse",
    postgres: true,
    accept: () => {
      const k = newKey("accept", nextNew());
      return queue.enqueue("invoice.capture", payloadFor(k), options(k));
    },
    replay: (i) => {
      const k = liveKey(i);
      return queue.enqueue("invoice.capture", payloadFor(k), options(k));
    },
    conflict: async (i) => {
      const k = liveKey(i);
      try {
        await queue.enqueue("invoice.capture", { ...payloadFor(k), amount: 4300 }, options(k));
      } catch (err) {
        if (err instanceof EnqueueIdempotencyConflictError) return;
        throw err;
      }
      throw new Error("expected an idempotency conflict");
    },
    debounce: async (i) => {
      const k = debounceKey(i);
      const r = await queue.enqueueWithResult("search.reindex", editFor(k, i), debounced(k));
      if (r.outcome !== "replaced") throw new Error(`expected replaced, got ${r.outcome}`);
    },
    throttle: async (i) => {
      const k = throttleKey(i);
      const r = await queue.enqueueWithResult("order.shipped", payloadFor(k), throttled(k));
      if (r.outcome !== "coalesced") throw new Error(`expected coalesced, got ${r.outcome}`);
    },
    batch: (b) => {
      const requests: EnqueueRequest[] = batchKeys(b, nextBatchNew).map(({ key }) => ({
        type: "invoice.capture",
        payload: payloadFor(key),
        options: options(key),
      }));
      return queue.enqueueMany(requests);
    },
    async prepare() {
      for (let i = 0; i < REPLAY_KEYS; i += BATCH_SIZE) {
        const requests: EnqueueRequest[] = [];
        for (let j = i; j < Math.min(REPLAY_KEYS, i + BATCH_SIZE); j++) {
          const k = liveKey(j);
          requests.push({ type: "invoice.capture", payload: payloadFor(k), options: options(k) });
        }
        await queue.enqueueMany(requests);
      }
      for (let i = 0; i < REPLAY_KEYS; i += BATCH_SIZE) {
        const requests: EnqueueRequest[] = [];
        for (let j = i; j < Math.min(REPLAY_KEYS, i + BATCH_SIZE); j++) {
          requests.push({
            type: "search.reindex",
            payload: editFor(debounceKey(j), -1),
            options: debounced(debounceKey(j)),
          });
          requests.push({
            type: "order.shipped",
            payload: payloadFor(throttleKey(j)),
            options: throttled(throttleKey(j)),
          });
        }
        for (let b = 0; b < requests.length; b += BATCH_SIZE)
          await queue.enqueueMany(requests.slice(b, b + BATCH_SIZE));
      }
    },
    settle: () => queue.flushObservations(),
    async close() {
      await queue.close();
      await opts.onClose?.();
      await pool.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The floor: one durable row like a job row, no keys, no logic
// ---------------------------------------------------------------------------------------------

const FLOOR_TABLE = `create table floor_job (
  id uuid primary key, queue text not null, type text not null, payload jsonb not null, state text not null,
  run_at timestamptz not null default now(), created_at timestamptz not null default now())`;

export async function floor(ctx: ContenderContext): Promise<Contender> {
  const url = await ctx.database("bench_floor");
  const pool = benchPool({ connectionString: url, max: POOL_MAX }, "floor");
  await pool.query(FLOOR_TABLE);
  const liveIds = Array.from({ length: REPLAY_KEYS }, () => uuidv7());
  const insert = (id: string, key: string, onConflict: boolean) =>
    pool.query({
      name: onConflict ? "floor_insert_dup" : "floor_insert",
      text: `insert into floor_job (id, queue, type, payload, state) values ($1::uuid, $2, $3, $4::jsonb, 'ready')${
        onConflict ? " on conflict (id) do nothing" : ""
      }`,
      values: [id, "billing", "invoice.capture", JSON.stringify(payloadFor(key))],
    });
  const nextNew = counter();
  const nextBatchNew = counter();
  return {
    id: "floor",
    label: "floor: INSERT (replay: ON CONFLICT DO NOTHING)",
    postgres: true,
    accept: () => insert(uuidv7(), newKey("accept", nextNew()), false),
    replay: (i) => insert(liveIds[i % REPLAY_KEYS] as string, liveKey(i), true),
    batch: (b) => {
      const rows = batchKeys(b, nextBatchNew);
      const ids = rows.map((r, j) =>
        r.fresh ? uuidv7() : (liveIds[(b * (BATCH_SIZE / 2) + j) % REPLAY_KEYS] as string),
      );
      return pool.query({
        name: "floor_batch",
        text: `insert into floor_job (id, queue, type, payload, state)
               select id, 'billing', 'invoice.capture', p, 'ready' from unnest($1::uuid[], $2::jsonb[]) as t(id, p)
               on conflict (id) do nothing`,
        values: [ids, rows.map((r) => JSON.stringify(payloadFor(r.key)))],
      });
    },
    async prepare() {
      await pool.query(
        `insert into floor_job (id, queue, type, payload, state)
         select id, 'billing', 'invoice.capture', '{}'::jsonb, 'ready' from unnest($1::uuid[]) id`,
        [liveIds],
      );
    },
    async close() {
      await pool.end();
    },
  };
}

/**
 * The lean two-row shape (docs/benchmarks.md, "Server-side shapes") through the same driver and
 * pool as every contender: the ceiling of the design the write path moves to, so each Workhorse
 * ratio can be read against it in one run. Plain-typed copies of the tables (LEAN_TABLES), the key
 * hash (SHA-256 of the key) and constant field and request digests computed here, and one prepared
 * statement per call: accept binds the key and writes the job (ON CONFLICT DO NOTHING; no outcome);
 * replay reads the binding by primary key; batch binds the new half of 1,000 keys and writes their
 * jobs, and reads the other half's bindings, in one statement. It decides nothing the core decides
 * (no digest comparison, no conflict, no bounds) and answers no outcome: a ceiling, not a peer.
 */
export async function leanShape(ctx: ContenderContext): Promise<Contender> {
  const url = await ctx.database("bench_lean_shape");
  const pool = benchPool({ connectionString: url, max: POOL_MAX }, "lean-shape");
  await core.migrate(pool);
  await pool.query(LEAN_TABLES);
  const hashOf = (key: string) => createHash("sha256").update(key).digest();
  const fields = Buffer.alloc(88, 0xab);
  const digest = Buffer.alloc(32, 0xcd);
  const nextNew = counter();
  const nextBatchNew = counter();
  const accept = (id: string, key: string) =>
    pool.query({
      name: "lean_accept",
      text: `with b as (
          insert into lean.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                        request_digest, ttl_ms, expires_at)
          values ('invoice-capture', $1, $2, 'idempotency', 'ab…', 20, $3, $4, 86400000, now() + interval '1 day')
          on conflict do nothing returning job_id, key_hash)
        insert into lean.job (id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash, key_mode,
                              key_preview, key_length, key_ttl_ms, request_digest, tags)
        select b.job_id, 'billing', 'invoice.capture', $5::jsonb, 'ready', now(), 25, 'invoice-capture', b.key_hash,
               'idempotency', 'ab…', 20, 86400000, $4, '{}' from b`,
      values: [hashOf(key), id, fields, digest, JSON.stringify(payloadFor(key))],
    });
  return {
    id: "lean-shape",
    label: "lean two-row shape (the design's ceiling: no decision, no outcome)",
    postgres: true,
    accept: () => {
      const k = newKey("accept", nextNew());
      return accept(uuidv7(), k);
    },
    replay: (i) =>
      pool.query({
        name: "lean_probe",
        text: `select job_id, mode, field_digests, request_digest, expires_at > now() as live
                 from lean.key_binding where scope = 'invoice-capture' and key_hash = $1`,
        values: [hashOf(liveKey(i))],
      }),
    batch: (b) => {
      const rows = batchKeys(b, nextBatchNew)
        .map((r) => ({ ...r, hash: hashOf(r.key) }))
        .sort((x, y) => Buffer.compare(x.hash, y.hash)); // keys in index order, as the core sends them
      return pool.query({
        name: "lean_batch",
        text: `with req as (select * from unnest($1::uuid[], $2::bytea[], $3::jsonb[]) as r(id, key_hash, payload)),
            old as (select b.job_id, b.request_digest from req r
                      join lean.key_binding b on b.scope = 'invoice-capture' and b.key_hash = r.key_hash),
            bound as (
              insert into lean.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                            request_digest, ttl_ms, expires_at)
              select 'invoice-capture', r.key_hash, r.id, 'idempotency', 'ab…', 20, $4, $5, 86400000,
                     now() + interval '1 day' from req r
              on conflict do nothing returning job_id, key_hash),
            jobs as (
              insert into lean.job (id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash,
                                    key_mode, key_preview, key_length, key_ttl_ms, request_digest, tags)
              select b.job_id, 'billing', 'invoice.capture', r.payload, 'ready', now(), 25, 'invoice-capture',
                     b.key_hash, 'idempotency', 'ab…', 20, 86400000, $5, '{}'
                from bound b join req r on r.id = b.job_id returning id)
          select (select count(*) from jobs) as accepted, (select count(*) from old) as bound_before`,
        values: [
          rows.map(() => uuidv7()),
          rows.map((r) => r.hash),
          rows.map((r) => JSON.stringify(payloadFor(r.key))),
          fields,
          digest,
        ],
      });
    },
    async prepare() {
      const keys = Array.from({ length: REPLAY_KEYS }, (_, i) => liveKey(i));
      for (const k of keys) await accept(uuidv7(), k);
    },
    async close() {
      await pool.end();
    },
  };
}

/**
 * Workhorse with the OpenTelemetry metrics SDK installed: a MeterProvider whose periodic reader
 * exports every second to an in-memory exporter (the cost of recording and of a running reader,
 * without a network). Spans stay off (the API's no-op tracer), as with metrics-only deployments.
 */
export async function oursWithMetricsSdk(ctx: ContenderContext): Promise<Contender> {
  const { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } = await import(
    "@opentelemetry/sdk-metrics"
  );
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 1000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return ours(ctx, {
    id: "ours-otel",
    label: "Workhorse with the OpenTelemetry metrics SDK (reader every 1 s)",
    telemetry: { meterProvider },
    onClose: () => meterProvider.shutdown(),
  });
}

/** `text` with `from` replaced by `to`, or an error naming `file` when `from` is not in it (the core changed). */
function replaceOnce(file: string, text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`ours-uninstrumented: ${file} no longer contains the code it replaces`);
  return text.replace(from, to);
}

/**
 * A copy of lib/enqueue without its telemetry calls, made in a temporary directory (its
 * node_modules a link to the project's): the enqueue path's `traced` (enqueue-call.ts; coalesced
 * calls go through it too) runs the decision directly, with no span, clock read or recorder, and
 * every method of QueueTelemetry (telemetry.ts) is an empty function. Returns its index module
 * and a function that deletes the copy.
 */
function uninstrumentedCore(): { module: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "workhorse-uninstrumented-"));
  const core = path.join(dir, "enqueue");
  cpSync(path.join(process.cwd(), "lib", "enqueue"), core, { recursive: true });
  symlinkSync(realpathSync(path.join(process.cwd(), "node_modules")), path.join(dir, "node_modules"), "dir");
  const call = path.join(core, "enqueue-call.ts");
  writeFileSync(
    call,
    replaceOnce(
      "enqueue-call.ts",
      readFileSync(call, "utf8"),
      `  const telemetry = view.context.telemetry;
  const startedAt = performance.now();
  const span = telemetry.startSend(requests);
  try {
    const results = await fn(traceparentOf(span));
    telemetry.sendSucceeded(span, startedAt, requests, results);
    return results;
  } catch (err) {
    telemetry.sendFailed(span, startedAt, requests, err);
    throw err;
  }`,
      "  void view;\n  void requests;\n  void traceparentOf;\n  return fn(null);",
    ),
  );
  const tel = path.join(core, "telemetry.ts");
  writeFileSync(
    tel,
    `${replaceOnce("telemetry.ts", readFileSync(tel, "utf8"), "export class QueueTelemetry {", "export class QueueTelemetry {")}
// ours-uninstrumented (bench/contenders.ts): every recorder does nothing.
for (const name of Object.getOwnPropertyNames(QueueTelemetry.prototype)) {
  if (name !== "constructor") Object.defineProperty(QueueTelemetry.prototype, name, { value: () => {} });
}
`,
  );
  return { module: path.join(core, "index.ts"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Workhorse with its core's telemetry calls removed (uninstrumentedCore), no SDK: beside `ours`
 * (the same core with the calls, no SDK: the API's no-ops) it shows what the instrumentation
 * costs when nobody installed an SDK.
 */
export async function oursUninstrumented(ctx: ContenderContext): Promise<Contender> {
  const copy = uninstrumentedCore();
  try {
    return await ours(ctx, {
      id: "ours-uninstrumented",
      label: "Workhorse with the telemetry calls removed (no spans, no recorders)",
      module: copy.module,
      onClose: async () => copy.remove(),
    });
  } catch (err) {
    copy.remove();
    throw err;
  }
}

/**
 * The batched floor: the floor's one-row INSERT, with concurrent calls sharing a statement the way
 * Workhorse's smart batching shares one (QueueOptions.coalesce): at most `maxStatements` in flight,
 * calls that arrive meanwhile wait and go together as one multi-row INSERT. Accept only; it shows
 * what coalescing alone buys, so a coalesced Workhorse is not mistaken for a cheaper INSERT.
 */
export async function floorBatched(ctx: ContenderContext, maxStatements: number): Promise<Contender> {
  const url = await ctx.database("bench_floor_batched");
  const pool = benchPool({ connectionString: url, max: POOL_MAX }, "floor-batched");
  await pool.query(FLOOR_TABLE);
  const nextNew = counter();
  let inFlight = 0;
  let waiting: { payload: string; done: (err?: unknown) => void }[] = [];
  const pump = () => {
    while (inFlight < maxStatements && waiting.length > 0) {
      const group = waiting.splice(0, 100);
      inFlight++;
      pool
        .query({
          name: "floor_batched",
          text: `insert into floor_job (id, queue, type, payload, state)
                 select id, 'billing', 'invoice.capture', p, 'ready' from unnest($1::uuid[], $2::jsonb[]) as t(id, p)`,
          values: [group.map(() => uuidv7()), group.map((w) => w.payload)],
        })
        .then(
          () => {
            for (const w of group) w.done();
          },
          (err: unknown) => {
            for (const w of group) w.done(err);
          },
        )
        .finally(() => {
          inFlight--;
          pump();
        });
    }
  };
  return {
    id: `floor-batched`,
    label: `batched floor: concurrent INSERTs share one multi-row INSERT (${maxStatements} in flight)`,
    postgres: true,
    accept: () =>
      new Promise<void>((resolve, reject) => {
        const k = newKey("accept", nextNew());
        waiting.push({ payload: JSON.stringify(payloadFor(k)), done: (err) => (err ? reject(err) : resolve()) });
        pump();
      }),
    async prepare() {
      waiting = [];
    },
    async close() {
      await pool.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// pg-boss 10: send with singletonKey on a queue with policy "short"; insert for the batch
// ---------------------------------------------------------------------------------------------

export async function pgBoss(ctx: ContenderContext): Promise<Contender> {
  const { default: PgBoss } = await import("pg-boss");
  const url = await ctx.database("bench_pgboss");
  const boss = new PgBoss({ connectionString: url, max: POOL_MAX, supervise: false, schedule: false });
  boss.on("error", (e: unknown) => process.stderr.write(`[pg-boss] ${String(e)}\n`));
  await boss.start();
  const name = "invoice-capture";
  await boss.createQueue(name, { name, policy: "short" });
  // Debounce and throttle use singletonSeconds on a standard queue (the "short" policy would refuse them).
  const search = "search-reindex";
  const notices = "order-shipped";
  await boss.createQueue(search, { name: search, policy: "standard" });
  await boss.createQueue(notices, { name: notices, policy: "standard" });
  const seconds = WINDOW_MS / 1000;
  const nextNew = counter();
  const nextBatchNew = counter();
  const send = (key: string) => boss.send(name, payloadFor(key), { singletonKey: key });
  return {
    id: "pg-boss",
    label: "pg-boss send singletonKey (short)",
    postgres: true,
    accept: () => send(newKey("accept", nextNew())),
    replay: (i) => send(liveKey(i)),
    batch: (b) =>
      boss.insert(batchKeys(b, nextBatchNew).map(({ key }) => ({ name, data: payloadFor(key), singletonKey: key }))),
    labels: { debounce: "pg-boss sendDebounced", throttle: "pg-boss sendThrottled" },
    debounce: (i) => boss.sendDebounced(search, editFor(debounceKey(i), i), {}, seconds, debounceKey(i)),
    throttle: (i) => boss.sendThrottled(notices, payloadFor(throttleKey(i)), {}, seconds, throttleKey(i)),
    async prepare() {
      const jobs = Array.from({ length: REPLAY_KEYS }, (_, i) => {
        const key = liveKey(i);
        return { name, data: payloadFor(key), singletonKey: key };
      });
      await boss.insert(jobs);
      for (let i = 0; i < REPLAY_KEYS; i++) {
        await boss.sendDebounced(search, editFor(debounceKey(i), -1), {}, seconds, debounceKey(i));
        await boss.sendThrottled(notices, payloadFor(throttleKey(i)), {}, seconds, throttleKey(i));
      }
    },
    async close() {
      await boss.stop({ graceful: false, close: true, wait: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// graphile-worker 0.17: addJob with jobKey (preserve_run_at); addJobs for the batch
// ---------------------------------------------------------------------------------------------

export async function graphileWorker(ctx: ContenderContext, customPlan: boolean): Promise<Contender> {
  const { makeWorkerUtils, Logger } = await import("graphile-worker");
  const url = await ctx.database(customPlan ? "bench_graphile_custom" : "bench_graphile");
  const pool = benchPool(
    {
      connectionString: url,
      max: POOL_MAX,
      ...(customPlan ? { options: "-c plan_cache_mode=force_custom_plan" } : {}),
    },
    "graphile-worker",
  );
  const logger = new Logger(() => () => {});
  const utils = await makeWorkerUtils({ pgPool: pool, logger });
  await utils.migrate();
  const nextNew = counter();
  const nextBatchNew = counter();
  const add = (key: string) =>
    utils.addJob("invoice_capture", payloadFor(key), { jobKey: key, jobKeyMode: "preserve_run_at" });
  return {
    id: customPlan ? "graphile-custom" : "graphile",
    label: customPlan ? "graphile-worker addJob jobKey (custom plans)" : "graphile-worker addJob jobKey",
    postgres: true,
    accept: () => add(newKey("accept", nextNew())),
    replay: (i) => add(liveKey(i)),
    batch: (b) =>
      utils.addJobs(
        batchKeys(b, nextBatchNew).map(({ key }) => ({
          identifier: "invoice_capture",
          payload: payloadFor(key),
          jobKey: key,
        })),
        true,
      ),
    async prepare() {
      await utils.addJobs(
        Array.from({ length: REPLAY_KEYS }, (_, i) => ({
          identifier: "invoice_capture",
          payload: payloadFor(liveKey(i)),
          jobKey: liveKey(i),
        })),
        true,
      );
    },
    async close() {
      await utils.release();
      await pool.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// BullMQ 6.7: add with jobId, on its PostgreSQL backend and on Redis; addBulk for the batch
// ---------------------------------------------------------------------------------------------

export async function bullmq(ctx: ContenderContext, backend: "postgres" | "redis"): Promise<Contender> {
  const { Queue: BullQueue, createPostgresBackend } = await import("bullmq");
  const name = "invoice-capture";
  // biome-ignore lint/suspicious/noExplicitAny: BullMQ's Queue is generic over its backend; both shapes share add/addBulk/close.
  let q: any;
  if (backend === "postgres") {
    const url = await ctx.database("bench_bullmq");
    q = new BullQueue(
      name,
      { connection: { connectionString: url, max: POOL_MAX, migrate: true } },
      createPostgresBackend,
    );
  } else {
    if (!ctx.redis) throw new Error("no Redis");
    q = new BullQueue(name, { connection: { host: ctx.redis.host, port: ctx.redis.port, maxRetriesPerRequest: null } });
  }
  await q.waitUntilReady();
  const nextNew = counter();
  const nextBatchNew = counter();
  const add = (key: string) => q.add("invoice.capture", payloadFor(key), { jobId: key });
  // Debounce mode: each repeat replaces the delayed job and extends the ttl; throttle mode: a ttl only.
  const debounce = (i: number) =>
    q.add("search.reindex", editFor(debounceKey(i), i), {
      delay: WINDOW_MS,
      deduplication: { id: debounceKey(i), ttl: WINDOW_MS, extend: true, replace: true },
    });
  const throttle = (i: number) =>
    q.add("order.shipped", payloadFor(throttleKey(i)), { deduplication: { id: throttleKey(i), ttl: WINDOW_MS } });
  return {
    id: backend === "postgres" ? "bullmq-pg" : "bullmq-redis",
    label: backend === "postgres" ? "BullMQ add jobId (PostgreSQL)" : "BullMQ add jobId (Redis, in memory)",
    postgres: backend === "postgres",
    accept: () => add(newKey("accept", nextNew())),
    replay: (i) => add(liveKey(i)),
    batch: (b) =>
      q.addBulk(
        batchKeys(b, nextBatchNew).map(({ key }) => ({
          name: "invoice.capture",
          data: payloadFor(key),
          opts: { jobId: key },
        })),
      ),
    debounce,
    throttle,
    labels: {
      debounce: `BullMQ deduplication, debounce mode (${backend === "postgres" ? "PostgreSQL" : "Redis"})`,
      throttle: `BullMQ deduplication, throttle mode (${backend === "postgres" ? "PostgreSQL" : "Redis"})`,
    },
    async prepare() {
      await q.addBulk(
        Array.from({ length: REPLAY_KEYS }, (_, i) => ({
          name: "invoice.capture",
          data: payloadFor(liveKey(i)),
          opts: { jobId: liveKey(i) },
        })),
      );
      for (let i = 0; i < REPLAY_KEYS; i++) {
        await debounce(i);
        await throttle(i);
      }
    },
    async close() {
      await q.close();
    },
  };
}

/**
 * Read surface and maintenance on a seeded database: N jobs (each with its key; failed ones with an
 * error), N bindings (half expired), N/2 observations, 3 % of N debounce `replaced` events, 30 days
 * of the run-time rollups (hours, days, failures) and 225 worker heartbeats, seeded with set-based
 * SQL. Times every console read (p50/p95 over `runs` each) with one EXPLAIN (ANALYZE, BUFFERS) of
 * each statement a read runs, and `pruneExpiredBindings` while 8 callers keep enqueueing.
 *
 * The reads are the console's read models (lib/console) when this process may import them, else
 * SQL equivalent to theirs and the store functions they call.
 *
 * Several databases (`fleetSurface`, and this file run on its own with `--fleet`): that many
 * databases seeded alike, and the fleet page's read and the find by key and by digest across them
 * (lib/console: readFleet, findKeyEverywhere, findDigestEverywhere, as the pages call them) timed
 * against the same read of each database alone; the target is a p95 under 2x the slowest single
 * database's p95 of the same kind:
 *
 *   npx tsx --conditions=react-server bench/read-surface.ts --fleet [--rows=1000000] [--databases=3] [--runs=200]
 */
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { migrate, Queue } from "@workhorse/core";
import type pg from "pg";
import { bindingScopes, deadLetterGroupRows } from "../lib/store/console/reads";
import { replacedListRows } from "../lib/store/console/replaced";
import { payloadSearchRows } from "../lib/store/console/search";
import { workerHeartbeatRows } from "../lib/store/console/status";
import { jobIdsEndingWith } from "../lib/store/core/jobs";
import { rollupRunTimesBatch } from "../lib/store/core/runtime-rollups";
import { uuidv7Floor } from "../lib/store/ids";
import { sqlOf } from "../lib/store/layout";
import { benchPool } from "./contenders";
import { startBenchServer } from "./lib/env";
import { percentile, rng, runUntil, type Summary, shuffled, summarize } from "./lib/measure";

export const QUEUES = ["default", "billing", "email", "reports"] as const;
export const SCOPES = ["invoice-capture", "email-send", "report-build", "webhook"] as const;

/** Seeds the three tables; returns how long each took (ms). */
export async function seed(pool: pg.Pool, n: number): Promise<Record<string, number>> {
  const timings: Record<string, number> = {};
  const time = async (label: string, sql: string, values: unknown[] = []) => {
    const t0 = performance.now();
    await pool.query(sql, values);
    timings[label] = Math.round(performance.now() - t0);
  };
  await pool.query("set maintenance_work_mem = '512MB'");
  const nowMs = Date.now();
  // Job g gets a UUIDv7 built from a timestamp 500 ms after job g-1 (so ids are time-ordered and
  // the newest is "now", one clock reading shared by every statement below so that binding g and
  // the events name job g's id); queue from the md5 of g (40/30/25/5 %), state from g mod 1000 (80 % succeeded,
  // 10 % ready, 3 % scheduled, 1 % active, 5 % failed, 0.9 % canceled, 0.1 % purged).
  const jobCte = `
    select g,
           (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid as id,
           to_timestamp(ms / 1000.0) as at,
           case when b < 102 then 'default' when b < 179 then 'billing' when b < 243 then 'email' else 'reports' end as queue,
           case when g % 1000 < 800 then 'succeeded' when g % 1000 < 900 then 'ready'
                when g % 1000 < 930 then 'scheduled' when g % 1000 < 940 then 'active'
                when g % 1000 < 990 then 'failed' when g % 1000 < 999 then 'canceled' else 'purged' end as state,
           (array['invoice-capture', 'email-send', 'report-build', 'webhook'])[1 + g % 4] as scope,
           'order-' || g as k,
           case when g % 10 = 0 then 'throttle' when g % 10 = 1 then 'debounce' else 'idempotency' end as mode
      from generate_series(1, $1::int) g,
           lateral (select $2::bigint - ($1::bigint - g) * 500 as ms,
                           md5(g::text) as h) x,
           lateral (select get_byte(decode(x.h, 'hex'), 0) as b) y`;
  // Each job carries its key (what purge, deletion and the job page use to find its binding), written
  // with the row so the table is laid out as enqueue lays it out; failed jobs (and a quarter of the
  // scheduled ones, retrying) carry an error, three names in runs of 1,000 jobs.
  await time(
    "jobs",
    `insert into workhorse.job (id, queue, type, payload, state, run_at, attempt, max_attempts, tags, created_at, updated_at,
                                started_at, finished_at, last_error, key_scope, key_hash, key_mode, key_preview,
                                key_length, key_ttl_ms, request_digest, enqueued_inline)
     select id, queue, (array['invoice.capture', 'email.send', 'report.build', 'webhook.deliver'])[1 + g % 4],
            jsonb_build_object('invoiceId', 'INV-' || g, 'amount', g % 10000, 'currency', 'EUR'),
            state, case when state = 'scheduled' then at + interval '1 day' else at end,
            case when state in ('succeeded', 'failed', 'active') then 1 else 0 end, 25,
            case when g % 7 = 0 then array['vip'] else '{}' end, at, at,
            case when state in ('succeeded', 'failed', 'active') then at end,
            case when state in ('succeeded', 'failed') then at + interval '1 second' end,
            case when state = 'failed' or (state = 'scheduled' and g % 4 = 0)
                 then jsonb_build_object('name', (array['TimeoutError', 'HttpError', 'ValidationError'])[1 + (g / 1000) % 3],
                                         'message', 'attempt failed: upstream said no') end,
            scope, sha256(convert_to(scope || chr(31) || k, 'UTF8')), mode, left(k, least(8, char_length(k) / 3)) || '…',
            char_length(k), 86400000, sha256(convert_to(k, 'UTF8')), true
       from (${jobCte}) j`,
    [n, nowMs],
  );
  // Binding g belongs to job g; odd g expired (oldest first), even g live for another 1..N/100 s.
  await time(
    "bindings",
    `insert into workhorse.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                        request_digest, ttl_ms, created_at, expires_at)
     select scope, sha256(convert_to(scope || chr(31) || k, 'UTF8')), id, mode,
            left(k, least(8, char_length(k) / 3)) || '…', char_length(k),
            substring(sha512(convert_to(k, 'UTF8')) || sha256(convert_to(k, 'UTF8')) from 1 for 88),
            sha256(convert_to(k, 'UTF8')), 86400000,
            exp - interval '1 day', exp
       from (select j.g, j.id, j.scope, j.k, j.mode,
                    case when j.g % 2 = 1 then now() - interval '1 second' - ($1::int - j.g) * interval '100 ms'
                         else now() + interval '1 hour' + j.g * interval '10 ms' end as exp
               from (${jobCte}) j) s`,
    [n, nowMs],
  );
  await time(
    "observations",
    `insert into workhorse.enqueue_observation (at, outcome, queue, type, scope, key_preview, key_digest, key_length, job_id,
                                                conflicting_fields, payload_paths, stored_request_digest,
                                                rejected_request_digest, source)
     select now() - (($1::int - g) * interval '1 second'),
            case when g % 100 < 90 then 'replayed' when g % 100 < 98 then 'conflict'
                 when g % 100 < 99 then 'coalesced' else 'non_replaceable' end,
            (array['default', 'billing', 'email', 'reports'])[1 + g % 4], 'invoice.capture',
            (array['invoice-capture', 'email-send', 'report-build', 'webhook'])[1 + g % 4],
            'order-' || left(g::text, 2) || '…', left(md5(g::text), 12), 12, null,
            case when g % 100 between 90 and 97 then array['payload'] end,
            case when g % 100 between 90 and 97 then array['$.amount'] end,
            md5(g::text) || md5(g::text), null, 'bench'
       from generate_series(1, $1::int) g`,
    [Math.floor(n / 2)],
  );
  // Debounce repeats: one in ten debounce-mode jobs (g % 10 = 1) was replaced, some of them twice
  // (3 % of N `debounced` events, 200 ms after their job's creation).
  await time(
    "debounced events",
    `insert into workhorse.job_event (job_id, at, kind, data)
     select j.id, j.at + r * interval '200 ms', 'debounced',
            jsonb_build_object('priorRequestDigest', md5(j.g::text || r), 'requestDigest', md5(j.g::text || r + 1))
       from (${jobCte}) j, generate_series(1, 1 + (j.g / 10) % 2) r
      where j.g % 100 = 1 or j.g % 100 = 51`,
    [n, nowMs],
  );
  // Run-time rollup: 30 days of hours (what maintenance keeps), 16 queue/type pairs, 8 buckets each.
  await time(
    "run-time buckets",
    `insert into workhorse.run_time_bucket (hour, queue, type, bucket, succeeded, failed)
     select date_trunc('hour', now()) - h * interval '1 hour', q, t, b, 10 + (h + b) % 90, (h * b) % 7
       from generate_series(1, 720) h, unnest(array['default', 'billing', 'email', 'reports']) q,
            unnest(array['invoice.capture', 'email.send', 'report.build', 'webhook.deliver']) t, generate_series(4, 11) b`,
  );
  // The daily rollup of those hours (whole UTC days) and the failure rollup of the seeded failed
  // jobs' finished hours, as maintenance keeps them (migration 021).
  await time(
    "run-time days",
    `insert into workhorse.run_time_day (day, queue, type, bucket, succeeded, failed)
     select date_trunc('day', hour, 'UTC'), queue, type, bucket, sum(succeeded), sum(failed)
       from workhorse.run_time_bucket where hour < date_trunc('day', now(), 'UTC') group by 1, 2, 3, 4`,
  );
  await time(
    "failure buckets",
    `insert into workhorse.failure_bucket (hour, queue, type, error_name, failed)
     select date_trunc('hour', finished_at), queue, type, coalesce(last_error ->> 'name', 'Error'), count(*)
       from workhorse.job where state = 'failed' and finished_at < date_trunc('hour', now())
      group by 1, 2, 3, 4`,
  );
  // The run-times page's window for this hour, as maintenance writes it (migration 022): the same
  // step maintenance runs, which also rolls up the last hour's seeded jobs.
  {
    const t0 = performance.now();
    await rollupRunTimesBatch({ query: (config) => pool.query(config), layout: async () => "single" });
    timings.runTimeWindow = Math.round(performance.now() - t0);
  }
  // Workers: 200 running (every fifth busy), 20 gone (missed their check-ins), 5 stopping.
  await time(
    "heartbeats",
    `insert into workhorse.worker_heartbeat (worker_id, host, pid, queues, types, concurrency, running, held, job_ids,
                                             interval_ms, status, started_at, checked_at)
     select 'worker-' || g, 'host-' || (g % 12), 1000 + g, array[(array['default', 'billing', 'email', 'reports'])[1 + g % 4]],
            null, 8, case when g % 5 = 0 then 3 else 0 end, case when g % 5 = 0 then 3 else 0 end, '{}', 5000,
            case when g > 220 then 'stopping' else 'running' end, now() - interval '2 hours',
            case when g between 201 and 220 then now() - interval '10 minutes' else now() - interval '2 seconds' end
       from generate_series(1, 225) g`,
  );
  const t0 = performance.now();
  await pool.query(
    `vacuum (analyze) workhorse.job, workhorse.key_binding, workhorse.enqueue_observation, workhorse.job_event,
                      workhorse.run_time_bucket, workhorse.run_time_day, workhorse.failure_bucket, workhorse.run_time_window,
                      workhorse.worker_heartbeat`,
  );
  timings.vacuumAnalyze = Math.round(performance.now() - t0);
  return timings;
}

export interface ReadQuery {
  id: string;
  label: string;
  /** Runs one query; `pick` is a uniform random number in [0, 1) for cursors and keys. */
  run(pick: number): Promise<unknown>;
  /** Fewer timed runs than the others (reads of tens of ms: the bench stays within its time). */
  maxRuns?: number;
  /** The SQL and a parameter set, for EXPLAIN. */
  explain?: { text: string; values: unknown[] };
  /** Or: the SQL of the last run (read models build their own; a read of several statements gives each). */
  explainLast?: () => { text: string; values: unknown[] } | { text: string; values: unknown[] }[];
}

export interface ReadResult {
  id: string;
  label: string;
  runs: number;
  p50: number;
  p95: number;
  max: number;
  plan?: string;
  sharedBuffers?: number;
}

const JOB_COLUMNS = "id, queue, type, state, run_at, attempt, max_attempts, tags, created_at";
const BINDING_COLUMNS = `scope, key_hash, job_id, mode, key_preview, key_length, created_at, expires_at,
  greatest(expires_at - now(), interval '0') as ttl_remaining`;
const OBSERVATION_COLUMNS = `id, at, outcome, reason, queue, type, scope, key_preview, key_digest, key_length, job_id,
  conflicting_fields, payload_paths, source`;

/**
 * The SQL of the statements the last read ran (`begin()` starts a read), for EXPLAIN. It passes
 * `connect` and named statements through, so the reads run as they run on the console's pool
 * (store/layout.ts `queryPrepared`: one plan per connection).
 */
interface Capturing {
  query<R extends pg.QueryResultRow>(text: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult<R>>;
  connect(): Promise<pg.PoolClient>;
  last: { text: string; values: unknown[] } | null;
  statements: { text: string; values: unknown[] }[];
  begin(): void;
}

function capturing(pool: pg.Pool): Capturing {
  const db: Capturing = {
    last: null,
    statements: [],
    begin() {
      db.statements = [];
    },
    connect: () => pool.connect(),
    query<R extends pg.QueryResultRow>(text: string | pg.QueryConfig, values: unknown[] = []) {
      const config = typeof text === "string" ? { text, values } : text;
      db.last = { text: config.text, values: (config.values as unknown[] | undefined) ?? [] };
      db.statements.push(db.last);
      return pool.query<R>(config);
    },
  };
  return db;
}

/** The console's read models (lib/console), loaded when this process may import server-only modules. */
async function consoleReadModels(): Promise<
  | {
      listJobs: typeof import("../lib/console/reads/jobs").listJobs;
      listBindings: typeof import("../lib/console/reads/bindings").listBindings;
      listObservations: typeof import("../lib/console/reads/observation-reads").listObservations;
      listWorkers: typeof import("../lib/console/reads/workers").listWorkers;
      searchPayload: typeof import("../lib/console/reads/payload-search").searchPayload;
      runTimes: typeof import("../lib/console/reads/run-times").runTimes;
      resolveJobId: typeof import("../lib/console/reads/open-job").resolveJobId;
      deadLetterGroups: typeof import("../lib/console/reads/operator-reads").deadLetterGroups;
    }
  | { unavailable: string }
> {
  try {
    const [jobs, bindings, observations, workers, search, runTimes, openJob, operator] = await Promise.all([
      import("../lib/console/reads/jobs"),
      import("../lib/console/reads/bindings"),
      import("../lib/console/reads/observation-reads"),
      import("../lib/console/reads/workers"),
      import("../lib/console/reads/payload-search"),
      import("../lib/console/reads/run-times"),
      import("../lib/console/reads/open-job"),
      import("../lib/console/reads/operator-reads"),
    ]);
    return {
      listJobs: jobs.listJobs,
      listBindings: bindings.listBindings,
      listObservations: observations.listObservations,
      listWorkers: workers.listWorkers,
      searchPayload: search.searchPayload,
      runTimes: runTimes.runTimes,
      resolveJobId: openJob.resolveJobId,
      deadLetterGroups: operator.deadLetterGroups,
    };
  } catch (err) {
    return { unavailable: (err as Error).message.split("\n")[0] ?? "import failed" };
  }
}

/**
 * The console's queries over the seeded database (N jobs, N bindings, N/2 observations): the read
 * models of lib/console when they load (`npm run bench` runs tsx with the react-server condition so
 * `server-only` imports resolve), else equivalent SQL kept here (docs/console.md), and says which.
 */
export async function readQueries(
  pool: pg.Pool,
  queue: Queue,
  n: number,
): Promise<{ queries: ReadQuery[]; source: string }> {
  // Cursors at random depths (a user paging from anywhere), sampled from the seeded rows.
  const { rows: jobCursors } = await pool.query<{ id: string }>(
    "select id from workhorse.job tablesample system (1) limit 2000",
  );
  const { rows: bindingCursors } = await pool.query<{ exp_us: string; job_id: string }>(
    `select (extract(epoch from expires_at) * 1000000)::bigint::text as exp_us, job_id
       from workhorse.key_binding tablesample system (1) where expires_at > now() limit 2000`,
  );
  const { rows: obsCursors } = await pool.query<{ id: string }>(
    "select id::text from workhorse.enqueue_observation tablesample system (2) limit 2000",
  );
  const { rows: replacedCursors } = await pool.query<{ c: string }>(
    `select (extract(epoch from at) * 1000000)::bigint || '_' || seq as c
       from workhorse.job_event tablesample system (5) where kind = 'debounced' limit 2000`,
  );
  const at = <T>(list: T[], p: number) => list[Math.floor(p * list.length)] as T;
  const models = await consoleReadModels();
  const db = capturing(pool);
  const explainLast = () => (db.statements.length ? db.statements : [db.last ?? { text: "select 1", values: [] }]);
  const findByKey: ReadQuery = {
    id: "find_by_key",
    label: "find by key (Queue.findBinding)",
    run: (p) => {
      const g = 1 + Math.floor(p * n);
      return queue.findBinding({ scope: SCOPES[g % 4] as string, key: `order-${g}` });
    },
    explain: {
      text: "select * from workhorse.key_binding b where b.scope = $1 and b.key_hash = sha256(convert_to($2, 'UTF8'))",
      values: ["email-send", `email-send\u001forder-${Math.min(n, 4001)}`],
    },
  };
  const legacyHash = (scope: string, key: string) => createHash("sha256").update(`${scope}\u001f${key}`).digest();
  const findInScopes: ReadQuery = {
    id: "find_in_scopes",
    label: "find by key in every known scope (skip scan of scopes + Queue.findBindingInScopes)",
    run: async (p) => {
      const g = 1 + Math.floor(p * n);
      const scopes = await bindingScopes(pool, 200);
      return queue.findBindingInScopes({ key: `order-${g}`, scopes });
    },
    explain: {
      text: `select distinct on (b.scope) b.scope, b.job_id, b.expires_at
               from unnest($1::text[], $2::bytea[]) as p(scope, key_hash)
               join workhorse.key_binding b on b.scope = p.scope and b.key_hash = p.key_hash
              order by b.scope, b.expires_at desc`,
      values: [[...SCOPES], SCOPES.map((scope) => legacyHash(scope, `order-${Math.min(n, 4001)}`))],
    },
  };
  const newestIds = (await pool.query<{ id: string }>("select id from workhorse.job order by id desc limit 20000"))
    .rows;
  const invoiceOf = (id: string) => `INV-${n - newestIds.findIndex((r) => r.id === id)}`;
  if (!("unavailable" in models)) {
    const { listJobs, listBindings, listObservations } = models;
    const q = (id: string, label: string, run: (p: number) => Promise<unknown>): ReadQuery => ({
      id,
      label,
      run: (p) => {
        db.begin();
        return run(p);
      },
      explainLast,
    });
    const search = (value: string, type?: string) =>
      models.searchPayload(db, { path: ["invoiceId"], value, ...(type ? { type } : {}), window: "24h" });
    return {
      source: "lib/console read models",
      queries: [
        q("jobs.first", "jobs page, newest first (first page)", () => listJobs(db, {})),
        q("jobs.keyset", "jobs page, keyset at a random depth", (p) => listJobs(db, { after: at(jobCursors, p).id })),
        q("jobs.queue", "jobs page, queue = billing (30 %), keyset", (p) =>
          listJobs(db, { queue: "billing", after: at(jobCursors, p).id }),
        ),
        q("jobs.state", "jobs page, state = failed (5 %), keyset", (p) =>
          listJobs(db, { state: "failed", after: at(jobCursors, p).id }),
        ),
        q("jobs.queue_state_rare", "jobs page, queue = reports and state = failed (0.25 %), keyset", (p) =>
          listJobs(db, { queue: "reports", state: "failed", after: at(jobCursors, p).id }),
        ),
        findByKey,
        q("bindings.live", "bindings page, live, soonest expiry first, keyset", (p) => {
          const c = at(bindingCursors, p);
          return listBindings(db, { status: "live", after: { expiresAtUs: c.exp_us, jobId: c.job_id } });
        }),
        q("bindings.scope_mode", "bindings page, live, scope + mode = throttle (2.5 %)", () =>
          listBindings(db, { status: "live", scope: "invoice-capture", mode: "throttle" }),
        ),
        q("bindings.expired", "bindings page, expired awaiting cleanup", () => listBindings(db, { status: "expired" })),
        q("observations.first", "observation log, newest first", () => listObservations(db, {})),
        q("observations.conflicts_scope", "observation log, conflicts in one scope (2 %), keyset", (p) =>
          listObservations(db, { outcome: "conflict", scope: "invoice-capture", after: at(obsCursors, p).id }),
        ),
        q("replaced.first", "debounce replaced list, newest first", () =>
          listObservations(db, { outcome: "replaced" }),
        ),
        q("replaced.keyset", "debounce replaced list, keyset at a random depth", (p) =>
          listObservations(db, { outcome: "replaced", after: at(replacedCursors, p).c }),
        ),
        q("replaced.scope", "debounce replaced list, one scope (1/4 of them)", () =>
          listObservations(db, { outcome: "replaced", scope: "email-send" }),
        ),
        findInScopes,
        q("short_id.suffix", "open job by short id (…last 8 hex digits)", (p) =>
          models.resolveJobId(db, `…${at(jobCursors, p).id.slice(-8)}`),
        ),
        q("short_id.prefix", "open job by id prefix (12 hex digits, as the worker log prints)", (p) =>
          models.resolveJobId(db, at(jobCursors, p).id.replace(/-/g, "").slice(0, 12)),
        ),
        q("workers", "workers page (heartbeat rows)", () => models.listWorkers(db)),
        q("search.hit", "payload search, invoiceId of a recent job, last 24 h", (p) =>
          search(invoiceOf(at(newestIds, p).id)),
        ),
        q("search.hit_type", "payload search, invoiceId + type, last 24 h", (p) =>
          search(invoiceOf(at(newestIds, p).id), "invoice.capture"),
        ),
        q("search.miss", "payload search, no match (the whole bound read), last 24 h", () => search("INV-NONE")),
        q("run_times", "run-times page (maintenance's window, the jobs since its run, dead-letter trend)", () =>
          models.runTimes(db),
        ),
        q("run_times.summed", "run-times page before maintenance has run in the hour (sums the rollups)", () =>
          models.runTimes(db, undefined, { window: false }),
        ),
        q("dead_letters.groups", "dead-letter groups (the dead-letters page)", () => models.deadLetterGroups(db)),
      ],
    };
  }
  const page = (text: string, values: unknown[]) => db.query(text, values);
  const jobs = (where: string) => `select ${JOB_COLUMNS} from workhorse.job where ${where} order by id desc limit 51`;
  const q = (id: string, label: string, run: (p: number) => Promise<unknown>): ReadQuery => ({
    id,
    label,
    run: (p) => {
      db.begin();
      return run(p);
    },
    explainLast,
  });
  return {
    source: `SQL equivalent to the console's (lib/console unavailable: ${models.unavailable})`,
    queries: [
      q("jobs.first", "jobs page, newest first (first page)", () =>
        page(`select ${JOB_COLUMNS} from workhorse.job order by id desc limit 51`, []),
      ),
      q("jobs.keyset", "jobs page, keyset at a random depth", (p) =>
        page(jobs("id < $1::uuid"), [at(jobCursors, p).id]),
      ),
      q("jobs.queue", "jobs page, queue = billing (30 %), keyset", (p) =>
        page(jobs("queue = $1 and id < $2::uuid"), ["billing", at(jobCursors, p).id]),
      ),
      q("jobs.state", "jobs page, state = failed (5 %), keyset", (p) =>
        page(jobs("state = $1 and id < $2::uuid"), ["failed", at(jobCursors, p).id]),
      ),
      q("jobs.queue_state_rare", "jobs page, queue = reports and state = failed (0.25 %), keyset", (p) =>
        page(jobs("queue = $1 and state = $2 and id < $3::uuid"), ["reports", "failed", at(jobCursors, p).id]),
      ),
      findByKey,
      q("bindings.live", "bindings page, live, soonest expiry first, keyset", (p) => {
        const c = at(bindingCursors, p);
        return page(
          `select ${BINDING_COLUMNS} from workhorse.key_binding
            where expires_at > now()
              and (expires_at, job_id) > (timestamptz 'epoch' + $1::bigint * interval '1 microsecond', $2::uuid)
            order by expires_at, job_id limit 51`,
          [c.exp_us, c.job_id],
        );
      }),
      q("bindings.scope_mode", "bindings page, live, scope + mode = throttle (2.5 %)", () =>
        page(
          `select ${BINDING_COLUMNS} from workhorse.key_binding
            where expires_at > now() and scope = $1 and mode = $2 order by expires_at, job_id limit 51`,
          ["invoice-capture", "throttle"],
        ),
      ),
      q("bindings.expired", "bindings page, expired awaiting cleanup", () =>
        page(
          `select ${BINDING_COLUMNS} from workhorse.key_binding where expires_at <= now()
            order by expires_at, job_id limit 51`,
          [],
        ),
      ),
      q("observations.first", "observation log, newest first", () =>
        page(`select ${OBSERVATION_COLUMNS} from workhorse.enqueue_observation order by id desc limit 51`, []),
      ),
      q("observations.conflicts_scope", "observation log, conflicts in one scope (2 %), keyset", (p) =>
        page(
          `select ${OBSERVATION_COLUMNS} from workhorse.enqueue_observation
            where outcome = $1 and scope = $2 and id < $3::bigint order by id desc limit 51`,
          ["conflict", "invoice-capture", at(obsCursors, p).id],
        ),
      ),
      // The operator pages' reads, through the store functions their read models call.
      q("replaced.first", "debounce replaced list, newest first", () => replacedListRows(db, {}, 50)),
      findInScopes,
      q("short_id.suffix", "open job by short id (…last 8 hex digits)", (p) =>
        jobIdsEndingWith(sqlOf(db), at(jobCursors, p).id.slice(-8), 6),
      ),
      q("workers", "workers page (heartbeat rows)", () => workerHeartbeatRows(db, 500, 3)),
      q("search.miss", "payload search, no match (the whole bound read), last 24 h", () =>
        payloadSearchRows(db, {
          match: { jsonpath: '$."invoiceId" ? (@ == $v0)', vars: { v0: "INV-NONE" } },
          fromId: uuidv7Floor(Date.now() - 86_400_000),
          limit: 50,
          scanCap: 10_000,
        }),
      ),
      {
        ...q("dead_letters.groups", "dead-letter groups (the dead-letters page)", () => deadLetterGroupRows(db, 500)),
        maxRuns: 50,
      },
    ],
  };
}

export async function timeReads(pool: pg.Pool, queries: ReadQuery[], runs: number, seed = 7): Promise<ReadResult[]> {
  const out: ReadResult[] = [];
  for (const q of queries) {
    const random = rng(seed);
    for (let i = 0; i < 10; i++) await q.run(random()); // warm the plan and the cache
    const lat: number[] = [];
    const n = Math.min(runs, q.maxRuns ?? runs);
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await q.run(random());
      lat.push(performance.now() - t0);
    }
    lat.sort((a, b) => a - b);
    const r: ReadResult = {
      id: q.id,
      label: q.label,
      runs: n,
      p50: percentile(lat, 50),
      p95: percentile(lat, 95),
      max: lat[lat.length - 1] as number,
    };
    const explains = [q.explain ?? q.explainLast?.() ?? []].flat();
    for (const explain of explains) {
      const { rows } = await pool.query<{ "QUERY PLAN": ExplainNode[] }>(
        `explain (analyze, buffers, format json) ${explain.text}`,
        explain.values,
      );
      const plan = rows[0]?.["QUERY PLAN"]?.[0]?.Plan;
      if (plan) {
        r.plan = r.plan ? `${r.plan}; ${describePlan(plan)}` : describePlan(plan);
        r.sharedBuffers = (r.sharedBuffers ?? 0) + (plan["Shared Hit Blocks"] ?? 0) + (plan["Shared Read Blocks"] ?? 0);
      }
    }
    out.push(r);
  }
  return out;
}

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Relation Name"?: string;
  "Rows Removed by Filter"?: number;
  "Shared Hit Blocks"?: number;
  "Shared Read Blocks"?: number;
  Plans?: PlanNode[];
}
interface ExplainNode {
  Plan: PlanNode;
}

/** "Limit > Index Scan Backward (job_pkey, 19,950 rows filtered)" */
function describePlan(node: PlanNode): string {
  const parts: string[] = [];
  let cur: PlanNode | undefined = node;
  while (cur) {
    let s = cur["Node Type"];
    const extra: string[] = [];
    if (cur["Index Name"]) extra.push(cur["Index Name"]);
    else if (cur["Relation Name"]) extra.push(cur["Relation Name"]);
    if (cur["Rows Removed by Filter"])
      extra.push(`${cur["Rows Removed by Filter"].toLocaleString("en-US")} rows filtered`);
    if (extra.length) s += ` (${extra.join(", ")})`;
    parts.push(s);
    cur = cur.Plans?.[0];
  }
  return parts.join(" > ");
}

export interface PruneResult {
  expiredBefore: number;
  deleted: number;
  pruneMs: number;
  batchLimit: number;
  baseline: Summary;
  during: Summary;
}

/**
 * Times `pruneExpiredBindings` (default batch size) deleting every expired binding while 8 callers
 * keep enqueueing new keyed jobs into the same tables; a baseline window of the same callers without
 * the prune comes first.
 */
export async function timePrune(pool: pg.Pool, queue: Queue, baselineMs: number): Promise<PruneResult> {
  const { rows } = await pool.query<{ n: string }>(
    "select count(*) as n from workhorse.key_binding where expires_at <= now()",
  );
  const expiredBefore = Number(rows[0]?.n ?? 0);
  let k = 0;
  const enqueue = () => {
    const key = `prune-${k++}`;
    return queue.enqueue(
      "invoice.capture",
      { invoiceId: key, amount: 1 },
      {
        queue: "billing",
        idempotency: { key, scope: "invoice-capture" },
      },
    );
  };
  const until = performance.now() + baselineMs;
  const baseline = await runUntil(enqueue, 8, () => performance.now() >= until);
  let done = false;
  const t0 = performance.now();
  const prune = queue.pruneExpiredBindings({ limit: 1000 }).finally(() => {
    done = true;
  });
  const during = await runUntil(enqueue, 8, () => done);
  const deleted = await prune;
  return {
    expiredBefore,
    deleted,
    pruneMs: performance.now() - t0,
    batchLimit: 1000,
    baseline: summarize([baseline]),
    during: summarize([during]),
  };
}

/** Builds the seeded database and runs reads and the prune against it. */
export async function readSurface(
  url: string,
  options: { n: number; runs: number; pruneBaselineMs: number; log: (s: string) => void },
) {
  const pool = benchPool({ connectionString: url, max: 10 }, "read surface");
  await migrate(pool);
  options.log(
    `seeding ${options.n.toLocaleString("en-US")} jobs, bindings and ${(options.n / 2).toLocaleString("en-US")} observations…`,
  );
  const seedMs = await seed(pool, options.n);
  options.log(
    `seeded in ${Object.entries(seedMs)
      .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`)
      .join(", ")}`,
  );
  const queue = new Queue({ pool, maintenance: false, notify: true });
  const readPool = benchPool({ connectionString: url, max: 1 }, "read queries");
  const { queries, source } = await readQueries(readPool, queue, options.n);
  options.log(`read queries: ${source}`);
  const reads = await timeReads(readPool, queries, options.runs);
  await readPool.end();
  options.log("pruning expired bindings while 8 callers enqueue…");
  const prune = await timePrune(pool, queue, options.pruneBaselineMs);
  await queue.close();
  await pool.end();
  return { seedMs, reads, readSource: source, prune };
}

/** One kind of read over every database at once, against the same read of each database alone. */
export interface FleetReadResult {
  kind: string;
  label: string;
  runs: number;
  /** The read over every database at once. */
  all: { p50: number; p95: number; max: number };
  /** The same read of each database alone, by name. */
  single: Record<string, { p50: number; p95: number; max: number }>;
  /** The database whose single read had the highest p95, and that p95. */
  slowest: { database: string; p95: number };
  /** `all.p95 / slowest.p95`; the target is under 2. */
  ratio: number;
}

/** The lib/console modules the fleet and find pages call (server-only: tsx needs the react-server condition). */
async function fleetReadModels() {
  try {
    const [fleet, find, session] = await Promise.all([
      import("../lib/console/reads/fleet"),
      import("../lib/console/reads/find-everywhere"),
      import("../lib/console/databases/session"),
    ]);
    return { ...fleet, ...find, ...session };
  } catch (err) {
    throw new Error(
      `the fleet bench times lib/console's reads, which need \`npx tsx --conditions=react-server\` (${(err as Error).message.split("\n")[0]})`,
    );
  }
}

const FIND_SCOPE = "checkout";

/**
 * `databases` fresh databases on one server, each seeded with `n` rows as `seed` does and 200 keyed
 * jobs of its own (keys `fleet-<database>-<j>` in scope "checkout", hashed with that database's own
 * secret as a console of several databases hashes them); then, interleaved run by run in a shuffled
 * order, the fleet read, the find by key and by digest across every database, and the same reads of
 * each database alone. A key lives in one database: the read across them finds it there and misses
 * in the others, the single reads of the same key hit in one database and miss in the rest.
 */
export async function fleetSurface(options: {
  n: number;
  databases: number;
  runs: number;
  log: (s: string) => void;
}): Promise<{ seedMs: Record<string, Record<string, number>>; reads: FleetReadResult[] }> {
  const models = await fleetReadModels();
  const server = await startBenchServer();
  const names = Array.from({ length: options.databases }, (_, i) => `bench_fleet_${i + 1}`);
  const opened: { config: import("../lib/console/databases/databases").DatabaseConfig; pool: pg.Pool; queue: Queue }[] =
    [];
  const seedMs: Record<string, Record<string, number>> = {};
  const keys: { key: string; digest: string }[] = [];
  try {
    for (const name of names) {
      const url = await server.freshDatabase(name);
      const setup = benchPool({ connectionString: url, max: 4 }, name);
      await migrate(setup);
      options.log(`${name}: seeding ${options.n.toLocaleString("en-US")} jobs and bindings…`);
      seedMs[name] = await seed(setup, options.n);
      await setup.end();
      // As lib/console/databases/db.ts opens a database when several are configured.
      const config = { name, url, readonly: false, production: false, distributed: false, keySecretEnv: null };
      const pool = models.databasePool(config, { max: 10, connectionTimeoutMillis: 10_000 });
      const queue = new Queue({ pool, maintenance: false, source: "console", keySecret: "" });
      for (let j = 0; j < 200; j++) {
        const key = `fleet-${name}-${j}`;
        const r = await queue.enqueueWithResult("order.ship", { j }, { idempotency: { key, scope: FIND_SCOPE } });
        keys.push({ key, digest: r.keyDigest as string });
      }
      opened.push({ config, pool, queue });
    }
    const configs = opened.map((o) => o.config);
    const open = (d: { name: string }) => {
      const o = opened.find((x) => x.config.name === d.name);
      if (!o) throw new Error(`no database ${d.name}`);
      return o;
    };
    const pick = (p: number) => keys[Math.floor(p * keys.length)] as { key: string; digest: string };
    const kinds: { kind: string; label: string; read: (ds: typeof configs, p: number) => Promise<unknown> }[] = [
      { kind: "fleet", label: "fleet page (readFleet)", read: (ds) => models.readFleet(ds, open) },
      {
        kind: "find_key",
        label: "find by key (findKeyEverywhere)",
        read: (ds, p) => models.findKeyEverywhere(ds, open, pick(p).key, FIND_SCOPE),
      },
      {
        kind: "find_digest",
        label: "find by digest (findDigestEverywhere)",
        read: (ds, p) => models.findDigestEverywhere(ds, open, pick(p).digest),
      },
    ];
    const reads: FleetReadResult[] = [];
    for (const k of kinds) {
      options.log(`timing ${k.label}, ${options.runs} runs of each variant…`);
      const variants = [{ id: "all", ds: configs }, ...configs.map((c) => ({ id: c.name, ds: [c] }))];
      const lat = new Map<string, number[]>(variants.map((v) => [v.id, []]));
      const random = rng(11);
      for (let i = 0; i < 10; i++) for (const v of variants) await k.read(v.ds, random()); // warm plans and caches
      for (let i = 0; i < options.runs; i++) {
        const p = random();
        for (const v of shuffled(variants, random)) {
          const t0 = performance.now();
          await k.read(v.ds, p);
          lat.get(v.id)?.push(performance.now() - t0);
        }
      }
      const stats = (xs: number[]) => {
        const sorted = [...xs].sort((a, b) => a - b);
        return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted[sorted.length - 1] as number };
      };
      const single = Object.fromEntries(configs.map((c) => [c.name, stats(lat.get(c.name) as number[])]));
      const [slowestName, slowestStats] = Object.entries(single).sort((a, b) => b[1].p95 - a[1].p95)[0] as [
        string,
        { p95: number },
      ];
      const all = stats(lat.get("all") as number[]);
      reads.push({
        kind: k.kind,
        label: k.label,
        runs: options.runs,
        all,
        single,
        slowest: { database: slowestName, p95: slowestStats.p95 },
        ratio: all.p95 / slowestStats.p95,
      });
    }
    return { seedMs, reads };
  } finally {
    for (const o of opened) {
      await o.queue.close();
      await o.pool.end();
    }
    for (const name of names) await server.dropDatabase(name).catch(() => {});
    await server.stop();
  }
}

/** `--fleet`: the fleet bench from the command line; prints a table and writes bench/results/fleet-<time>.json. */
async function main(): Promise<void> {
  const flags = new Map(
    process.argv.slice(2).map((a) => {
      const [k, v] = a.replace(/^--/, "").split("=");
      return [k as string, v ?? ""] as const;
    }),
  );
  if (!flags.has("fleet")) {
    process.stderr.write(
      "usage: npx tsx --conditions=react-server bench/read-surface.ts --fleet [--rows=1000000] [--databases=3] [--runs=200]\n" +
        "(the single-database read surface runs with `npm run bench -- --scenarios=read,prune`)\n",
    );
    process.exitCode = 2;
    return;
  }
  const n = Number(flags.get("rows") || 1_000_000);
  const databases = Number(flags.get("databases") || 3);
  const runs = Number(flags.get("runs") || 200);
  const log = (m: string) => process.stdout.write(`[bench] ${m}\n`);
  const startedAt = new Date();
  const result = await fleetSurface({ n, databases, runs, log });
  const ms = (x: number) => x.toFixed(2).padStart(8);
  const out = [
    `\n${databases} databases of ${n.toLocaleString("en-US")} jobs and bindings each, ${runs} runs per variant (ms)`,
    `${"read".padEnd(54)}${"p50".padStart(8)}${"p95".padStart(8)}  slowest alone (p95)       ratio  target < 2x`,
  ];
  for (const r of result.reads) {
    out.push(
      `${`${r.label}, all at once`.padEnd(54)}${ms(r.all.p50)}${ms(r.all.p95)}  ${`${r.slowest.database} ${r.slowest.p95.toFixed(2)}`.padEnd(24)}${r.ratio.toFixed(2).padStart(7)}  ${r.ratio < 2 ? "met" : "MISSED"}`,
    );
    for (const [name, st] of Object.entries(r.single)) {
      out.push(`${`  ${name} alone`.padEnd(54)}${ms(st.p50)}${ms(st.p95)}`);
    }
  }
  process.stdout.write(`${out.join("\n")}\n`);
  const dir = path.join(import.meta.dirname, "results");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `fleet-${startedAt.toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ startedAt: startedAt.toISOString(), rows: n, databases, runs, ...result }, null, 2)}\n`,
  );
  log(`wrote ${path.relative(process.cwd(), file)}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    process.stderr.write(`[bench] ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}

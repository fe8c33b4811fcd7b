/**
 * Read surface and maintenance on a seeded database: N jobs, N bindings (half expired), N/2
 * observations, seeded with set-based SQL. Times the console's queries (p50/p95 over `runs` each)
 * and `pruneExpiredBindings` while 8 callers keep enqueueing.
 *
 * The console's read models (lib/console) are not written yet, so the queries below are the ones
 * SPEC §10 implies: keyset pages, newest first on the UUIDv7 job id, filters from an allowlist.
 */
import pg from "pg";
import { migrate, Queue } from "../lib/enqueue";
import { percentile, rng, runUntil, type Summary, summarize } from "./lib/measure";

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
  // Job g gets a UUIDv7 built from a timestamp 500 ms after job g-1 (so ids are time-ordered and
  // the newest is "now"); queue from the md5 of g (40/30/25/5 %), state from g mod 1000 (80 % succeeded,
  // 10 % ready, 3 % scheduled, 1 % active, 5 % failed, 0.9 % canceled, 0.1 % purged).
  const jobCte = `
    select g,
           (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid as id,
           to_timestamp(ms / 1000.0) as at,
           case when b < 102 then 'default' when b < 179 then 'billing' when b < 243 then 'email' else 'reports' end as queue,
           case when g % 1000 < 800 then 'succeeded' when g % 1000 < 900 then 'ready'
                when g % 1000 < 930 then 'scheduled' when g % 1000 < 940 then 'active'
                when g % 1000 < 990 then 'failed' when g % 1000 < 999 then 'canceled' else 'purged' end as state
      from generate_series(1, $1::int) g,
           lateral (select (extract(epoch from now()) * 1000)::bigint - ($1::bigint - g) * 500 as ms,
                           md5(g::text) as h) x,
           lateral (select get_byte(decode(x.h, 'hex'), 0) as b) y`;
  await time(
    "jobs",
    `insert into workhorse.job (id, queue, type, payload, state, run_at, attempt, max_attempts, tags, created_at, updated_at,
                                started_at, finished_at)
     select id, queue, (array['invoice.capture', 'email.send', 'report.build', 'webhook.deliver'])[1 + g % 4],
            jsonb_build_object('invoiceId', 'INV-' || g, 'amount', g % 10000, 'currency', 'EUR'),
            state, case when state = 'scheduled' then at + interval '1 day' else at end,
            case when state in ('succeeded', 'failed', 'active') then 1 else 0 end, 25,
            case when g % 7 = 0 then array['vip'] else '{}' end, at, at,
            case when state in ('succeeded', 'failed', 'active') then at end,
            case when state in ('succeeded', 'failed') then at + interval '1 second' end
       from (${jobCte}) j`,
    [n],
  );
  // Binding g belongs to job g; odd g expired (oldest first), even g live for another 1..N/100 s.
  await time(
    "bindings",
    `insert into workhorse.idempotency_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                                request_digest, ttl_ms, created_at, expires_at)
     select scope, sha256(convert_to(scope || chr(31) || k, 'UTF8')), id,
            case when g % 10 = 0 then 'throttle' when g % 10 = 1 then 'debounce' else 'idempotency' end,
            left(k, least(8, char_length(k) / 3)) || '…', char_length(k),
            array_fill(left(md5(k), 16), array[11]), encode(sha256(convert_to(k, 'UTF8')), 'hex'), 86400000,
            exp - interval '1 day', exp
       from (select j.g, j.id, (array['invoice-capture', 'email-send', 'report-build', 'webhook'])[1 + j.g % 4] as scope,
                    'order-' || j.g as k,
                    case when j.g % 2 = 1 then now() - interval '1 second' - ($1::int - j.g) * interval '100 ms'
                         else now() + interval '1 hour' + j.g * interval '10 ms' end as exp
               from (${jobCte}) j) s`,
    [n],
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
  const t0 = performance.now();
  await pool.query("vacuum (analyze) workhorse.job, workhorse.idempotency_binding, workhorse.enqueue_observation");
  timings.vacuumAnalyze = Math.round(performance.now() - t0);
  return timings;
}

export interface ReadQuery {
  id: string;
  label: string;
  /** Runs one query; `pick` is a uniform random number in [0, 1) for cursors and keys. */
  run(pick: number): Promise<unknown>;
  /** The SQL and a parameter set, for EXPLAIN. */
  explain?: { text: string; values: unknown[] };
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

/** A cursor above every UUIDv7: EXPLAIN shows the first page of each filter. */
const FIRST_PAGE = "ffffffff-ffff-7fff-bfff-ffffffffffff";
const JOB_COLUMNS = "id, queue, type, state, run_at, attempt, max_attempts, tags, created_at";
const BINDING_COLUMNS = `scope, key_hash, job_id, mode, key_preview, key_length, created_at, expires_at,
  greatest(expires_at - now(), interval '0') as ttl_remaining`;
const OBSERVATION_COLUMNS = `id, at, outcome, reason, queue, type, scope, key_preview, key_digest, key_length, job_id,
  conflicting_fields, payload_paths, source`;

/** The console's queries over the seeded database (N jobs, N bindings, N/2 observations). */
export async function readQueries(pool: pg.Pool, queue: Queue, n: number): Promise<ReadQuery[]> {
  // Cursors: ids of jobs at random depths (a user paging from anywhere).
  const { rows: cursorRows } = await pool.query<{ id: string }>(
    "select id from workhorse.job tablesample system (1) limit 2000",
  );
  const cursors = cursorRows.map((r) => r.id);
  const cursorAt = (p: number) => cursors[Math.floor(p * cursors.length)] as string;
  const page = (text: string, values: unknown[]) => pool.query(text, values);
  const jobs = (where: string) => `select ${JOB_COLUMNS} from workhorse.job where ${where} order by id desc limit 50`;
  const q: ReadQuery[] = [
    {
      id: "jobs.first",
      label: "jobs page, newest first (first page)",
      run: () => page(`select ${JOB_COLUMNS} from workhorse.job order by id desc limit 50`, []),
      explain: { text: `select ${JOB_COLUMNS} from workhorse.job order by id desc limit 50`, values: [] },
    },
    {
      id: "jobs.keyset",
      label: "jobs page, keyset at a random depth",
      run: (p) => page(jobs("id < $1::uuid"), [cursorAt(p)]),
      explain: { text: jobs("id < $1::uuid"), values: [FIRST_PAGE] },
    },
    {
      id: "jobs.queue",
      label: "jobs page, queue = billing (30 %), keyset",
      run: (p) => page(jobs("queue = $1 and id < $2::uuid"), ["billing", cursorAt(p)]),
      explain: { text: jobs("queue = $1 and id < $2::uuid"), values: ["billing", FIRST_PAGE] },
    },
    {
      id: "jobs.state",
      label: "jobs page, state = failed (5 %), keyset",
      run: (p) => page(jobs("state = $1 and id < $2::uuid"), ["failed", cursorAt(p)]),
      explain: { text: jobs("state = $1 and id < $2::uuid"), values: ["failed", FIRST_PAGE] },
    },
    {
      id: "jobs.queue_state_rare",
      label: "jobs page, queue = reports and state = failed (0.25 %), keyset",
      run: (p) => page(jobs("queue = $1 and state = $2 and id < $3::uuid"), ["reports", "failed", cursorAt(p)]),
      explain: {
        text: jobs("queue = $1 and state = $2 and id < $3::uuid"),
        values: ["reports", "failed", FIRST_PAGE],
      },
    },
    {
      id: "find_by_key",
      label: "find by key (Queue.findBinding)",
      run: (p) => {
        const g = 1 + Math.floor(p * n);
        return queue.findBinding({ scope: SCOPES[g % 4] as string, key: `order-${g}` });
      },
      explain: {
        text: "select * from workhorse.idempotency_binding b where b.scope = $1 and b.key_hash = sha256(convert_to($2, 'UTF8'))",
        values: ["email-send", `email-send\u001forder-${Math.min(n, 4001)}`],
      },
    },
    {
      id: "bindings.live",
      label: "bindings page, live, soonest expiry first, keyset",
      run: (p) =>
        page(
          `select ${BINDING_COLUMNS} from workhorse.idempotency_binding
            where expires_at > greatest(now(), now() + interval '1 hour' + $1 * interval '10 ms')
            order by expires_at, scope, key_hash limit 50`,
          [Math.floor(p * n)],
        ),
    },
    {
      id: "bindings.scope_mode",
      label: "bindings page, live, scope + mode = throttle (2.5 %)",
      run: () =>
        page(
          `select ${BINDING_COLUMNS} from workhorse.idempotency_binding
            where scope = $1 and mode = $2 and expires_at > now() order by expires_at, key_hash limit 50`,
          ["invoice-capture", "throttle"],
        ),
      explain: {
        text: `select ${BINDING_COLUMNS} from workhorse.idempotency_binding
            where scope = $1 and mode = $2 and expires_at > now() order by expires_at, key_hash limit 50`,
        values: ["invoice-capture", "throttle"],
      },
    },
    {
      id: "bindings.expired",
      label: "bindings page, expired awaiting cleanup",
      run: () =>
        page(
          `select ${BINDING_COLUMNS} from workhorse.idempotency_binding where expires_at <= now()
            order by expires_at, scope, key_hash limit 50`,
          [],
        ),
    },
    {
      id: "observations.first",
      label: "observation log, newest first",
      run: () =>
        page(`select ${OBSERVATION_COLUMNS} from workhorse.enqueue_observation order by at desc, id desc limit 50`, []),
    },
    {
      id: "observations.conflicts_scope",
      label: "observation log, conflicts in one scope (2 %), newest first, keyset",
      run: (p) =>
        page(
          `select ${OBSERVATION_COLUMNS} from workhorse.enqueue_observation
            where outcome = $1 and scope = $2 and at < now() - $3 * interval '1 second'
            order by at desc, id desc limit 50`,
          ["conflict", "invoice-capture", Math.floor((p * n) / 4)],
        ),
      explain: {
        text: `select ${OBSERVATION_COLUMNS} from workhorse.enqueue_observation
            where outcome = $1 and scope = $2 and at < now() - $3 * interval '1 second'
            order by at desc, id desc limit 50`,
        values: ["conflict", "invoice-capture", Math.floor(n / 8)],
      },
    },
  ];
  return q;
}

export async function timeReads(pool: pg.Pool, queries: ReadQuery[], runs: number, seed = 7): Promise<ReadResult[]> {
  const out: ReadResult[] = [];
  for (const q of queries) {
    const random = rng(seed);
    for (let i = 0; i < 10; i++) await q.run(random()); // warm the plan and the cache
    const lat: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await q.run(random());
      lat.push(performance.now() - t0);
    }
    lat.sort((a, b) => a - b);
    const r: ReadResult = {
      id: q.id,
      label: q.label,
      runs,
      p50: percentile(lat, 50),
      p95: percentile(lat, 95),
      max: lat[lat.length - 1] as number,
    };
    if (q.explain) {
      const { rows } = await pool.query<{ "QUERY PLAN": ExplainNode[] }>(
        `explain (analyze, buffers, format json) ${q.explain.text}`,
        q.explain.values,
      );
      const plan = rows[0]?.["QUERY PLAN"]?.[0]?.Plan;
      if (plan) {
        r.plan = describePlan(plan);
        r.sharedBuffers = (plan["Shared Hit Blocks"] ?? 0) + (plan["Shared Read Blocks"] ?? 0);
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
    "select count(*) as n from workhorse.idempotency_binding where expires_at <= now()",
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
  const pool = new pg.Pool({ connectionString: url, max: 10 });
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
  const readPool = new pg.Pool({ connectionString: url, max: 1 });
  const reads = await timeReads(readPool, await readQueries(readPool, queue, options.n), options.runs);
  await readPool.end();
  options.log("pruning expired bindings while 8 callers enqueue…");
  const prune = await timePrune(pool, queue, options.pruneBaselineMs);
  await queue.close();
  await pool.end();
  return { seedMs, reads, prune };
}

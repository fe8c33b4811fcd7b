/**
 * Server-side cost of the storage shapes a keyed accept could have, without any client code: each
 * shape is one prepared statement that pgbench sends (no validation, no hashing, no driver), so
 * what is left is what PostgreSQL spends. It answers "how fast could a keyed accept be on this
 * machine with this design", the question behind the write path's targets (docs/benchmarks.md,
 * "Server-side shapes").
 *
 *   npx tsx bench/shapes.ts [--rounds=5] [--seconds=5] [--cpu-calls=2000]
 *
 * Two measures per shape, interleaved over rounds (medians):
 * - calls/s with 8 pgbench clients and with 1 (fsync on, as the bench's server runs);
 * - server CPU per call: one connection runs the statement `--cpu-calls` times and the backend's
 *   run time is read from /proc/<pid>/schedstat (CPU, not wall time: less sensitive to a loaded
 *   machine than calls/s, but still not free of it).
 *
 * The shapes (keys are random 32-byte hashes, as the HMAC of a key is):
 * - floor: the one-row INSERT of the main bench (uuid primary key, jsonb payload, one index);
 * - floor-dup: INSERT .. ON CONFLICT DO NOTHING on an existing row (the replay floor);
 * - core / core-replay: `workhorse.enqueue_one` as shipped (PL/pgSQL: probe, binding, job);
 * - two-row: the binding and the job written by one data-modifying statement into the shipped
 *   tables (domain-typed columns, table CHECKs, every index);
 * - two-row-lean: the same statement into copies of the tables with plain column types, no CHECK
 *   and no short-id index (bounds would have to be checked elsewhere);
 * - one-row: the key on the job row (a unique index on scope and key hash), plain types;
 * - probe: the binding read by primary key (what a replay must at least do).
 *
 * And batches of 1,000 requests, half new keys and half keys bound before (the main bench's batch),
 * reported as requests/s with 8 clients:
 * - floor-batch: one multi-row INSERT .. ON CONFLICT DO NOTHING into the floor's table;
 * - two-row-batch-lean: one statement binding the new keys, inserting their jobs and reading the
 *   bound keys' bindings (plain-typed tables);
 * - one-row-batch: the same with the key on the job row.
 *
 * Needs pgbench (in Debian it comes with the server package, e.g. postgresql-15; `apt-get install
 * postgresql-15`). Start it when nothing else runs on the machine.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { migrate } from "@workhorse/core";
import pg from "pg";
import { startBenchServer } from "./lib/env";
import { LEAN_TABLES } from "./lib/lean-tables";

const flags = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const ROUNDS = Number(flags.get("rounds") ?? 5);
const SECONDS = Number(flags.get("seconds") ?? 5);
const CPU_CALLS = Number(flags.get("cpu-calls") ?? 2000);

const PAYLOAD = `'{"invoiceId":"INV-1","amount":4200,"currency":"EUR","customer":"cus_1","lines":[1,2,3]}'::jsonb`;
const FIELDS80 = `'\\x${"ab".repeat(80)}'::bytea`;
const FIELDS88 = `'\\x${"ab".repeat(88)}'::bytea`;
const DIGEST = `'\\x${"cd".repeat(32)}'::bytea`;
const NEW_KEY = "sha256(uuidv7()::text::bytea)";
const LIVE_KEY = "sha256('live-key'::bytea)";

const SETUP = `
create table floor_job (id uuid primary key, queue text not null, type text not null, payload jsonb not null,
  state text not null, created_at timestamptz not null default now());
insert into floor_job values ('00000000-0000-7000-8000-000000000001', 'bench', 'invoice.send', ${PAYLOAD}, 'ready');
${LEAN_TABLES}
create table lean.keyed_job (like lean.job including defaults);
alter table lean.keyed_job add primary key (id), add column field_digests bytea, add column key_expires_at timestamptz;
create unique index on lean.keyed_job (key_scope, key_hash) where key_hash is not null;
create index on lean.keyed_job (queue, run_at, id) where state in ('scheduled', 'ready');
insert into floor_job (id, queue, type, payload, state)
  select ('00000000-0000-7000-8001-' || lpad(g::text, 12, '0'))::uuid, 'bench', 'invoice.send', ${PAYLOAD}, 'ready'
    from generate_series(0, 499) g;
insert into lean.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest,
                              ttl_ms, expires_at)
  select 'bench', sha256(('live-' || g)::bytea), uuidv7(), 'idempotency', 'ab…', 20, ${FIELDS88}, ${DIGEST}, 86400000,
         now() + interval '1 day' from generate_series(0, 499) g;
insert into lean.keyed_job (id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash, key_mode,
                            key_preview, field_digests, key_expires_at)
  select uuidv7(), 'bench', 'invoice.send', ${PAYLOAD}, 'ready', now(), 25, 'bench', sha256(('live-' || g)::bytea),
         'idempotency', 'ab…', ${FIELDS88}, now() + interval '1 day' from generate_series(0, 499) g;
`;

// 500 new keys and the 500 keys SETUP bound, in one batch.
const BATCH_KEYS = `select sha256(uuidv7()::text::bytea) as key_hash from generate_series(1, 500)
  union all select sha256(('live-' || g)::bytea) from generate_series(0, 499) g`;

const BATCHES: Record<string, string> = {
  "floor-batch": `insert into floor_job (id, queue, type, payload, state)
    select case when g < 500 then uuidv7() else ('00000000-0000-7000-8001-' || lpad((g - 500)::text, 12, '0'))::uuid end,
           'bench', 'invoice.send', ${PAYLOAD}, 'ready' from generate_series(0, 999) g
    on conflict do nothing`,
  "two-row-batch-lean": `with req as (select uuidv7() as id, k.key_hash from (${BATCH_KEYS}) k),
    old as (select b.job_id, b.field_digests from req r
              join lean.key_binding b on b.scope = 'bench' and b.key_hash = r.key_hash),
    bound as (
      insert into lean.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                    request_digest, ttl_ms, expires_at)
      select 'bench', r.key_hash, r.id, 'idempotency', 'ab…', 20, ${FIELDS88}, ${DIGEST}, 86400000,
             now() + interval '1 day' from req r order by r.key_hash
      on conflict do nothing returning job_id, key_hash),
    jobs as (
      insert into lean.job (id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash, key_mode,
                            key_preview, key_length, key_ttl_ms, request_digest, tags)
      select b.job_id, 'bench', 'invoice.send', ${PAYLOAD}, 'ready', now(), 25, 'bench', b.key_hash, 'idempotency',
             'ab…', 20, 86400000, ${DIGEST}, '{}' from bound b returning id)
    select (select count(*) from jobs), (select count(*) from old)`,
  "one-row-batch": `with req as (select uuidv7() as id, k.key_hash from (${BATCH_KEYS}) k),
    old as (select j.id, j.field_digests from req r
              join lean.keyed_job j on j.key_scope = 'bench' and j.key_hash = r.key_hash),
    jobs as (
      insert into lean.keyed_job (id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash,
                                  key_mode, key_preview, field_digests, key_expires_at)
      select r.id, 'bench', 'invoice.send', ${PAYLOAD}, 'ready', now(), 25, 'bench', r.key_hash, 'idempotency',
             'ab…', ${FIELDS88}, now() + interval '1 day' from req r order by r.key_hash
      on conflict (key_scope, key_hash) where key_hash is not null do nothing returning id)
    select (select count(*) from jobs), (select count(*) from old)`,
};

function enqueueOne(key: string): string {
  return `select * from workhorse.enqueue_one(uuidv7(), 'bench', 'invoice.send', ${PAYLOAD}, null, 25, null, null, null,
    null, '{}'::text[], 'idempotency', 'bench', ${key}, 'ab…', 20, 86400000, ${FIELDS80}, false)`;
}

function twoRow(schema: string): string {
  return `with b as (
      insert into ${schema}.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                         request_digest, ttl_ms, expires_at)
      values ('bench', ${NEW_KEY}, uuidv7(), 'idempotency', 'ab…', 20, ${FIELDS88}, ${DIGEST}, 86400000,
              now() + interval '1 day')
      on conflict do nothing returning job_id, scope, key_hash)
    insert into ${schema}.job (id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash, key_mode,
                               key_preview, key_length, key_ttl_ms, request_digest, tags)
    select b.job_id, 'bench', 'invoice.send', ${PAYLOAD}, 'ready', now(), 25, b.scope, b.key_hash, 'idempotency',
           'ab…', 20, 86400000, ${DIGEST}, '{}' from b returning id`;
}

const SHAPES: Record<string, string> = {
  floor: `insert into floor_job (id, queue, type, payload, state) values (uuidv7(), 'bench', 'invoice.send', ${PAYLOAD}, 'ready')`,
  "floor-dup": `insert into floor_job (id, queue, type, payload, state)
    values ('00000000-0000-7000-8000-000000000001', 'bench', 'invoice.send', ${PAYLOAD}, 'ready') on conflict do nothing`,
  core: enqueueOne(NEW_KEY),
  "core-replay": enqueueOne(LIVE_KEY),
  "two-row": twoRow("workhorse"),
  "two-row-lean": twoRow("lean"),
  "one-row": `insert into lean.keyed_job (id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash,
      key_mode, key_preview, field_digests, key_expires_at)
    values (uuidv7(), 'bench', 'invoice.send', ${PAYLOAD}, 'ready', now(), 25, 'bench', ${NEW_KEY}, 'idempotency', 'ab…',
            ${FIELDS88}, now() + interval '1 day')
    on conflict (key_scope, key_hash) where key_hash is not null do nothing returning id`,
  probe: `select job_id, mode, field_digests, request_digest, expires_at > now() as live
    from workhorse.key_binding where scope = 'bench' and key_hash = ${LIVE_KEY}`,
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function pgbench(url: string, file: string, clients: number): number {
  const r = spawnSync(
    "pgbench",
    [
      "-n",
      "-M",
      "prepared",
      "-c",
      String(clients),
      "-j",
      String(Math.min(clients, 2)),
      "-T",
      String(SECONDS),
      "-f",
      file,
      url,
    ],
    { encoding: "utf8" },
  );
  const m = /tps = ([\d.]+)/.exec(r.stdout);
  if (!m) throw new Error(`pgbench failed for ${path.basename(file)}: ${r.stderr || r.stdout}`);
  return Number(m[1]);
}

async function cpuPerCall(url: string, sql: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const pid = (await c.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid;
    const runTime = () => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
    for (let i = 0; i < 100; i++) await c.query({ name: "shape", text: sql });
    const t0 = runTime();
    for (let i = 0; i < CPU_CALLS; i++) await c.query({ name: "shape", text: sql });
    return (runTime() - t0) / CPU_CALLS / 1000;
  } finally {
    await c.end();
  }
}

const server = await startBenchServer();
try {
  const url = await server.freshDatabase("bench_shapes");
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await migrate(pool);
  await pool.query(SETUP);
  await pool.query(enqueueOne(LIVE_KEY)); // binds the live key the replay shapes repeat
  await pool.end();
  const dir = mkdtempSync(path.join(tmpdir(), "workhorse-shapes-"));
  const files = Object.fromEntries(
    Object.entries({ ...SHAPES, ...BATCHES }).map(([name, sql]) => {
      const file = path.join(dir, `${name}.sql`);
      writeFileSync(file, `${sql.replace(/\s+/g, " ")};\n`);
      return [name, file];
    }),
  );
  const names = Object.keys(SHAPES);
  const tps8: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const tps1: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const cpu: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const batch8: Record<string, number[]> = Object.fromEntries(Object.keys(BATCHES).map((n) => [n, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of Object.keys(SHAPES)) {
      tps8[name]?.push(pgbench(url, files[name] as string, 8));
      tps1[name]?.push(pgbench(url, files[name] as string, 1));
      cpu[name]?.push(await cpuPerCall(url, SHAPES[name] as string));
    }
    for (const name of Object.keys(BATCHES)) batch8[name]?.push(pgbench(url, files[name] as string, 8) * 1000);
    process.stderr.write(`[shapes] round ${round}/${ROUNDS} done\n`);
  }
  const f8 = median(tps8.floor as number[]);
  const f1 = median(tps1.floor as number[]);
  const fd8 = median(tps8["floor-dup"] as number[]);
  const fc = median(cpu.floor as number[]);
  console.log(
    `server-side shapes, ${ROUNDS} rounds of ${SECONDS} s, medians (ratios against the floor; replays against floor-dup)`,
  );
  console.log(
    "| shape | calls/s, 8 clients | ÷ floor | calls/s, 1 client | ÷ floor | µs server CPU per call | ÷ floor |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const name of Object.keys(SHAPES)) {
    const replay = name === "core-replay" || name === "probe" || name === "floor-dup";
    const t8 = median(tps8[name] as number[]);
    const t1 = median(tps1[name] as number[]);
    const c = median(cpu[name] as number[]);
    console.log(
      `| ${name} | ${Math.round(t8).toLocaleString("en-US")} | ${(t8 / (replay ? fd8 : f8)).toFixed(2)}x | ` +
        `${Math.round(t1).toLocaleString("en-US")} | ${(t1 / f1).toFixed(2)}x | ${c.toFixed(0)} | ${(c / fc).toFixed(2)}x |`,
    );
  }
  const fb = median(batch8["floor-batch"] as number[]);
  console.log("\n| batch of 1,000, half new, 8 clients | requests/s | ÷ floor-batch |");
  console.log("| --- | ---: | ---: |");
  for (const name of Object.keys(BATCHES)) {
    const b = median(batch8[name] as number[]);
    console.log(`| ${name} | ${Math.round(b).toLocaleString("en-US")} | ${(b / fb).toFixed(2)}x |`);
  }
} finally {
  await server.stop();
}

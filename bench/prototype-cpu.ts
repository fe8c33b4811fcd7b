/**
 * PostgreSQL's CPU per `workhorse.enqueue_one` call, for the shipped core and for core prototypes
 * (SQL files run after the migrations, as `npm run bench -- --prototype` runs them), with no client
 * in the measure: one connection calls the function `--calls` times (a keyed accept with a new key,
 * and a replay of a live key) and the backend's run time is read from /proc/<pid>/schedstat, with
 * the WAL the calls wrote (`pg_current_wal_lsn()` before and after; the server is this script's own).
 * New jobs get time-ordered ids, as the clients' UUIDv7s are (the job's primary key grows at its
 * right edge), built in SQL because PostgreSQL 15-17 have no uuidv7().
 * Variants are measured in a shuffled order each round; medians of `--rounds`.
 *
 *   npx tsx bench/prototype-cpu.ts [--calls=2000] [--rounds=3] a.sql b.sql+c.sql
 *
 * A diagnostic for prototyping the write path (docs/benchmarks.md, "Where an accept's CPU goes"):
 * it says what a design costs the server, before a prototype is worth a full `npm run bench`.
 * Start it when nothing else runs on the machine.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { migrate } from "@workhorse/core";
import pg from "pg";
import { startBenchServer } from "./lib/env";

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) =>
  Number(args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const CALLS = flag("calls", 2000);
const ROUNDS = flag("rounds", 3);
const variants: Record<string, string[]> = { shipped: [] };
for (const a of args.filter((x) => !x.startsWith("--")))
  variants[
    a
      .split("+")
      .map((f) => path.basename(f))
      .join(" + ")
  ] = a.split("+");

const FIELDS = `'\\x${"ab".repeat(80)}'::bytea`;
const TIME_ORDERED_ID = `(lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0')
  || substr(md5(random()::text), 1, 20))::uuid`;
const call = (key: string) => `select * from workhorse.enqueue_one(${TIME_ORDERED_ID}, 'billing', 'invoice.capture',
  '{"invoiceId":"INV-1","amount":4200,"currency":"EUR","customer":"cus_1","lines":[1,2,3]}'::jsonb, null, 25, null,
  null, null, null, '{}'::text[], 'idempotency', 'invoice-capture', ${key}, 'ab…', 20, 86400000, ${FIELDS}, false)`;
const ACCEPT = call("sha256(gen_random_uuid()::text::bytea)");
const REPLAY = call("sha256('live'::bytea)");

/**
 * Backend CPU per call, in µs, and WAL bytes per call of `sql` run `CALLS` times on one connection
 * (after 200 warm-up calls).
 */
async function cpuPerCall(url: string, sql: string): Promise<{ us: number; wal: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const pid = (await c.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid;
    const runTime = () => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
    for (let i = 0; i < 200; i++) await c.query({ name: "call", text: sql });
    const lsn = async () => (await c.query<{ l: string }>("select pg_current_wal_lsn()::text as l")).rows[0]?.l;
    const l0 = await lsn();
    const t0 = runTime();
    for (let i = 0; i < CALLS; i++) await c.query({ name: "call", text: sql });
    const us = (runTime() - t0) / 1000 / CALLS;
    const wal = await c.query<{ b: string }>("select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::text as b", [
      l0,
    ]);
    return { us, wal: Number(wal.rows[0]?.b) / CALLS };
  } finally {
    await c.end();
  }
}

const server = await startBenchServer();
try {
  const urls: Record<string, string> = {};
  for (const [i, [name, files]] of Object.entries(variants).entries()) {
    const url = await server.freshDatabase(`prototype_cpu_${i}`);
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    await migrate(pool);
    for (const f of files) await pool.query(readFileSync(f, "utf8"));
    await pool.query(REPLAY); // binds the live key
    await pool.end();
    urls[name] = url;
  }
  const measured: Record<string, { accept: number[]; replay: number[]; wal: number[] }> = {};
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of Object.keys(variants).sort(() => Math.random() - 0.5)) {
      const m = measured[name] ?? { accept: [], replay: [], wal: [] };
      measured[name] = m;
      const accept = await cpuPerCall(urls[name] as string, ACCEPT);
      m.accept.push(accept.us);
      m.wal.push(accept.wal);
      m.replay.push((await cpuPerCall(urls[name] as string, REPLAY)).us);
    }
    process.stderr.write(`[prototype-cpu] round ${round}/${ROUNDS} done\n`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const base = measured.shipped as { accept: number[]; replay: number[] };
  console.log("| variant | accept, µs server CPU | ÷ shipped | accept WAL B | replay, µs | ÷ shipped |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const [name, m] of Object.entries(measured)) {
    const a = median(m.accept);
    const r = median(m.replay);
    console.log(
      `| ${name} | ${a.toFixed(0)} | ${(a / median(base.accept)).toFixed(2)}x | ${median(m.wal).toFixed(0)} | ${r.toFixed(0)} | ${(r / median(base.replay)).toFixed(2)}x |`,
    );
  }
} finally {
  await server.stop();
}

/**
 * Where an accept's CPU goes: the client process's CPU and PostgreSQL's (every `postgres` process on
 * this machine, read from /proc) per call, for the floor INSERT and for keyed accepts through the
 * `Queue`, at 1 and 8 callers. A diagnostic beside `npm run bench` (which reports throughput
 * ratios), run on a quiet machine against a server on this machine:
 *
 *   npx tsx bench/cpu-split.ts postgres://user:pass@127.0.0.1:5432/postgres [--calls=4000]
 *
 * Each case gets a fresh database, a warm-up of `calls` calls, then `calls` measured calls.
 */
import { migrate, Queue } from "@workhorse/core";
import pg from "pg";
import { serverCpuUs } from "./lib/cpu";

const adminUrl = process.argv[2];
if (!adminUrl?.startsWith("postgres")) throw new Error("usage: npx tsx bench/cpu-split.ts <admin url> [--calls=N]");
const calls = Number(process.argv.find((a) => a.startsWith("--calls="))?.slice(8) ?? 4000);

async function freshDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name}`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(adminUrl as string);
  u.pathname = `/${name}`;
  return u.toString();
}

async function measure(label: string, callers: number, call: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < calls) await call(next++);
  };
  await Promise.all(Array.from({ length: callers }, run)); // warm-up
  next = 0;
  const node0 = process.cpuUsage();
  const pg0 = serverCpuUs("postgres") ?? 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: callers }, run));
  const wallMs = performance.now() - t0;
  const node = process.cpuUsage(node0);
  const pgMs = ((serverCpuUs("postgres") ?? 0) - pg0) / 1000;
  console.log(
    `${label.padEnd(34)} ${String(callers).padStart(7)} ${Math.round((calls / wallMs) * 1000)
      .toLocaleString("en-US")
      .padStart(9)} ${String(Math.round((node.user + node.system) / calls)).padStart(9)} ${String(
      Math.round((pgMs * 1000) / calls),
    ).padStart(13)}`,
  );
}

const payload = (k: string) => ({ invoice: k, amount: 4200, currency: "EUR" });
console.log(`${"case".padEnd(34)} callers   calls/s  client µs  PostgreSQL µs   (per call)`);
for (const callers of [1, 8]) {
  {
    const pool = new pg.Pool({ connectionString: await freshDatabase("cpu_split_floor"), max: 8 });
    await pool.query(
      "create table f (id uuid primary key, k text unique, payload jsonb, created_at timestamptz default now())",
    );
    const run = Date.now();
    await measure("floor: one-row INSERT", callers, (i) =>
      pool.query({
        name: "floor",
        text: "insert into f (id, k, payload) values (gen_random_uuid(), $1, $2)",
        values: [`${run}-${i}-${Math.random()}`, JSON.stringify(payload(String(i)))],
      }),
    );
    await pool.end();
  }
  for (const notify of [true, false]) {
    const pool = new pg.Pool({ connectionString: await freshDatabase("cpu_split_ours"), max: 8 });
    await migrate(pool);
    const queue = new Queue({ pool, maintenance: false, notify });
    let n = 0;
    await measure(`Workhorse keyed accept, notify ${notify ? "on" : "off"}`, callers, () => {
      const k = `k-${++n}`;
      return queue.enqueue("invoice.capture", payload(k), {
        queue: "billing",
        idempotency: { key: k, scope: "invoice-capture" },
      });
    });
    await queue.close();
    await pool.end();
  }
}

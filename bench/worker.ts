/**
 * Worker throughput: jobs/s that one Worker processes with a no-op handler, at concurrency 1 and 8.
 *
 *   npx tsx bench/worker.ts                 5 rounds x 3,000 jobs per concurrency
 *   npx tsx bench/worker.ts --jobs=1000 --rounds=2 --concurrency=1,8,16
 *
 * One private embedded PostgreSQL (or DATABASE_URL), default durability (fsync and synchronous_commit
 * on). Each round: a fresh database, migrate, enqueue the backlog (not timed), then time one worker
 * from start() until its last job is recorded as succeeded (the completion committed). Prints each
 * round and the median.
 */

import { Queue } from "@workhorse/core";
import pg from "pg";
import { startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { type BenchDatabaseServer, drainRate, withFreshDatabase } from "./lib/worker-drain";

function arg(name: string, fallback: string): string {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? hit.slice(name.length + 3) : fallback;
}

const JOBS = Number(arg("jobs", "3000"));
const ROUNDS = Number(arg("rounds", "5"));
const CONCURRENCY = arg("concurrency", "1,8").split(",").map(Number);

async function round(server: BenchDatabaseServer, concurrency: number, i: number) {
  return withFreshDatabase(server, `workhorse_bench_worker_${process.pid}_${concurrency}_${i}`, async (pool) => {
    const queue = new Queue({ pool, maintenance: false, notify: false });
    for (let done = 0; done < JOBS; done += 1000) {
      const n = Math.min(1000, JOBS - done);
      await queue.enqueueMany(Array.from({ length: n }, (_, k) => ({ type: "noop", payload: { k: done + k } })));
    }
    await queue.close();
    await pool.query("vacuum analyze workhorse.job");
    return drainRate(pool, JOBS, concurrency);
  });
}

async function main() {
  const info = await startPrivateServer({ ephemeral: true });
  try {
    const admin = new pg.Client({ connectionString: info.adminUrl });
    await admin.connect();
    const settings = await admin.query<{ name: string; setting: string }>(
      "select name, setting from pg_settings where name in ('server_version', 'fsync', 'synchronous_commit') order by name",
    );
    await admin.end();
    console.log(`worker bench: ${JOBS} no-op jobs per round, ${ROUNDS} rounds`);
    console.log(`  ${settings.rows.map((r) => `${r.name}=${r.setting}`).join(" ")}`);
    const summary: Record<string, number> = {};
    for (const c of CONCURRENCY) {
      const rates: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const rate = await round(info, c, i);
        rates.push(rate);
        console.log(`  concurrency ${c}, round ${i + 1}: ${rate.toFixed(0)} jobs/s`);
      }
      rates.sort((a, b) => a - b);
      const median = rates[Math.floor(rates.length / 2)] as number;
      summary[`concurrency ${c}`] = Math.round(median);
      console.log(
        `concurrency ${c}: median ${median.toFixed(0)} jobs/s (min ${rates[0]?.toFixed(0)}, max ${rates.at(-1)?.toFixed(0)})`,
      );
    }
    console.log(JSON.stringify({ bench: "worker", jobs: JOBS, rounds: ROUNDS, jobsPerSecond: summary }));
  } finally {
    await stopEmbeddedPostgres();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

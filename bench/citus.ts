/**
 * `npm run bench -- --citus [--quick]`: the core on one node against the same core on Citus, on this
 * machine. Two clusters from scripts/citus-cluster.sh with default durability
 * (WORKHORSE_CITUS_DURABLE=1): a coordinator with no workers holding the single-node layout, and a
 * coordinator with two workers holding the distributed layout (same PostgreSQL 15 build, same
 * settings). Runs as root (the script starts the servers as `postgres`). Scenarios, 8 callers each:
 * keyed accept (a new key per call), replay (a repeat of one of 1,000 live keys), and a keyed batch
 * of 1,000 (half new keys). Prints a table and writes bench/results/citus-<time>.json.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { migrate, Queue } from "@workhorse/core";
import pg from "pg";
import { prepareCitusDatabase } from "../test/citus";

const CALLERS = 8;
const BATCH = 1000;
const log = (s: string) => process.stderr.write(`[bench:citus] ${s}\n`);

interface Cluster {
  dir: string;
  url: string;
}

function startCluster(workers: number): Cluster {
  const out = execFileSync("bash", [path.join("scripts", "citus-cluster.sh"), "start", String(workers)], {
    env: { ...process.env, WORKHORSE_CITUS_DURABLE: "1" },
    encoding: "utf8",
  });
  const get = (name: string) => out.match(new RegExp(`^export ${name}=(.*)$`, "m"))?.[1] as string;
  return { dir: get("CITUS_CLUSTER_DIR"), url: get("DATABASE_URL") };
}

function stopCluster(c: Cluster): void {
  execFileSync("bash", [path.join("scripts", "citus-cluster.sh"), "stop", c.dir], { stdio: "ignore" });
}

/**
 * CPU seconds (user + system) used so far by each node of the cluster: its postmaster and every
 * child process (backends, Citus's maintenance daemon), from /proc. Node 0 is the coordinator.
 */
function nodeCpu(dir: string): number[] {
  const nodes = readdirSync(dir)
    .filter((n) => /^node\d+$/.test(n))
    .sort((a, b) => Number(a.slice(4)) - Number(b.slice(4)));
  const stats = readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .map((p) => {
      try {
        const f = readFileSync(`/proc/${p}/stat`, "utf8");
        const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
        return { pid: Number(p), ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) };
      } catch {
        return null; // exited meanwhile
      }
    })
    .filter((x) => x !== null);
  return nodes.map((n) => {
    const pid = Number(readFileSync(path.join(dir, n, "postmaster.pid"), "utf8").split("\n")[0]);
    return stats.filter((x) => x.pid === pid || x.ppid === pid).reduce((a, x) => a + x.ticks, 0) / 100;
  });
}

/** Runs `op` from CALLERS callers for `ms`; returns calls per second (and units per second for batches). */
async function drive(ms: number, op: (caller: number, i: number) => Promise<unknown>): Promise<number> {
  let calls = 0;
  const until = Date.now() + ms;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, caller) => {
      for (let i = 0; Date.now() < until; i++) {
        await op(caller, i);
        calls++;
      }
    }),
  );
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  return calls / secs;
}

interface Scenario {
  perSecond: number;
  /** CPU ms per call on the coordinator, and on each worker. */
  coordinatorCpuMs: number;
  workerCpuMs: number[];
}

async function scenario(cluster: Cluster, ms: number, op: (caller: number, i: number) => Promise<unknown>) {
  const before = nodeCpu(cluster.dir);
  let calls = 0;
  const perSecond = await drive(ms, async (c, i) => {
    await op(c, i);
    calls++;
  });
  const after = nodeCpu(cluster.dir);
  const perCall = after.map((a, i) => ((a - (before[i] ?? 0)) * 1000) / Math.max(calls, 1));
  return { perSecond, coordinatorCpuMs: perCall[0] ?? 0, workerCpuMs: perCall.slice(1) } satisfies Scenario;
}

async function measure(label: string, cluster: Cluster, distributed: boolean, ms: number) {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query("drop database if exists bench_citus");
  await admin.query("create database bench_citus");
  await admin.end();
  const url = new URL(cluster.url);
  url.pathname = "/bench_citus";
  if (distributed) await prepareCitusDatabase(cluster.url, url.toString());
  const pool = new pg.Pool({ connectionString: url.toString(), max: CALLERS + 2 });
  await migrate(pool, { distributed });
  const q = new Queue({ pool, maintenance: false, notify: false });
  const run = `${Date.now()}`;
  await q.enqueue("warm", {}, { idempotency: { key: `warm-${run}` } });

  log(`${label}: accept`);
  const accept = await scenario(cluster, ms, (c, i) =>
    q.enqueue("email.send", { to: `u${c}-${i}@example.com` }, { idempotency: { key: `a-${run}-${c}-${i}` } }),
  );
  const live = Array.from({ length: 1000 }, (_, i) => `r-${run}-${i}`);
  for (let i = 0; i < live.length; i += BATCH) {
    await q.enqueueMany(
      live
        .slice(i, i + BATCH)
        .map((key) => ({ type: "email.send", payload: { key }, options: { idempotency: { key } } })),
    );
  }
  log(`${label}: replay`);
  const replay = await scenario(cluster, ms, (c, i) => {
    const key = live[(c * 7919 + i) % live.length] as string;
    return q.enqueue("email.send", { key }, { idempotency: { key } });
  });
  log(`${label}: batch`);
  const batch = await scenario(cluster, ms * 2, (c, i) =>
    q.enqueueMany(
      Array.from({ length: BATCH }, (_, k) => {
        const key = k % 2 === 0 ? `b-${run}-${c}-${i}-${k}` : (live[k % live.length] as string);
        return { type: "email.send", payload: { key }, options: { idempotency: { key } } };
      }),
    ),
  );
  await q.close();
  await pool.end();
  return { accept, replay, batch };
}

export async function runCitusBench(quick: boolean): Promise<void> {
  const ms = quick ? 4000 : 15000;
  const load = os.loadavg()[0] ?? 0;
  log(`${quick ? "quick" : "full"} run, ${ms} ms per scenario, load average ${load.toFixed(2)}`);
  const results: Record<string, { accept: Scenario; replay: Scenario; batch: Scenario }> = {};
  for (const [label, workers] of [
    ["single node", 0],
    ["Citus, coordinator + 2 workers", 2],
  ] as const) {
    const cluster = startCluster(workers);
    try {
      results[label] = await measure(label, cluster, workers > 0, ms);
    } finally {
      stopCluster(cluster);
    }
  }
  const n = (x: number) => Math.round(x).toLocaleString("en");
  const cpu = (x: Scenario) =>
    `${x.coordinatorCpuMs.toFixed(2)}${x.workerCpuMs.length ? ` / ${x.workerCpuMs.map((w) => w.toFixed(2)).join(" + ")}` : ""}`;
  const rows = Object.entries(results).map(
    ([label, r]) =>
      `| ${label} | ${n(r.accept.perSecond)} | ${n(r.replay.perSecond)} | ${n(r.batch.perSecond * BATCH)} | ${cpu(r.accept)} | ${cpu(r.replay)} | ${cpu(r.batch)} |`,
  );
  const table = [
    "| layout (8 callers) | keyed accept, calls/s | replay, calls/s | batch of 1,000 (half new), jobs/s | CPU ms per accept (coordinator / workers) | per replay | per batch |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows,
  ].join("\n");
  process.stdout.write(`${table}\n`);
  const dir = path.join("bench", "results");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `citus-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ quick, ms, callers: CALLERS, cpus: os.cpus().length, loadAverage: load, results }, null, 2)}\n`,
  );
  log(`wrote ${file}`);
}

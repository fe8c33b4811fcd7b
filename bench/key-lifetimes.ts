/**
 * Key lifetimes (docs/enqueue.md, "Key lifetimes"): what the release step costs, in one interleaved
 * run on one PostgreSQL.
 *
 *   npm run bench -- --lifetimes                        5 rounds (~3 minutes on 2 cores)
 *   npx tsx bench/key-lifetimes.ts --rounds=3 --jobs=2000 --calls=2000
 *
 * Each round, in a rotated order, a fresh database per variant:
 *   claim+complete (a Worker, concurrency 8, no-op handler, `--jobs` keyed jobs queued beforehand):
 *     - `before`: keyed jobs without a lifetime, claim_jobs and complete_jobs as they were before
 *       lifetimes existed (bench/prototypes/before-key-lifetimes.sql installed over the current ones);
 *     - `before-generic`: the same, its claim on the one generic plan the current claim_jobs uses
 *       (plan_cache_mode = force_generic_plan), so `ttl ÷ before-generic` is the release step alone;
 *     - `ttl`: the same jobs on the current SQL (the release step present, never taken);
 *     - `finished`: keyed jobs with `holdUntil: "finished"` (each completion deletes its binding and
 *       writes a `key_released` event).
 *   keyed accept (`--calls` calls of a new key each, 8 callers, `coalesce: false`):
 *     - `ttl`: `idempotency: { key }`; `finished`: `idempotency: { key, holdUntil: "finished" }`.
 * Prints per-round rates, the medians and the ratios (`ttl ÷ before` is what jobs without a lifetime
 * pay; the target is >= 0.97), and writes JSON to bench/results/.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Queue } from "@workhorse/core";
import type pg from "pg";
import { startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { drainRate, withFreshDatabase } from "./lib/worker-drain";

function arg(name: string, fallback: string): string {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? hit.slice(name.length + 3) : fallback;
}

const ROUNDS = Number(arg("rounds", "5"));
const JOBS = Number(arg("jobs", "3000"));
const CALLS = Number(arg("calls", "3000"));
const CALLERS = 8;
const BEFORE_SQL = readFileSync(path.join(import.meta.dirname, "prototypes/before-key-lifetimes.sql"), "utf8");
const GENERIC_CLAIM_PLAN =
  "alter function workhorse.claim_jobs(text[], text[], text, integer, integer, boolean) set plan_cache_mode = force_generic_plan";

/** `--prototype=a.sql,b.sql`: each file installed over the current functions is one more claim variant (jobs without a lifetime). */
const PROTOTYPES = arg("prototype", "")
  .split(",")
  .filter(Boolean)
  .map((file) => ({ variant: `claim:${path.basename(file, ".sql")}` as const, sql: readFileSync(file, "utf8") }));

type Variant =
  | "claim:before"
  | "claim:before-generic"
  | "claim:ttl"
  | "claim:finished"
  | "accept:ttl"
  | "accept:finished"
  | `claim:${string}`;
const VARIANTS: Variant[] = [
  "claim:before",
  "claim:before-generic",
  "claim:ttl",
  "claim:finished",
  "accept:ttl",
  "accept:finished",
  ...PROTOTYPES.map((p) => p.variant),
];

const idempotency = (i: number, lifetime: boolean) =>
  lifetime ? { key: `k-${i}`, holdUntil: "finished" as const } : { key: `k-${i}` };

/** Jobs/s one Worker (concurrency 8) records as succeeded, from start until the last completion. */
async function claimComplete(pool: pg.Pool, variant: Variant): Promise<number> {
  if (variant === "claim:before" || variant === "claim:before-generic") await pool.query(BEFORE_SQL);
  if (variant === "claim:before-generic") await pool.query(GENERIC_CLAIM_PLAN);
  const prototype = PROTOTYPES.find((p) => p.variant === variant);
  if (prototype) await pool.query(prototype.sql);
  const lifetime = variant === "claim:finished";
  const queue = new Queue({ pool, maintenance: false, notify: false });
  for (let done = 0; done < JOBS; done += 1000) {
    const n = Math.min(1000, JOBS - done);
    await queue.enqueueMany(
      Array.from({ length: n }, (_, k) => ({
        type: "noop",
        payload: { k: done + k },
        options: { idempotency: idempotency(done + k, lifetime) },
      })),
    );
  }
  await queue.close();
  await pool.query("vacuum analyze workhorse.job, workhorse.key_binding");
  const rate = await drainRate(pool, JOBS, 8);
  const { rows } = await pool.query<{ held: string }>("select count(*) as held from workhorse.key_binding");
  const expectHeld = lifetime ? 0 : JOBS;
  if (Number(rows[0]?.held) !== expectHeld)
    throw new Error(`${variant}: ${rows[0]?.held} bindings (want ${expectHeld})`);
  return rate;
}

/** Accepted calls/s: `CALLS` keyed calls of new keys from 8 callers on one Queue. */
async function accept(pool: pg.Pool, variant: Variant): Promise<number> {
  const lifetime = variant === "accept:finished";
  const queue = new Queue({ pool, maintenance: false, notify: false, coalesce: false });
  const warm = Array.from({ length: 100 }, (_, i) => i);
  for (const i of warm) await queue.enqueue("t", { i }, { idempotency: idempotency(-1 - i, lifetime) });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      for (let i = next++; i < CALLS; i = next++) {
        await queue.enqueue("t", { i }, { idempotency: idempotency(i, lifetime) });
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await queue.close();
  return CALLS / seconds;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

async function main() {
  const info = await startPrivateServer({ ephemeral: true });
  const rates = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  const started = new Date();
  try {
    console.log(`key lifetimes bench: ${ROUNDS} rounds, ${JOBS} jobs per claim run, ${CALLS} calls per accept run`);
    for (let r = 0; r < ROUNDS; r++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length] as Variant);
      for (const v of order) {
        const name = `workhorse_bench_lifetimes_${process.pid}`;
        const rate = await withFreshDatabase(info, name, (pool) =>
          v.startsWith("claim:") ? claimComplete(pool, v) : accept(pool, v),
        );
        rates.get(v)?.push(rate);
        console.log(`  round ${r + 1} ${v.padEnd(16)} ${rate.toFixed(0)}/s`);
      }
    }
  } finally {
    await stopEmbeddedPostgres();
  }
  const med = (v: Variant) => median(rates.get(v) ?? []);
  const m = Object.fromEntries(VARIANTS.map((v) => [v, med(v)]));
  const ratios: Record<string, number> = {
    "claim+complete without a lifetime ÷ before lifetimes (target >= 0.97)": med("claim:ttl") / med("claim:before"),
    "claim+complete without a lifetime ÷ before, its claim on the generic plan (the release step alone)":
      med("claim:ttl") / med("claim:before-generic"),
    "claim+complete with holdUntil ÷ without": med("claim:finished") / med("claim:ttl"),
    "keyed accept with holdUntil ÷ without": med("accept:finished") / med("accept:ttl"),
  };
  for (const p of PROTOTYPES)
    ratios[`claim+complete without a lifetime ÷ ${p.variant}`] = med("claim:ttl") / med(p.variant);
  console.log("medians (jobs/s):");
  for (const v of VARIANTS) console.log(`  ${v.padEnd(16)} ${med(v).toFixed(0)}`);
  console.log("ratios:");
  for (const [k, x] of Object.entries(ratios)) console.log(`  ${k}: ${x.toFixed(3)}x`);
  const out = path.join(import.meta.dirname, "results");
  mkdirSync(out, { recursive: true });
  const file = path.join(out, `key-lifetimes-${started.toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ bench: "key-lifetimes", rounds: ROUNDS, jobs: JOBS, calls: CALLS, rates: Object.fromEntries(rates), medians: m, ratios }, null, 2)}\n`,
  );
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

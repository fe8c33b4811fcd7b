/**
 * Operator actions: what a bulk cancel, purge and dead-letter delete of the largest selection
 * (MAX_JOB_IDS ids) and a single-job cancel cost with the text one node and Citus share (`shared`:
 * each job locked in id order, then set-based changes) against what ran before
 * (`before`, the texts at commit 8b9e6d8, read from git): on one node set-based statements, on Citus
 * a hand-written variant changing each job by statements of its own.
 * docs/benchmarks.md, "Operator actions: one text for both layouts".
 *
 *   npx tsx bench/operator-actions.ts                  7 rounds on an embedded server (~1 minute on 2 cores)
 *   npx tsx bench/operator-actions.ts --rounds=3 --ids=500
 *   eval "$(scripts/citus-cluster.sh start 2)"; npx tsx bench/operator-actions.ts --citus
 *                                                      the same on that cluster's coordinator (DATABASE_URL)
 *
 * Each round, in alternating order, a fresh database per variant holding 3 x `--ids` keyed jobs
 * (one in three with `holdUntil: "finished"`, so the held-key release runs too): `cancel_jobs` on
 * the first third (ready jobs), `purge_job_list` on the second, `delete_failed_jobs` on the third
 * (made failed first; their keys released with them), each one call timed from the client; then 200 single-id cancels of new jobs.
 * Prints per-round times, the medians and shared ÷ before, and writes JSON to bench/results/.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { MAX_JOB_IDS, Queue } from "@workhorse/core";
import type pg from "pg";
import { startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { type BenchDatabaseServer, withFreshDatabase } from "./lib/worker-drain";

function arg(name: string, fallback: string): string {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? hit.slice(name.length + 3) : fallback;
}

const ROUNDS = Number(arg("rounds", "7"));
const IDS = Number(arg("ids", String(MAX_JOB_IDS)));
const SINGLES = 200;
const CITUS = process.argv.includes("--citus");
/** The commit whose operator-action texts the `before` variant installs: the last before they were shared. */
const BEFORE_COMMIT = "8b9e6d8";
const BEFORE_SQL = ["cancel_jobs", "purge_job_list", "delete_failed_jobs"]
  .map((name) => {
    const file = `sql/functions/${CITUS ? "citus/" : ""}${name}.sql`;
    try {
      return execFileSync("git", ["show", `${BEFORE_COMMIT}:${file}`], { encoding: "utf8" });
    } catch {
      throw new Error(
        `the before variant reads ${file} at ${BEFORE_COMMIT} from git: run the bench in a clone with history`,
      );
    }
  })
  .join("\n");

const VARIANTS = ["before", "shared"] as const;
type Variant = (typeof VARIANTS)[number];
const MEASURES = ["cancel", "purge", "delete failed", "single cancel"] as const;
type Measure = (typeof MEASURES)[number];

async function enqueueKeyed(queue: Queue, tag: string, n: number): Promise<string[]> {
  return queue.enqueueMany(
    Array.from({ length: n }, (_, i) => ({
      type: "t",
      payload: { i },
      options: {
        idempotency: i % 3 === 0 ? { key: `${tag}-${i}`, holdUntil: "finished" as const } : { key: `${tag}-${i}` },
      },
    })),
  );
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await run();
  return performance.now() - t0;
}

/** Milliseconds per measure in one fresh database with `variant`'s functions. */
async function round(pool: pg.Pool, variant: Variant): Promise<Record<Measure, number>> {
  if (variant === "before") await pool.query(BEFORE_SQL);
  const queue = new Queue({ pool, maintenance: false, notify: false, coalesce: false });
  const [cancel, purge, failed] = [
    await enqueueKeyed(queue, "c", IDS),
    await enqueueKeyed(queue, "p", IDS),
    await enqueueKeyed(queue, "d", IDS),
  ];
  const singles = await enqueueKeyed(queue, "s", SINGLES);
  await queue.close();
  await pool.query("update workhorse.job set state = 'failed', finished_at = now() where id = any ($1)", [failed]);
  await pool.query("vacuum analyze workhorse.job, workhorse.key_binding, workhorse.job_event");
  const who = ["bench", "operator actions"];
  const result = {
    cancel: await timed(() => pool.query("select * from workhorse.cancel_jobs($1, $2, $3)", [cancel, ...who])),
    purge: await timed(() => pool.query("select * from workhorse.purge_job_list($1, $2, $3)", [purge, ...who])),
    "delete failed": await timed(() =>
      pool.query("select * from workhorse.delete_failed_jobs($1, $2, $3, true)", [failed, ...who]),
    ),
    "single cancel": 0,
  };
  const t0 = performance.now();
  for (const id of singles) await pool.query("select * from workhorse.cancel_jobs($1, $2, $3)", [[id], ...who]);
  result["single cancel"] = (performance.now() - t0) / SINGLES;
  // Both variants must have done the same work.
  const { rows } = await pool.query<{ state: string; n: number }>(
    "select state, count(*)::int as n from workhorse.job group by 1 order by 1",
  );
  const states = Object.fromEntries(rows.map((r) => [r.state, r.n]));
  const want = { canceled: IDS + SINGLES, purged: IDS };
  if (states.canceled !== want.canceled || states.purged !== want.purged || states.failed !== undefined) {
    throw new Error(`${variant}: job states ${JSON.stringify(states)}, want ${JSON.stringify(want)} and no failed`);
  }
  return result;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The Citus coordinator at DATABASE_URL (a cluster from scripts/citus-cluster.sh), as a bench server. */
function citusServer(): BenchDatabaseServer {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('--citus needs DATABASE_URL: eval "$(scripts/citus-cluster.sh start 2)" first');
  const urlFor = (db: string) => Object.assign(new URL(adminUrl), { pathname: `/${db}` }).toString();
  return { adminUrl, urlFor };
}

async function main() {
  const info = CITUS ? null : await startPrivateServer({ ephemeral: true });
  const server = info ?? citusServer();
  const times = new Map<string, number[]>();
  const started = new Date();
  try {
    console.log(
      `operator actions bench${CITUS ? " on Citus" : ""}: ${ROUNDS} rounds, ${IDS} ids per bulk call, ${SINGLES} single cancels`,
    );
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? [...VARIANTS].reverse() : VARIANTS;
      for (const v of order) {
        const name = `workhorse_bench_operator_${process.pid}`;
        const ms = await withFreshDatabase(server, name, (pool) => round(pool, v), { distributed: CITUS });
        for (const m of MEASURES) times.set(`${v} ${m}`, [...(times.get(`${v} ${m}`) ?? []), ms[m]]);
        console.log(
          `  round ${r + 1} ${v.padEnd(10)} ${MEASURES.map((m) => `${m} ${ms[m].toFixed(2)} ms`).join(", ")}`,
        );
      }
    }
  } finally {
    if (info) await stopEmbeddedPostgres();
  }
  const medians = Object.fromEntries([...times].map(([k, xs]) => [k, median(xs)]));
  const ratios = Object.fromEntries(
    MEASURES.map((m) => [m, (medians[`shared ${m}`] as number) / (medians[`before ${m}`] as number)]),
  );
  console.log("medians (ms per call):");
  for (const [k, x] of Object.entries(medians)) console.log(`  ${k.padEnd(26)} ${x.toFixed(2)}`);
  console.log("shared ÷ before:");
  for (const [k, x] of Object.entries(ratios)) console.log(`  ${k.padEnd(14)} ${x.toFixed(2)}x`);
  const out = path.join(import.meta.dirname, "results");
  mkdirSync(out, { recursive: true });
  const file = path.join(
    out,
    `operator-actions${CITUS ? "-citus" : ""}-${started.toISOString().replace(/[:.]/g, "-")}.json`,
  );
  writeFileSync(
    file,
    `${JSON.stringify({ bench: "operator-actions", citus: CITUS, rounds: ROUNDS, ids: IDS, singles: SINGLES, times: Object.fromEntries(times), medians, ratios }, null, 2)}\n`,
  );
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

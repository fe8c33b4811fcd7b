/**
 * Where the server's time goes for one scenario of the bench: runs a contender (ours, or the floor)
 * with 8 callers for a few seconds while `perf record` samples the PostgreSQL backends, then prints
 * the hottest functions (self time) and pg_stat_statements' mean execution time per statement.
 *
 *   npx tsx bench/profile.ts [--scenario=accept|replay|batch|debounce|throttle] [--contender=ours|floor] [--seconds=8]
 *
 * Needs `perf` (Debian's linux-perf) and root. Profiles on a shared machine are shares of the
 * backends' own CPU samples, so they hold under load; absolute times do not.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { type Contender, floor, ours, POOL_MAX } from "./contenders";
import { startBenchServer } from "./lib/env";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, "").split("=");
    return [k ?? "", v ?? "true"];
  }),
);
const scenario = (args.get("scenario") ?? "accept") as "accept" | "replay" | "batch" | "debounce" | "throttle";
const which = args.get("contender") ?? "ours";
const seconds = Number(args.get("seconds") ?? 8);

const server = await startBenchServer();
const url = await server.freshDatabase("profile");
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query("create extension if not exists pg_stat_statements").catch((err: Error) => {
  process.stdout.write(`(pg_stat_statements unavailable: ${err.message})\n`);
});
const contender: Contender =
  which === "floor"
    ? await floor({ database: async () => url, redis: null })
    : await ours({ database: async () => url, redis: null });
await contender.prepare();
const op = contender[scenario];
if (!op) throw new Error(`${contender.label} has no ${scenario} scenario`);

// Warm up, then find the backends serving the pool.
let i = 0;
const run = async (until: number) => {
  let calls = 0;
  await Promise.all(
    Array.from({ length: POOL_MAX }, async () => {
      while (Date.now() < until) {
        await op(i++);
        calls++;
      }
    }),
  );
  return calls;
};
await run(Date.now() + 1000);
await admin.query("select pg_stat_statements_reset()").catch(() => {});
const { rows: backends } = await admin.query<{ pid: number }>(
  "select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'",
);
const dir = mkdtempSync(path.join(tmpdir(), "workhorse-perf-"));
const data = path.join(dir, "perf.data");
const perf = spawn(
  "perf",
  ["record", "-F", "299", "--call-graph", "dwarf,8192", "-o", data, "-p", backends.map((b) => b.pid).join(",")],
  { stdio: ["ignore", "ignore", "pipe"] },
);
await new Promise((r) => setTimeout(r, 300));
const t0 = Date.now();
const calls = await run(Date.now() + seconds * 1000);
const elapsed = (Date.now() - t0) / 1000;
perf.kill("SIGINT");
await new Promise((r) => perf.once("exit", r));

process.stdout.write(
  `${contender.label}, ${scenario}, ${POOL_MAX} callers: ${calls} calls in ${elapsed.toFixed(1)} s (${Math.round(calls / elapsed)}/s), backends ${backends.length}\n\n`,
);
const report = execFileSync(
  "perf",
  ["report", "-i", data, "--no-children", "--sort", "symbol", "--stdio", "--percent-limit", "1.5", "-g", "none"],
  { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
);
process.stdout.write("hottest functions in the backends (self time, % of their samples):\n");
for (const line of report.split("\n")) {
  if (/^\s+\d+\.\d+%/.test(line)) process.stdout.write(`${line.replace(/\s+/g, " ").trim()}\n`);
}
// Inclusive shares of the stages an enqueue passes through (a function and everything it calls).
const STAGES: Array<[string, string]> = [
  ["exec_simple_query|exec_bind_message|exec_execute_message|exec_parse_message", "protocol: parse/bind/execute"],
  ["plpgsql_exec_function", "PL/pgSQL function body"],
  ["ExecInitNode|ExecInitExprRec", "executor start (plan and expression init)"],
  ["ExecInsert", "INSERT (heap + indexes)"],
  ["heap_insert", "heap insert"],
  ["btinsert", "B-tree inserts"],
  ["ExecCheckIndexConstraints|_bt_check_unique", "unique checks"],
  ["XLogInsert", "WAL record insert"],
  ["CommitTransaction", "commit"],
  ["XLogFlush|issue_xlog_fsync", "WAL flush (fsync)"],
  ["pg_sha256|sha256|pg_cryptohash", "SHA-256"],
  ["jsonb_in|JsonbValueToJsonb|jsonb_out|JsonbToCString", "jsonb parse / print"],
  ["domain_check|ExecEvalConstraintCheck", "domain checks"],
  ["SPI_execute_plan_with_paramlist|_SPI_execute_plan", "SPI (statements inside PL/pgSQL)"],
  ["pgstat_report|pgstat_", "statistics"],
];
const inclusive = execFileSync(
  "perf",
  ["report", "-i", data, "--children", "--sort", "symbol", "--stdio", "-g", "none", "--percent-limit", "0.2"],
  { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
);
process.stdout.write("\nstages (inclusive: the function and what it calls, % of the backends' samples):\n");
for (const [pattern, label] of STAGES) {
  const re = new RegExp(`\\] (${pattern})\\b`);
  let best = 0;
  for (const line of inclusive.split("\n")) {
    const m = /^\s+(\d+\.\d+)%\s+\d+\.\d+%/.exec(line);
    if (m && re.test(line)) best = Math.max(best, Number(m[1]));
  }
  process.stdout.write(`${best.toFixed(1).padStart(6)}%  ${label}\n`);
}
const { rows: stmts } = await admin
  .query<{ calls: string; mean: number; query: string }>(
    `select calls::text, round(mean_exec_time::numeric, 3)::float as mean, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as query
       from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
      order by total_exec_time desc limit 6`,
  )
  .catch(() => ({ rows: [] as { calls: string; mean: number; query: string }[] }));
if (stmts.length) {
  process.stdout.write("\nstatements by total time (pg_stat_statements: calls, mean ms):\n");
  for (const s of stmts) process.stdout.write(`${s.calls.padStart(8)} ${String(s.mean).padStart(7)}  ${s.query}\n`);
}
await admin.end();
await contender.close();
await server.stop();
rmSync(dir, { recursive: true, force: true });

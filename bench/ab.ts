/**
 * One change to the client measured against a commit before it, in one process: the working tree's
 * core and `--base`'s (checked out by `git worktree` into a temporary directory, sharing this
 * node_modules) run the same scenario beside the floor on one embedded PostgreSQL, in shuffled
 * rounds; reported per request: client CPU (`process.cpuUsage()`, user + system) and throughput,
 * medians and minimums of the rounds.
 *
 *   npx tsx bench/ab.ts [--base=HEAD] [--scenario=accept|replay|batch] [--callers=1] [--calls=2000] [--rounds=5]
 *
 * `--calls` counts batches for `batch` (default 6). Run it on a quiet machine; the worktree is removed at the end.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Contender, floor, ours } from "./contenders";
import { clientCpuUs } from "./lib/cpu";
import { startBenchServer } from "./lib/env";
import { rng, shuffled } from "./lib/measure";

const flags = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const scenario = (flags.get("scenario") ?? "accept") as "accept" | "replay" | "batch";
if (!["accept", "replay", "batch"].includes(scenario)) throw new Error(`--scenario: accept, replay or batch`);
const callers = Number(flags.get("callers") ?? 1);
const calls = Number(flags.get("calls") ?? (scenario === "batch" ? 6 : 2000));
const rounds = Number(flags.get("rounds") ?? 5);
const base = flags.get("base") ?? "HEAD";
const root = path.resolve(import.meta.dirname, "..");

const dir = mkdtempSync(path.join(tmpdir(), "workhorse-ab-"));
execFileSync("git", ["-C", root, "worktree", "add", "--detach", "-q", dir, base]);
symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
const server = await startBenchServer();
const ctx = { database: (n: string) => server.freshDatabase(n), redis: null };
const contenders: Contender[] = [];
try {
  contenders.push(await floor(ctx));
  contenders.push(
    await ours(ctx, { id: "base", label: `base (${base})`, module: path.join(dir, "lib/enqueue/index.ts") }),
  );
  contenders.push(await ours(ctx, { id: "change", label: "working tree" }));
  for (const c of contenders) await c.prepare();
  const perCall = scenario === "batch" ? 1000 : 1;
  const segment = async (op: (i: number) => Promise<unknown>, n: number) => {
    let next = 0;
    const cpu0 = clientCpuUs();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: callers }, async () => {
        for (let i = next++; i < n; i = next++) await op(i);
      }),
    );
    return { us: (clientCpuUs() - cpu0) / (n * perCall), perSec: ((n * perCall) / (performance.now() - t0)) * 1000 };
  };
  for (const c of contenders) await segment(c[scenario] as (i: number) => Promise<unknown>, Math.ceil(calls / 4));
  const got = new Map<string, { us: number[]; perSec: number[] }>(
    contenders.map((c) => [c.id, { us: [], perSec: [] }]),
  );
  const random = rng(7);
  for (let r = 0; r < rounds; r++) {
    for (const c of shuffled(contenders, random)) {
      const s = await segment(c[scenario] as (i: number) => Promise<unknown>, calls);
      got.get(c.id)?.us.push(s.us);
      got.get(c.id)?.perSec.push(s.perSec);
    }
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] as number;
  for (const c of contenders) {
    const g = got.get(c.id) as { us: number[]; perSec: number[] };
    process.stdout.write(
      `${scenario} × ${callers}  ${c.label.padEnd(40)} client µs/request median ${median(g.us).toFixed(1).padStart(6)}  min ${Math.min(
        ...g.us,
      )
        .toFixed(1)
        .padStart(6)}  requests/s median ${Math.round(median(g.perSec))}\n`,
    );
  }
} finally {
  for (const c of contenders) await c.close().catch(() => {});
  await server.stop();
  execFileSync("git", ["-C", root, "worktree", "remove", "--force", dir]);
  rmSync(dir, { recursive: true, force: true });
}

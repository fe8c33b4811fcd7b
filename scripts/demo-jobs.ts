/**
 * What `npm run worker` runs and enqueues: the demo's queues, its handlers and its trickle of jobs.
 * Separate from scripts/worker.ts (the process: signals, logging, the pool) so that a test can run
 * them on a real worker with a seeded random source and count what fails (test/demo-worker.test.ts).
 *
 * Failures are realistic and bounded:
 * - Handlers fail transiently with probability `TRANSIENT_FAILURE` per attempt; every job they see
 *   has at least 4 attempts (the trickle's) or the default 25 (the demo's), so such a job fails for
 *   good with probability at most 0.03^4 (about 1 in a million).
 * - The trickle makes every `doomedEvery`-th job (default 40: 2.5 %) one that fails for good, in
 *   turn by attempts exhausted (a webhook endpoint answering 410 Gone), execution timed out (an SMTP
 *   relay that hangs) and deadline passed; at most `maxDoomed` (default 20) per run, so dead letters
 *   stop growing after the first 10 minutes of a run (2 jobs every 1.5 s).
 */
import { randomBytes } from "node:crypto";
import type { EnqueueOptions, HandlerContext, JobHandler } from "@workhorse/core";
import { uniformFloat64 } from "pure-rand/distribution/uniformFloat64";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";

/**
 * Every queue `npm run demo` writes to; `npm run worker` works these and no other (a test job
 * enqueued from the console into `default`, or any other queue, stays put).
 */
export const DEMO_QUEUES = [
  "orders",
  "webhooks",
  "payments",
  "billing",
  "billing-priority",
  "email",
  "reports",
  "media",
  "search",
  "notifications",
] as const;

/** Chance that one attempt of a demo handler fails with a transient error, 0..1. */
export const TRANSIENT_FAILURE = 0.03;

/** A random number in [0, 1). */
export type Random = () => number;

/** A reproducible `Random` from `seed` (an integer): the same seed draws the same sequence. */
export function seededRandom(seed: number): Random {
  const rng = xoroshiro128plus(seed);
  return () => uniformFloat64(rng);
}

/** Waits `ms` milliseconds, or rejects with the signal's reason when it fires first. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const sleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
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

/** Never settles until `signal` fires (then rejects with its reason): a hung downstream call. */
function hang(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

export class TransientError extends Error {
  override name = "TransientError";
}

type Payload = Record<string, unknown>;

/**
 * The demo worker's handlers: realistic shapes (checkpoints, slow steps), failing transiently with
 * probability `TRANSIENT_FAILURE` per attempt. Payloads whose `doom` field is set fail for good: see
 * `Trickle`. `random` decides the failures and the durations; `sleep` waits (a test passes one that
 * does not wait).
 */
export function demoHandlers({
  random,
  sleep: wait = sleep,
}: {
  random: Random;
  sleep?: Sleep;
}): Record<string, JobHandler<Payload>> {
  const between = (lo: number, hi: number) => Math.round(lo + random() * (hi - lo));
  const transient = (message: string) => {
    if (random() < TRANSIENT_FAILURE) throw new TransientError(message);
  };

  const invoiceCapture: JobHandler<Payload> = async (p, ctx) => {
    // Stage 1, checkpointed: the charge at the payment provider (keyed by job id there too).
    const charge = await ctx.checkpoint("charge", async () => {
      await wait(between(100, 600), ctx.signal);
      transient("payment provider timed out (HTTP 504)");
      return { chargeId: `ch_${randomBytes(6).toString("hex")}`, amount: p.amount ?? null };
    });
    // Stage 2: the ledger entry; fails now and then after the charge, and the retry skips stage 1.
    await wait(between(50, 300), ctx.signal);
    transient("ledger service unavailable");
    return { ...charge, captured: true, invoiceId: p.invoiceId ?? null };
  };

  const orderPlace: JobHandler<Payload> = async (p, ctx) => {
    const reservation = await ctx.checkpoint("reserve-stock", async () => {
      await wait(between(200, 1500), ctx.signal);
      return { reservationId: `res_${randomBytes(4).toString("hex")}` };
    });
    transient("warehouse API returned 503");
    await wait(between(500, 3000), ctx.signal); // slow: these stay visibly active
    return { orderId: `ord_${String(p.cartId ?? ctx.jobId).slice(-8)}`, ...reservation };
  };

  const webhookDeliver: JobHandler<Payload> = async (p, ctx) => {
    await wait(between(50, 400), ctx.signal);
    const url = String(p.url ?? "https://partner.example/hooks");
    if (p.doom === "gone") throw new Error(`POST ${url}: 410 Gone`);
    transient(`POST ${url}: connection reset`);
    return { status: 200, url };
  };

  const emailSend: JobHandler<Payload> = async (p, ctx) => {
    // The SMTP relay hangs: the execution timeout or the deadline fires the signal.
    if (p.doom === "hang") await hang(ctx.signal);
    await wait(between(100, 800), ctx.signal);
    transient("SMTP 421: try again later");
    return { messageId: `<${randomBytes(8).toString("hex")}@mail.example>`, to: p.to ?? null };
  };

  /** Everything else (webhook.payment_succeeded, email.digest, transfer.execute, image.thumbnail, ...). */
  const catchAll: JobHandler<Payload> = async (p, ctx: HandlerContext) => {
    const type = ctx.job.type;
    if (type.startsWith("webhook.")) return webhookDeliver(p, ctx);
    if (type.startsWith("email.")) return emailSend(p, ctx);
    await wait(between(100, type === "image.thumbnail" ? 2500 : 800), ctx.signal);
    transient(`${type}: downstream busy`);
    return { ok: true, type };
  };

  return {
    "invoice.capture": invoiceCapture,
    "order.place": orderPlace,
    "webhook.deliver": webhookDeliver,
    "email.send": emailSend,
    "*": catchAll,
  };
}

/** One job the trickle enqueues: `queue.enqueue(type, payload, options)`. */
export interface TrickleJob {
  type: string;
  payload: Payload;
  options: EnqueueOptions;
  /** How it fails for good, or null when it succeeds (perhaps after transient failures). */
  doom: "attempts_exhausted" | "execution_timed_out" | "deadline_exceeded" | null;
}

/** How the trickle's doomed jobs fail, in turn. */
const DOOMS = ["attempts_exhausted", "execution_timed_out", "deadline_exceeded"] as const;

/**
 * The demo worker's own traffic: each `next()` (every 1.5 s in `npm run worker`) gives two jobs,
 * a `webhook.deliver` on `webhooks` and an `email.send` on `email`, with 4 attempts each and a
 * fixed retry delay. Every `doomedEvery`-th job (counting all of them) fails for good, up to
 * `maxDoomed` in all; `doomed` says how many so far.
 *
 * - `now`: the clock the deadline of a deadline-passed job is set from.
 * - `retryDelayMs`: delay between attempts (default 3,000).
 */
export class Trickle {
  private n = 0;
  private jobs = 0;
  doomed = 0;
  private readonly doomedEvery: number;
  private readonly maxDoomed: number;
  private readonly retryDelayMs: number;
  private readonly now: () => Date;

  constructor(options: { doomedEvery?: number; maxDoomed?: number; retryDelayMs?: number; now?: () => Date } = {}) {
    this.doomedEvery = options.doomedEvery ?? 40;
    this.maxDoomed = options.maxDoomed ?? 20;
    this.retryDelayMs = options.retryDelayMs ?? 3000;
    this.now = options.now ?? (() => new Date());
    if (!Number.isInteger(this.doomedEvery) || this.doomedEvery < 1) throw new RangeError("doomedEvery must be >= 1");
    if (!Number.isInteger(this.maxDoomed) || this.maxDoomed < 0) throw new RangeError("maxDoomed must be >= 0");
  }

  next(): TrickleJob[] {
    this.n++;
    const n = this.n;
    const retryPolicy = { type: "fixed", delayMs: this.retryDelayMs } as const;
    const jobs: TrickleJob[] = [
      {
        type: "webhook.deliver",
        payload: { url: "https://partner.example/hooks", event: "order.shipped", n },
        options: { queue: "webhooks", maxAttempts: 4, retryPolicy },
        doom: null,
      },
      {
        type: "email.send",
        payload: { to: `user${n}@example.com`, template: "receipt" },
        options: { queue: "email", maxAttempts: 4, executionTimeoutMs: 5000, retryPolicy },
        doom: null,
      },
    ];
    return jobs.map((job) => {
      this.jobs++;
      if (this.jobs % this.doomedEvery !== 0 || this.doomed >= this.maxDoomed) return job;
      const doom = DOOMS[this.doomed % DOOMS.length] as (typeof DOOMS)[number];
      this.doomed++;
      return this.doom(doom, n);
    });
  }

  private doom(doom: (typeof DOOMS)[number], n: number): TrickleJob {
    if (doom === "attempts_exhausted") {
      // An endpoint that was removed: every attempt answers 410 Gone.
      return {
        type: "webhook.deliver",
        payload: { url: "https://retired.example/hooks", event: "order.shipped", n, doom: "gone" },
        options: { queue: "webhooks", maxAttempts: 2, retryPolicy: { type: "fixed", delayMs: this.retryDelayMs } },
        doom,
      };
    }
    if (doom === "execution_timed_out") {
      return {
        type: "email.send",
        payload: { to: `user${n}@example.com`, template: "receipt", doom: "hang" },
        options: { queue: "email", maxAttempts: 1, executionTimeoutMs: 2000 },
        doom,
      };
    }
    // Due in 2 s, with 1.5 s after that to finish: the hung relay runs past the deadline.
    const runAt = new Date(this.now().getTime() + 2000);
    return {
      type: "email.send",
      payload: { to: `late${n}@example.com`, template: "flash-sale", doom: "hang" },
      options: { queue: "email", runAt, deadline: new Date(runAt.getTime() + 1500) },
      doom,
    };
  }
}

/**
 * `npm run demo`: realistic traffic through lib/enqueue, so every console page shows something true.
 * Uses DATABASE_URL, or the embedded PostgreSQL that `npm start` uses (started if it is not running).
 * Safe to run repeatedly: every run uses fresh keys.
 *
 * Prints the database it writes to (the full URL; a password other than the embedded server's is
 * shown as ***), what happened, and a few keys (scope and key) and job ids to look up in the console.
 *
 * 1. A checkout form double-submitted (two concurrent POSTs with one key): accepted + replayed.
 * 2. A payment provider redelivering webhooks (1-4 deliveries per event id): replayed.
 * 3. A mobile client retrying after a lost response (same Idempotency-Key): replayed.
 * 4. An integration reusing one key for different work (amount, queue, tags differ): conflicts.
 * 5. Short-TTL keys expiring: some re-enqueued after expiry (new jobs), some left awaiting cleanup.
 * 6. Scheduled reports, unkeyed thumbnail jobs with tags, and one order purged by an operator.
 * 7. Debounce: a search index refreshed on every edit of a document; bursts of edits fold into one
 *    pending job (replaced), capped by a max wait; a late edit after a short window finds the job
 *    due but not started (non_replaceable: window_elapsed_pending); a key held by idempotency refuses
 *    a debounce (non_replaceable: incompatible_key_mode).
 * 8. Throttle: a "your order shipped" notice at most once a minute per order; repeats are coalesced.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { EnqueueIdempotencyConflictError, migrate, Queue } from "@workhorse/core";
import { appDatabaseUrl, createPool, shownUrl, stopEmbeddedPostgres } from "../lib/db";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)] as T;
const money = () => Math.round(500 + Math.random() * 50_000) / 100;
const tally: Record<string, number> = {};
const count = (what: string) => {
  tally[what] = (tally[what] ?? 0) + 1;
};
/** What to look up in the console afterwards: a key (scope and key) and its job, or a job alone. */
const lookups: { what: string; scope?: string; key?: string; jobId: string }[] = [];

async function main() {
  const { url, startedHere } = await appDatabaseUrl();
  process.stdout.write(
    `Writing demo traffic to ${shownUrl(url)}${startedHere ? " (embedded PostgreSQL, started by this run and stopped at its end)" : ""}\n`,
  );
  const pool = await createPool({ max: 10 });
  await migrate(pool);
  const queue = new Queue({ pool, maintenance: false, source: "demo" });
  const run = randomBytes(3).toString("hex");
  const customers = ["c_1042", "c_2210", "c_3307", "c_4471", "c_5120", "c_6689"];

  // 1. Checkout form double-submitted.
  for (let i = 0; i < 24; i++) {
    const cart = `cart_${run}_${i}`;
    const payload = {
      cartId: cart,
      customerId: pick(customers),
      total: money(),
      currency: "EUR",
      items: [{ sku: pick(["SKU-RED-M", "SKU-BLU-L", "SKU-GRN-S"]), qty: 1 + (i % 3) }],
    };
    const options = {
      queue: "orders",
      tags: ["checkout", "web"],
      idempotency: { key: `checkout:${cart}`, scope: "order-form", ttlMs: 24 * 3_600_000 },
      source: "checkout-web",
    };
    const submits = i % 3 === 0 ? 1 : 2;
    const results = await Promise.all(
      Array.from({ length: submits }, () => queue.enqueueWithResult("order.place", payload, options)),
    );
    for (const r of results) count(`order form: ${r.outcome}`);
    if (i === 1)
      lookups.push({
        what: "order form, submitted twice (replayed)",
        ...options.idempotency,
        jobId: results[0]?.jobId ?? "",
      });
  }

  // 2. Webhook redelivery.
  for (let i = 0; i < 16; i++) {
    const eventId = `evt_${randomBytes(12).toString("hex")}`;
    const payload = { eventId, type: "payment_intent.succeeded", amount: money(), customerId: pick(customers) };
    const deliveries = 1 + (i % 4);
    for (let d = 0; d < deliveries; d++) {
      const idempotency = { key: eventId, scope: "stripe-webhooks", ttlMs: 3 * 86_400_000 };
      const r = await queue.enqueueWithResult("webhook.payment_succeeded", payload, {
        queue: "webhooks",
        tags: ["stripe"],
        idempotency,
        source: "stripe-webhook-receiver",
      });
      count(`webhook delivery: ${r.outcome}`);
      if (i === 3 && d === 0) lookups.push({ what: "webhook delivered 4 times", ...idempotency, jobId: r.jobId });
      if (d < deliveries - 1) await sleep(20);
    }
  }

  // 3. Client retry after a lost response.
  for (let i = 0; i < 10; i++) {
    const idempotencyKey = randomUUID();
    const payload = { fromAccount: `acc_${1000 + i}`, toAccount: `acc_${2000 + i}`, amount: money(), currency: "EUR" };
    const opts = {
      queue: "payments",
      idempotency: { key: idempotencyKey, scope: "api:transfers", ttlMs: 3_600_000 },
      source: "mobile-app",
    };
    const first = await queue.enqueueWithResult("transfer.execute", payload, opts);
    count(`transfer: ${first.outcome}`);
    await sleep(50); // the response was lost on a flaky network; the app retries with the same key
    const retry = await queue.enqueueWithResult("transfer.execute", payload, opts);
    count(`transfer retry: ${retry.outcome}`);
  }

  // 4. One key reused for different work.
  for (let i = 0; i < 4; i++) {
    const invoice = `INV-${run}-${String(40 + i).padStart(4, "0")}`;
    const key = { key: `capture:${invoice}`, scope: "invoice-capture" };
    const base = { invoiceId: invoice, amount: money(), currency: "EUR" };
    const capture = await queue.enqueueWithResult("invoice.capture", base, {
      queue: "billing",
      tags: ["invoice"],
      idempotency: key,
    });
    count("invoice capture: accepted");
    if (i === 0) lookups.push({ what: "invoice key reused for other work (conflict)", ...key, jobId: capture.jobId });
    const variants = [
      { payload: { ...base, amount: base.amount + 10 }, options: { queue: "billing", tags: ["invoice"] } },
      { payload: base, options: { queue: "billing-priority", tags: ["invoice"] } },
      {
        payload: { ...base, lines: [{ sku: "FEE", amount: 1.5 }] },
        options: { queue: "billing", tags: ["invoice", "retry"] },
      },
    ];
    const v = variants[i % variants.length] as (typeof variants)[number];
    try {
      await queue.enqueueWithResult("invoice.capture", v.payload, {
        ...v.options,
        idempotency: key,
        source: "billing-integration",
      });
      count("invoice capture (different work): unexpectedly accepted");
    } catch (err) {
      if (!(err instanceof EnqueueIdempotencyConflictError)) throw err;
      count(`invoice capture (different work): conflict on ${err.conflictingFields.join("+")}`);
    }
  }

  // 5. Short-TTL keys expiring.
  const digests: { key: string; payload: object }[] = [];
  for (let i = 0; i < 10; i++) {
    const key = `digest:${pick(customers)}:${run}:${i}`;
    const payload = { userId: key.split(":")[1], period: "daily" };
    digests.push({ key, payload });
    await queue.enqueueWithResult("email.digest", payload, {
      queue: "email",
      idempotency: { key, scope: "email-digest", ttlMs: 1500 },
      source: "digest-scheduler",
    });
    count("email digest: accepted");
  }
  await sleep(2000);
  for (const d of digests.slice(0, 4)) {
    const r = await queue.enqueueWithResult("email.digest", d.payload, {
      queue: "email",
      idempotency: { key: d.key, scope: "email-digest", ttlMs: 1500 },
      source: "digest-scheduler",
    });
    count(`email digest after expiry: ${r.outcome}`);
  }

  // 6. Scheduled reports, unkeyed jobs, and a purge.
  for (let i = 0; i < 6; i++) {
    await queue.enqueue(
      "report.generate",
      { report: pick(["sales", "refunds", "churn"]), day: i },
      {
        queue: "reports",
        runAt: new Date(Date.now() + (i + 1) * 3_600_000),
        tags: ["nightly"],
      },
    );
    count("report: scheduled");
  }
  for (let i = 0; i < 30; i++) {
    await queue.enqueue(
      "image.thumbnail",
      { imageId: `img_${run}_${i}`, sizes: [64, 256] },
      {
        queue: "media",
        tags: i % 2 ? ["upload", "avatar"] : ["upload"],
        maxAttempts: 5,
      },
    );
    count("thumbnail: accepted");
  }
  const cancelled = await queue.enqueueWithResult(
    "order.place",
    { cartId: `cart_${run}_cancelled`, total: 19.99, currency: "EUR" },
    {
      queue: "orders",
      idempotency: { key: `checkout:cart_${run}_cancelled`, scope: "order-form" },
      source: "checkout-web",
    },
  );
  count(`order form (cancelled later): ${cancelled.outcome}`);
  const purged = await queue.purge(
    { jobId: cancelled.jobId },
    { actor: "demo (npm run demo)", reason: "customer cancelled before fulfilment" },
  );
  count(`purge: ${purged.purged} job, ${purged.releasedBindings} binding released`);
  lookups.push({
    what: "order purged by an operator (its key released)",
    scope: "order-form",
    key: `checkout:cart_${run}_cancelled`,
    jobId: cancelled.jobId,
  });

  // 7. Debounce: the search index of a document refreshed on every edit.
  for (let d = 0; d < 8; d++) {
    const doc = `doc_${run}_${d}`;
    const edits = 2 + (d % 5);
    for (let e = 0; e < edits; e++) {
      const r = await queue.enqueueWithResult(
        "search.reindex",
        { documentId: doc, revision: e + 1, editor: pick(customers) },
        {
          queue: "search",
          tags: ["cms"],
          debounce: { key: `reindex:${doc}`, scope: "search-index", windowMs: 120_000, maxWaitMs: 600_000 },
          source: "cms-editor",
        },
      );
      count(`search reindex: ${r.outcome}`);
      if (d === 3 && e === edits - 1)
        lookups.push({
          what: `document edited ${edits} times (debounced)`,
          scope: "search-index",
          key: `reindex:${doc}`,
          jobId: r.jobId,
        });
    }
  }
  const late = `doc_${run}_late`;
  const lateOptions = {
    queue: "search",
    debounce: { key: `reindex:${late}`, scope: "search-index", windowMs: 1000 },
    source: "cms-editor",
  };
  const lateFirst = await queue.enqueueWithResult("search.reindex", { documentId: late, revision: 1 }, lateOptions);
  count(`search reindex: ${lateFirst.outcome}`);
  await sleep(1500);
  const lateEdit = await queue.enqueueWithResult("search.reindex", { documentId: late, revision: 2 }, lateOptions);
  count(
    `search reindex after the window: ${lateEdit.outcome}${lateEdit.outcome === "non_replaceable" ? ` (${lateEdit.reason})` : ""}`,
  );
  const heldKey = `checkout:cart_${run}_0`;
  const held = await queue.enqueueWithResult(
    "order.place",
    { cartId: `cart_${run}_0` },
    { queue: "orders", debounce: { key: heldKey, scope: "order-form", windowMs: 60_000 }, source: "misconfigured-job" },
  );
  count(
    `debounce on an idempotency key: ${held.outcome}${held.outcome === "non_replaceable" ? ` (${held.reason})` : ""}`,
  );

  // 8. Throttle: "your order shipped" at most once a minute per order, however often the carrier pings.
  for (let o = 0; o < 10; o++) {
    const orderId = `ord_${run}_${o}`;
    const pings = 1 + (o % 4);
    for (let p = 0; p < pings; p++) {
      const r = await queue.enqueueWithResult(
        "notify.order_shipped",
        { orderId, channel: "email" },
        {
          queue: "notifications",
          throttle: { key: `shipped:${orderId}`, scope: "shipping-notice", windowMs: 60_000 },
          source: "carrier-webhook",
        },
      );
      count(`shipped notice: ${r.outcome}`);
      if (o === 3 && p === 0)
        lookups.push({
          what: "carrier pinged 4 times (throttled)",
          scope: "shipping-notice",
          key: `shipped:${orderId}`,
          jobId: r.jobId,
        });
    }
  }

  await queue.close();
  await pool.end();
  for (const [k, v] of Object.entries(tally).sort()) process.stdout.write(`  ${String(v).padStart(3)}  ${k}\n`);
  process.stdout.write("Look these up in the console (Find by key: scope and key; Jobs: the job id):\n");
  for (const l of lookups) {
    const key = l.key === undefined ? "" : `scope ${JSON.stringify(l.scope)}, key ${JSON.stringify(l.key)}, `;
    process.stdout.write(`  ${l.what}: ${key}job ${l.jobId}\n`);
  }
  process.stdout.write(
    "Demo traffic written. Console pages show it at their next refresh (every 5 s; charts and counts within 15 s).\n",
  );
}

main()
  .catch((err) => {
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => stopEmbeddedPostgres().catch(() => {}));

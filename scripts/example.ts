// `npm run example`: the invoice-capture example end to end, against DATABASE_URL or the embedded
// PostgreSQL (started here if nothing runs, and stopped again at the end). With `-- --otel`, the
// OpenTelemetry SDK records what happened, a worker runs the job, and the metrics and spans are
// printed at the end (scripts/example-otel.ts, docs/observability.md).

import { EnqueueIdempotencyConflictError, migrate, Queue, type TelemetryOptions, Worker } from "@workhorse/core";
import type pg from "pg";
import { createPool, stopEmbeddedPostgres } from "../lib/db";
import { exampleTelemetry } from "./example-otel";

async function main() {
  const pool = await createPool();
  await migrate(pool);
  const otel = process.argv.includes("--otel") ? exampleTelemetry(pool) : null;
  const queue = new Queue({ pool, source: "example", ...(otel ? { telemetry: otel.options } : {}) });
  const invoiceId = `INV-${Date.now()}`;
  const options = {
    queue: "billing",
    idempotency: { key: `capture:${invoiceId}`, scope: "invoice-capture", ttlMs: 86_400_000 },
  };
  try {
    const first = await queue.enqueueWithResult("invoice.capture", { invoiceId, amountCents: 4200 }, options);
    console.log(`${`1. enqueue the capture of ${invoiceId}:`.padEnd(48)}${first.outcome} job ${first.jobId}`);
    const again = await queue.enqueueWithResult("invoice.capture", { amountCents: 4200, invoiceId }, options);
    console.log(`${"2. the same request again (client retry):".padEnd(48)}${again.outcome} job ${again.jobId}`);
    try {
      await queue.enqueue("invoice.capture", { invoiceId, amountCents: 9900 }, options);
      console.log("3. unexpected: a different amount was accepted");
      process.exitCode = 1;
    } catch (err) {
      if (!(err instanceof EnqueueIdempotencyConflictError)) throw err;
      console.log(
        `${"3. same key, different amount:".padEnd(48)}conflict with job ${err.existingJobId}: ` +
          `fields [${err.conflictingFields.join(", ")}], payload paths [${(err.payloadPaths ?? []).join(", ")}], ` +
          `key ${err.keyPreview} (digest ${err.keyDigest})`,
      );
    }
    const binding = await queue.findBinding(options.idempotency);
    console.log(
      `${"4. the binding:".padEnd(48)}scope ${binding?.scope}, key ${binding?.keyPreview} (${binding?.keyLength} chars, digest ${binding?.keyDigest}), ` +
        `expires ${binding?.expiresAt?.toISOString()}`,
    );
    if (otel) await runTheJob(pool, queue, first.jobId, otel.options);
    await otel?.print();
  } finally {
    await queue.close();
    await pool.end();
    await stopEmbeddedPostgres();
  }
}

/** A worker runs the capture (recorded by the same SDK), then stops. */
async function runTheJob(pool: pg.Pool, queue: Queue, jobId: string, telemetry: TelemetryOptions) {
  const worker = new Worker({
    pool,
    queues: ["billing"],
    pollIntervalMs: 100,
    telemetry,
    handlers: { "invoice.capture": async () => ({ captured: true }) },
  });
  await worker.start();
  for (let i = 0; i < 100; i++) {
    if ((await queue.getJob(jobId))?.state === "succeeded") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await worker.stop();
  console.log(`${"5. a worker ran the job:".padEnd(48)}${JSON.stringify(worker.stats())}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

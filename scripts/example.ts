// `npm run example`: the invoice-capture example end to end, against DATABASE_URL or the embedded
// PostgreSQL (started here if nothing runs, and stopped again at the end).
import { createPool, stopEmbeddedPostgres } from "../lib/db";
import { EnqueueIdempotencyConflictError, migrate, Queue } from "../lib/enqueue";

async function main() {
  const pool = await createPool();
  await migrate(pool);
  const queue = new Queue({ pool, source: "example" });
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
        `expires ${binding?.expiresAt.toISOString()}`,
    );
  } finally {
    await queue.close();
    await pool.end();
    await stopEmbeddedPostgres();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

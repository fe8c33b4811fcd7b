import { beforeAll, expect, test } from "vitest";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

test("smoke", async () => {
  const q = t.queue();
  const opts = { queue: "billing", idempotency: { key: "capture:INV-42", scope: "invoice-capture" } };
  const a = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-42" }, opts);
  const b = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-42" }, opts);
  console.log(a, b);
  expect(b.jobId).toBe(a.jobId);
  const err = await q.enqueue("invoice.capture", { invoiceId: "INV-43" }, opts).catch((e) => e);
  console.log(err);
  const many = await q.enqueueManyWithResults([
    { type: "x", payload: 1, options: { idempotency: { key: "k1" } } },
    { type: "x", payload: 1, options: { idempotency: { key: "k1" } } },
    { type: "x", payload: 2 },
  ]);
  console.log(many);
});

import type { Page } from "@playwright/test";
import type { Queue } from "../../lib/enqueue";
import { expect } from "../fixtures";

/**
 * Every page of the console, after seeding what makes each one show data (a job, a queue, a digest,
 * a long audit entry, a conflict naming many fields): the list the layout, axe, contrast and
 * raw-key specs visit, so a new page is checked by all of them once it is listed here.
 */
export async function everyPage(page: Page, queue: Queue): Promise<string[]> {
  // A real job, queue and digest to visit (seeded here too, so the spec also runs on its own).
  await queue.enqueue(
    "layout.check",
    { orderId: "ORD-390" },
    { queue: "e2e-layout", tags: ["web"], idempotency: { key: `layout-${Date.now()}-order`, scope: "e2e-layout" } },
  );
  // Wide content for the 1280 px check: a long audit entry and a conflict naming many fields and paths.
  await queue.recordOperatorAction({
    actor: "alice.on-call@payments.example (rotation B)",
    action: "purge_queue",
    target: "queue:e2e-layout-notifications-customer-facing-retries",
    reason: "duplicate deliveries after the provider incident; purging what is still pending before replaying",
    result: { status: "ok", purged: 1204, releasedBindings: 1198, queue: "e2e-layout-notifications-customer-facing" },
  });
  const idem = { key: `layout-conflict-${Date.now()}-order`, scope: "e2e-layout-checkout-web-storefront-eu-west" };
  const payload = {
    orderId: "ORD-390",
    lines: [{ sku: "SKU-LONG-NAME-RED-M", qty: 2 }],
    shippingAddress: { line1: "a" },
  };
  await queue.enqueue("checkout.order.place-with-long-type-name", payload, {
    queue: "e2e-layout-checkout",
    idempotency: idem,
  });
  await queue
    .enqueue(
      "checkout.order.place-with-long-type-name",
      { ...payload, lines: [{ sku: "SKU-LONG-NAME-BLUE-XL", qty: 3 }], shippingAddress: { line1: "b" } },
      { queue: "e2e-layout-checkout", idempotency: idem, tags: ["vip", "retry"], maxAttempts: 3 },
    )
    .catch(() => {});
  await queue.flushObservations();
  const jobs = (await (await page.request.get("/api/jobs")).json()) as { rows: { id: string; queue: string }[] };
  const job = jobs.rows[0];
  const bindings = (await (await page.request.get("/api/bindings")).json()) as { rows: { keyDigest: string }[] };
  expect(job, "seeded jobs").toBeTruthy();
  return [
    "/",
    "/jobs",
    "/jobs?state=scheduled",
    `/jobs/${job?.id}`,
    "/find",
    `/find?digest=${bindings.rows[0]?.keyDigest ?? "000000000000"}`,
    "/bindings",
    "/bindings?status=expired",
    "/conflicts",
    "/conflicts?outcome=replaced",
    "/search?path=orderId&value=ORD-390",
    "/enqueue",
    "/queues",
    `/queues/${encodeURIComponent(job?.queue ?? "default")}`,
    "/workers",
    "/run-times",
    "/dead-letters",
    "/audit",
    "/maintenance",
  ];
}

/** A test's time for visiting `urls` one by one: 15 s a page, however many pages there are. */
export function timeFor(urls: readonly string[]): number {
  return Math.max(60_000, urls.length * 15_000);
}

import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Page } from "@playwright/test";
import pg from "pg";
import { Worker } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { EnqueuePage } from "./pages/enqueue-page";
import { FindPage } from "./pages/find-page";

/** `node scripts/e2e.mjs --screenshots`: every page at 1280 and 390 px, light and dark, after demo traffic and a worker. */
const dir = path.resolve("docs", "screenshots");
mkdirSync(dir, { recursive: true });

/** The whole page, cut at 2,400 px (long tables repeat themselves; the files stay small). */
async function shot(page: Page, name: string) {
  await page.waitForLoadState("networkidle");
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  const width = page.viewportSize()?.width ?? 1280;
  await page.screenshot({
    path: path.join(dir, `${name}.png`),
    fullPage: true,
    clip: { x: 0, y: 0, width, height: Math.min(height, 2400) },
  });
}

test("screenshots of every page", async ({ page, queue }) => {
  test.setTimeout(600_000);
  const key = `screenshot-order-${Date.now()}-key`;
  const { jobId } = await queue.enqueueWithResult(
    "order.place",
    { orderId: "ORD-7731", customerId: "c_2210", total: 149.9, currency: "EUR", items: [{ sku: "SKU-RED-M", qty: 2 }] },
    { queue: "orders", tags: ["checkout", "web"], idempotency: { key, scope: "order-form", ttlMs: 3_600_000 } },
  );

  // Dead letters in two groups, for the dead-letters page, its delete dialog and the run-times trend.
  const failing: string[] = [];
  for (let i = 0; i < 3; i++) {
    failing.push(await queue.enqueue("shipment.book", { orderId: `ORD-77${i}` }, { queue: "orders", maxAttempts: 1 }));
  }
  failing.push(await queue.enqueue("invoice.render", { invoiceId: "INV-9" }, { queue: "billing", maxAttempts: 1 }));
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 4 });
  const worker = new Worker({
    pool,
    queues: ["orders", "billing"],
    handlers: {
      "shipment.book": () => {
        throw new RangeError("carrier API refused the booking: no slot for this postcode");
      },
      "invoice.render": () => {
        throw new TypeError("template field total is undefined");
      },
    },
    pollIntervalMs: 100,
    onError: () => {},
  });
  await worker.start();
  try {
    await expect
      .poll(async () => (await Promise.all(failing.map((id) => queue.getJob(id)))).map((j) => j?.state))
      .toEqual(["failed", "failed", "failed", "failed"]);
  } finally {
    await worker.stop({ graceMs: 0 });
    await pool.end();
  }

  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto("/sign-in");
  await shot(page, "sign-in-1280");
  await page.getByLabel("Your name").fill("alice (on-call)");
  await page.getByLabel("Password").fill(process.env.E2E_PASSWORD ?? "");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();

  const pages: [string, string][] = [
    ["/", "overview"],
    ["/jobs", "jobs"],
    [`/jobs/${jobId}`, "job-detail"],
    ["/bindings", "bindings"],
    ["/bindings?status=expired", "bindings-expired"],
    ["/conflicts", "conflicts"],
    ["/queues", "queues"],
    ["/maintenance", "maintenance"],
  ];
  for (const [url, name] of pages) {
    await page.goto(url);
    await shot(page, `${name}-1280`);
  }

  const find = new FindPage(page);
  await find.goto();
  await find.find("order-form", key);
  await shot(page, "find-by-key-1280");
  await find.find("order-form", "a-key-nobody-used-0000");
  await shot(page, "find-by-key-none-1280");

  const form = new EnqueuePage(page);
  await form.goto();
  await form.fill({
    type: "order.place",
    queue: "orders",
    payload: JSON.stringify({ orderId: "ORD-7731", customerId: "c_2210", total: 159.9, currency: "EUR" }),
    key,
    scope: "order-form",
    ttlMs: "3600000",
  });
  await form.submit();
  await shot(page, "enqueue-conflict-1280");
  await page.getByLabel("Payload (JSON)", { exact: true }).fill('{"hello": "world"}');
  await page.getByLabel("Idempotency key", { exact: true }).fill(`fresh-${key}`);
  await form.submit();
  await form.submit();
  await shot(page, "enqueue-replayed-1280");
  await page.getByLabel("Payload (JSON)", { exact: true }).fill("{oops");
  await page.getByLabel("TTL (ms)", { exact: true }).fill("0");
  await page.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(page.getByText("Payload is not valid JSON")).toBeVisible();
  await shot(page, "enqueue-errors-1280");

  await page.goto(`/jobs/${jobId}`);
  await page.getByRole("button", { name: "Purge job…" }).click();
  await page.getByRole("dialog").getByLabel("Reason").fill("duplicate order created by a support test");
  await page.screenshot({ path: path.join(dir, "purge-dialog-1280.png") });
  await page.getByRole("dialog").getByRole("button", { name: "Confirm purge" }).click();
  await expect(page.getByRole("dialog").getByRole("status")).toBeVisible();
  await expect(page.getByTestId("binding-released")).toContainText("Released by this job's purge");
  await page.screenshot({ path: path.join(dir, "purge-done-1280.png") });
  await page.getByRole("button", { name: "Close" }).click();

  await page.goto("/audit");
  await shot(page, "audit-1280");

  // Deleting a dead-letter group: the confirmation dialog (closed again: nothing is deleted).
  await page.goto("/dead-letters");
  const deleteGroup = page.getByRole("button", { name: "Delete group…" }).first();
  if (await deleteGroup.count()) {
    await deleteGroup.click();
    await expect(page.getByRole("dialog")).toBeVisible();
    await page.screenshot({ path: path.join(dir, "dead-letters-delete-dialog-1280.png") });
    await page.getByRole("dialog").getByRole("button", { name: "Close", exact: true }).click();
  }

  // Every page at 1280 and 390 px, light and dark.
  const digest = (await (await page.request.get("/api/bindings")).json()) as { rows: { keyDigest: string }[] };
  const everyPage: [string, string][] = [
    ["/", "overview"],
    ["/jobs", "jobs"],
    [`/jobs/${jobId}`, "job-detail"],
    [`/find?digest=${digest.rows[0]?.keyDigest ?? ""}`, "find-by-digest"],
    ["/bindings", "bindings"],
    ["/conflicts", "conflicts"],
    ["/enqueue", "enqueue"],
    ["/queues", "queues"],
    ["/queues/orders", "queue-orders"],
    ["/workers", "workers"],
    ["/search?path=orderId&value=ORD-7731", "search"],
    ["/run-times", "run-times"],
    ["/conflicts?outcome=replaced", "replaced"],
    ["/dead-letters", "dead-letters"],
    ["/audit", "audit"],
    ["/maintenance", "maintenance"],
  ];
  // Two idle workers checked in, for the workers page (stopped after the screenshots).
  const workerPool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 4 });
  const idle = [
    new Worker({
      pool: workerPool,
      queues: ["orders", "billing"],
      concurrency: 4,
      handlers: { "report.build": () => {} },
    }),
    new Worker({ pool: workerPool, queues: ["email"], concurrency: 8, handlers: { "email.digest": () => {} } }),
  ];
  for (const w of idle) await w.start();
  try {
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
        for (const [url, name] of everyPage) {
          await page.goto(url);
          if (name === "workers") await expect(page.getByRole("table").first()).toBeVisible();
          await shot(page, `${name}-${width}${scheme === "dark" ? "-dark" : ""}`);
        }
      }
    }
  } finally {
    for (const w of idle) await w.stop({ graceMs: 0 });
    await workerPool.end();
  }
  await page.emulateMedia({ colorScheme: "dark" });
  await page.context().clearCookies();
  await page.goto("/sign-in");
  await shot(page, "sign-in-390-dark");
});

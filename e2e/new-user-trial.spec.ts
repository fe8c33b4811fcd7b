import { randomBytes } from "node:crypto";
import { expect, test } from "./fixtures";
import { seriousAxe } from "./pages/checks";

// Defects a new user found in the console; each test failed before its fix.

const tag = () => randomBytes(4).toString("hex");

test("an invalid queue name in the path answers HTTP 404 'Queue not found' with a link to the queues", async ({
  signedIn,
}) => {
  // Too long, and a control character: names parseQueueName refuses. (Percent-encoding that does not
  // decode never reaches the page: proxy.ts answers 400 before Next.js, security.spec.ts.)
  for (const path of [`/queues/${"q".repeat(500)}`, "/queues/a%01b"]) {
    const res = await signedIn.goto(path);
    expect(res?.status(), path).toBe(404);
    await expect(signedIn.getByRole("heading", { name: "Queue not found" })).toBeVisible();
    await expect(signedIn.getByText("is not a queue name")).toBeVisible();
    await expect(signedIn.getByRole("link", { name: "Back to queues" })).toHaveAttribute("href", "/queues");
  }
  expect(await seriousAxe(signedIn)).toEqual([]);
});

test("a queue no job was ever enqueued to answers HTTP 404; a paused queue without jobs is known", async ({
  signedIn,
  queue,
}) => {
  const unknown = `no-such-queue-${tag()}`;
  const res = await signedIn.goto(`/queues/${unknown}`);
  expect(res?.status()).toBe(404);
  await expect(signedIn.getByRole("heading", { name: "Queue not found" })).toBeVisible();
  await expect(signedIn.getByText(`No job was ever enqueued to queue “${unknown}”`)).toBeVisible();
  await expect(signedIn.getByRole("link", { name: "Back to queues" })).toHaveAttribute("href", "/queues");
  await expect(signedIn.getByRole("button", { name: /Pause queue|Purge queue/ })).toHaveCount(0);
  expect(await seriousAxe(signedIn)).toEqual([]);

  const paused = `e2e-paused-empty-${tag()}`;
  await queue.pauseQueue(paused, { actor: "e2e", reason: "known without jobs" });
  const ok = await signedIn.goto(`/queues/${paused}`);
  expect(ok?.status()).toBe(200);
  await expect(signedIn.getByRole("heading", { name: `Queue ${paused}`, exact: true })).toBeVisible();

  const withJob = `e2e-known-${tag()}`;
  await queue.enqueue("e2e.known", {}, { queue: withJob });
  expect((await signedIn.goto(`/queues/${withJob}`))?.status()).toBe(200);
  await expect(signedIn.getByRole("heading", { name: `Queue ${withJob}`, exact: true })).toBeVisible();
});

test("at 390 px a job card's Tags and Run at labels do not overlap when the job has no tags", async ({
  signedIn,
  queue,
}) => {
  const q = `e2e-notags-${tag()}`;
  await queue.enqueue("e2e.notags", {}, { queue: q });
  await signedIn.setViewportSize({ width: 390, height: 844 });
  await signedIn.goto(`/jobs?queue=${q}`);
  const row = signedIn.getByRole("table", { name: "Jobs, newest first" }).getByRole("row").filter({ hasText: q });
  await expect(row).toHaveCount(1);
  // The labels are the cells' ::before boxes (globals.css, .stack-table): measured from their computed layout.
  const boxes = await row.evaluate((tr) =>
    Array.from(tr.querySelectorAll(":scope > td")).map((td) => {
      const before = getComputedStyle(td, "::before");
      const cell = td.getBoundingClientRect();
      const top = cell.top + Number.parseFloat(getComputedStyle(td).paddingTop);
      return { label: before.content, top, bottom: top + Number.parseFloat(before.height) };
    }),
  );
  const tags = boxes.find((b) => b.label === '"Tags"');
  const runAt = boxes.find((b) => b.label === '"Run at"');
  expect(tags && runAt, JSON.stringify(boxes)).toBeTruthy();
  if (!tags || !runAt) return;
  expect(Number.isFinite(tags.bottom)).toBe(true);
  expect(tags.bottom, JSON.stringify(boxes)).toBeLessThanOrEqual(runAt.top);
  // Every label keeps clear of the next.
  for (let i = 1; i < boxes.length; i++) {
    expect((boxes[i - 1] as { bottom: number }).bottom).toBeLessThanOrEqual((boxes[i] as { top: number }).top);
  }
});

test("search: an invalid window is named with the windows allowed, and a path of 9 segments says at most 8", async ({
  signedIn,
}) => {
  await signedIn.goto("/search?path=orderId&value=ORD-1&window=garbage");
  const form = signedIn.getByRole("form", { name: "Search jobs by payload" });
  await expect(form).toContainText("“garbage” is not a valid window: choose 1h, 24h or 7d");
  await expect(signedIn.getByRole("status").filter({ hasText: /match/ })).toHaveCount(0);

  await signedIn.goto("/search?path=a.b.c.d.e.f.g.h.i&value=x");
  await expect(form).toContainText("The path has 9 segments; at most 8 are allowed (e.g. customer.address.city)");
  expect(await seriousAxe(signedIn)).toEqual([]);
});

test("at 390 px a long unbroken value the console echoes in a message wraps: the page is no wider than the screen", async ({
  signedIn,
}) => {
  await signedIn.setViewportSize({ width: 390, height: 844 });
  const widths: Record<string, number> = {};
  for (const path of [`/queues/${"q".repeat(128)}`, `/search?window=${"w".repeat(300)}`]) {
    await signedIn.goto(path);
    await expect(signedIn.getByRole("heading", { level: 1 })).toBeVisible();
    widths[path.slice(0, 10)] = await signedIn.evaluate(() => document.documentElement.scrollWidth);
  }
  // Both measured before asserting, so a failure shows both widths.
  expect(
    Object.values(widths).every((w) => w <= 390),
    JSON.stringify(widths),
  ).toBe(true);
});

test("a queue page's path names the queue exactly as enqueued: spaces are kept, a control character is no name", async ({
  signedIn,
  queue,
}) => {
  const t = tag();
  const trailing = `e2e-trail-${t} `;
  const percent = `e2e-50%off-${t}`;
  await queue.enqueue("e2e.trail", {}, { queue: trailing });
  await queue.enqueue("e2e.percent", {}, { queue: percent });
  await signedIn.goto("/queues");
  const table = signedIn.getByRole("table", { name: "Queues" });
  const link = table.getByRole("link", { name: `e2e-trail-${t}`, exact: true });
  await expect(link).toHaveAttribute("href", `/queues/e2e-trail-${t}%20`);
  await link.click();
  await expect(signedIn.getByRole("heading", { name: `Queue e2e-trail-${t}`, exact: true })).toBeVisible();
  expect((await signedIn.goto(`/queues/e2e-trail-${t}%20`))?.status()).toBe(200);
  await expect(signedIn.getByRole("heading", { name: `Queue e2e-trail-${t}`, exact: true })).toBeVisible();
  expect((await signedIn.goto(`/queues/${encodeURIComponent(percent)}`))?.status()).toBe(200);
  await expect(signedIn.getByRole("heading", { name: `Queue ${percent}`, exact: true })).toBeVisible();

  const orders = `e2e-orders-${t}`;
  await queue.enqueue("e2e.orders", {}, { queue: orders });
  expect((await signedIn.goto(`/queues/${orders}`))?.status()).toBe(200);
  for (const path of [`/queues/${orders}%20`, `/queues/%20${orders}`, `/queues/${orders}%0A`]) {
    const res = await signedIn.goto(path);
    expect(res?.status(), path).toBe(404);
    await expect(signedIn.getByRole("heading", { name: "Queue not found" })).toBeVisible();
  }
});

test("conflicts: an unreadable page cursor is named like every other unreadable filter", async ({ signedIn }) => {
  await signedIn.goto("/conflicts?outcome=conflict&after=abc");
  await expect(
    signedIn.getByRole("status").filter({ hasText: "This filter is not valid and was not applied" }),
  ).toContainText("“after”");
});

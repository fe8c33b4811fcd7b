import { randomBytes } from "node:crypto";
import pg from "pg";
import { EnqueueIdempotencyConflictError, Queue } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { HealthChartPart, StateTabsPart } from "./pages/health";

const run = randomBytes(3).toString("hex");

test("the chart draws the queue's minutes: accepted, replayed, conflicts, replaced, coalesced and non-replaceable after seeding", async ({
  signedIn,
  queue,
}) => {
  const name = `e2e-chart-${run}`;
  const idem = (i: number) => ({ key: `chart-order-${run}-${i}`, scope: `e2e-chart-${run}` });
  for (let i = 0; i < 4; i++) await queue.enqueue("order.place", { i }, { queue: name, idempotency: idem(i) });
  await queue.enqueue("order.place", { i: 0 }, { queue: name, idempotency: idem(0) }); // replayed
  await queue.enqueue("order.place", { i: 1 }, { queue: name, idempotency: idem(1) }); // replayed
  await expect(queue.enqueue("order.place", { i: 99 }, { queue: name, idempotency: idem(2) })).rejects.toBeInstanceOf(
    EnqueueIdempotencyConflictError,
  );
  // Debounce and throttle: one replaced, two coalesced, one non-replaceable (the key is held by idempotency).
  const debounce = { key: `chart-search-${run}`, windowMs: 600_000 };
  await queue.enqueue("search.reindex", { v: 1 }, { queue: name, debounce });
  await queue.enqueue("search.reindex", { v: 2 }, { queue: name, debounce }); // replaced
  const throttle = { key: `chart-shipped-${run}`, windowMs: 600_000 };
  for (let i = 0; i < 3; i++) await queue.enqueue("order.shipped", {}, { queue: name, throttle }); // 2 coalesced
  await queue.enqueue("order.place", {}, { queue: name, debounce: { ...idem(3), windowMs: 1000 } }); // non_replaceable

  const chart = new HealthChartPart(signedIn);
  // Observations are written a moment after the decision: reload until they show.
  await expect(async () => {
    await signedIn.goto(`/queues/${name}`);
    await expect(chart.total("replayed")).toHaveText("2", { timeout: 1000 });
    await expect(chart.total("nonReplaceable")).toHaveText("1", { timeout: 1000 });
  }).toPass({ timeout: 15_000 });
  await expect(signedIn.getByRole("heading", { name: `Queue ${name}`, exact: true })).toBeVisible();
  await expect(chart.total("accepted")).toHaveText("6");
  await expect(chart.total("conflicts")).toHaveText("1");
  await expect(chart.total("replaced")).toHaveText("1");
  await expect(chart.total("coalesced")).toHaveText("2");
  await expect(chart.total("succeeded")).toHaveText("0");
  await expect(chart.total("failed")).toHaveText("0");
  const paths = await chart.linePaths();
  expect(paths).toHaveLength(8);
  for (const d of paths) expect(d).toMatch(/^M[\d.]+,[\d.]+(L[\d.]+,[\d.]+){59}$/); // 60 minutes, one point each

  // 24 hours: the same totals, 1,440 points.
  await signedIn.getByRole("button", { name: "24 hours" }).click();
  await expect(signedIn.getByRole("heading", { name: /Last 24 hours, per minute/ })).toBeVisible();
  await expect(chart.total("accepted")).toHaveText("6");
  await expect.poll(async () => (await chart.linePaths())[0]?.split("L").length).toBe(1440);

  // The overview charts every queue: at least what this test seeded.
  await signedIn.goto("/");
  const overview = new HealthChartPart(signedIn);
  expect(Number((await overview.total("accepted").textContent())?.replace(/,/g, ""))).toBeGreaterThanOrEqual(6);
  expect(Number((await overview.total("replaced").textContent())?.replace(/,/g, ""))).toBeGreaterThanOrEqual(1);
  expect(await overview.linePaths()).toHaveLength(8);
});

test("state tabs count the queue's jobs by state; retrying and has-error narrow the list", async ({
  signedIn,
  queue,
}) => {
  const name = `e2e-tabs-${run}`;
  for (let i = 0; i < 3; i++) await queue.enqueue("tabs.job", { i }, { queue: name });
  await queue.enqueue("tabs.later", {}, { queue: name, runAt: new Date(Date.now() + 3_600_000) });
  const tabs = new StateTabsPart(signedIn);
  // Counts per queue are shared and refreshed every 15 s.
  await expect(async () => {
    await signedIn.goto(`/jobs?queue=${name}`);
    await expect(tabs.count("all")).toHaveText("4", { timeout: 1000 });
  }).toPass({ timeout: 25_000 });
  await expect(tabs.count("ready")).toHaveText("3");
  await expect(tabs.count("scheduled")).toHaveText("1");
  await expect(tabs.count("retrying")).toHaveText("0");
  await expect(tabs.count("failed")).toHaveText("0");

  await tabs.tab("Scheduled").click();
  await expect(signedIn).toHaveURL(new RegExp(`/jobs\\?queue=${name}&state=scheduled$`));
  const rows = signedIn.getByRole("table", { name: "Jobs, newest first" }).locator("tbody tr");
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText("tabs.later");
  await expect(tabs.tab("Scheduled")).toHaveAttribute("aria-current", "page");

  // A prefix finds the queue; "has error" finds none of these jobs.
  await signedIn.goto(`/jobs?queue=${name.slice(0, -2)}&error=1`);
  await expect(signedIn.getByText("No jobs match these filters.")).toBeVisible();
  await signedIn.goto(`/jobs?queue=${name.slice(0, -2)}`);
  await expect(rows).toHaveCount(4);
});

test("find by key digest: the binding, its job and its replays; digests in tables link there", async ({
  signedIn,
  queue,
}) => {
  const scope = `e2e-digest-${run}`;
  const key = `digest-lookup-${run}-order-5521`;
  const { jobId } = await queue.enqueueWithResult(
    "invoice.capture",
    { amount: 5 },
    { queue: "e2e-digest", idempotency: { key, scope } },
  );
  await queue.enqueue("invoice.capture", { amount: 5 }, { queue: "e2e-digest", idempotency: { key, scope } });
  const digest = (await queue.describeKey({ key, scope })).keyDigest;

  await signedIn.goto("/find");
  await signedIn.getByRole("textbox", { name: "Key digest" }).fill(digest.toUpperCase());
  await signedIn.getByRole("button", { name: "Look up digest" }).click();
  await expect(signedIn).toHaveURL(new RegExp(`/find\\?digest=${digest.toUpperCase()}$`));
  const answer = signedIn.getByTestId("digest-answer");
  await expect(answer).toContainText(`In scope “${scope}” the key is bound to job ${jobId}.`);
  await expect(answer.getByRole("link", { name: jobId }).first()).toHaveAttribute("href", `/jobs/${jobId}`);
  await expect(async () => {
    await signedIn.reload();
    await expect(
      answer.getByRole("table", { name: "Observations under this key digest" }).locator("tbody tr"),
    ).toHaveCount(1, { timeout: 1000 });
  }).toPass({ timeout: 10_000 });

  // From the bindings table, the digest is a link to the same answer.
  await signedIn.goto(`/bindings?scope=${scope}`);
  await signedIn.getByRole("link", { name: digest }).click();
  await expect(signedIn).toHaveURL(new RegExp(`/find\\?digest=${digest}$`));
  await expect(answer).toContainText(jobId);

  await signedIn.goto("/find?digest=not-a-digest");
  await expect(signedIn.getByRole("alert").filter({ hasText: "That is not a key digest" })).toBeVisible();
});

test("identical replays written in one flush show as one row with their count, on the conflicts page and in find by digest", async ({
  signedIn,
}) => {
  // A producer of its own whose observation log flushes only when it closes: the five replays are
  // one flush, whatever the machine's pace.
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 2 });
  const producer = new Queue({ pool, maintenance: false, source: "e2e", observations: { flushIntervalMs: 3_600_000 } });
  const name = `e2e-count-${run}`;
  const idempotency = { key: `count-order-${run}`, scope: `e2e-count-${run}` };
  await producer.enqueue("order.place", { n: 1 }, { queue: name, idempotency });
  for (let i = 0; i < 5; i++) await producer.enqueue("order.place", { n: 1 }, { queue: name, idempotency });
  const digest = (await producer.describeKey(idempotency)).keyDigest;
  await producer.close();
  await pool.end();

  await signedIn.goto(`/conflicts?queue=${name}`);
  const rows = signedIn.getByRole("table").locator("tbody tr");
  await expect(rows).toHaveCount(1);
  await expect(rows.first().getByTestId("observation-count")).toContainText("× 5");
  await signedIn.goto(`/find?digest=${digest}`);
  await expect(
    signedIn
      .getByRole("table", { name: "Observations under this key digest" })
      .locator("tbody tr")
      .first()
      .getByTestId("observation-count"),
  ).toContainText("× 5");
});

test("bad input in the new filters and paths is never a server error", async ({ signedIn }) => {
  for (const url of [
    "/find?digest=%00",
    "/find?digest=%00abcdefabcdef",
    "/jobs?queue=%00&type=%00&tag=%00&state=%00&error=%00",
    "/jobs?state=retrying&queue=%25_%5C",
    "/queues/%00",
    "/conflicts?scope=%00&queue=%00",
    "/bindings?scope=%00",
    "/audit?actor=%00",
  ]) {
    const res = await signedIn.goto(url);
    expect(res?.status(), url).toBeLessThan(500);
    await expect(signedIn.getByText(/Application error|Internal Server Error/)).toHaveCount(0);
  }
  for (const url of ["/api/series?window=%00&queue=%00", "/api/series?window=24h", "/api/queues?queue=%00"]) {
    const res = await signedIn.request.get(url);
    expect(res.status(), url).toBeLessThan(500);
  }
});

test("keyboard: / focuses the search, j and k move through rows, Enter opens", async ({ signedIn, queue }) => {
  const name = `e2e-keys-${run}`;
  const older = await queue.enqueue("keys.job", { n: 1 }, { queue: name });
  const newer = await queue.enqueue("keys.job", { n: 2 }, { queue: name });
  await signedIn.goto(`/jobs?queue=${name}`);
  // The shortcuts listen once the page has hydrated: a key pressed before that is the browser's.
  const search = signedIn.getByRole("textbox", { name: "Job id" });
  await expect(async () => {
    await signedIn.keyboard.press("/");
    await expect(search).toBeFocused({ timeout: 500 });
  }).toPass({ timeout: 10_000 });
  await expect(search).toHaveValue(""); // the "/" focused the field and was not typed into it
  await signedIn.keyboard.press("Escape");
  await signedIn.locator("h1").click();
  await signedIn.keyboard.press("j");
  await expect(signedIn.getByRole("link", { name: `…${newer.slice(-8)}` })).toBeFocused();
  await signedIn.keyboard.press("j");
  await expect(signedIn.getByRole("link", { name: `…${older.slice(-8)}` })).toBeFocused();
  await signedIn.keyboard.press("k");
  await expect(signedIn.getByRole("link", { name: `…${newer.slice(-8)}` })).toBeFocused();
  await signedIn.keyboard.press("Enter");
  await expect(signedIn).toHaveURL(new RegExp(`/jobs/${newer}$`));
});

test("rows arriving while you read wait behind an 'N new, show' button", async ({ signedIn, queue }) => {
  const name = `e2e-new-${run}`;
  await queue.enqueue("new.job", { n: 1 }, { queue: name });
  await signedIn.goto(`/jobs?queue=${name}`);
  const rows = signedIn.getByRole("table", { name: "Jobs, newest first" }).locator("tbody tr");
  await expect(rows).toHaveCount(1);
  await queue.enqueue("new.job", { n: 2 }, { queue: name });
  await queue.enqueue("new.job", { n: 3 }, { queue: name });
  await expect(signedIn.getByRole("button", { name: "2 new, show" })).toBeVisible({ timeout: 15_000 });
  await expect(rows).toHaveCount(1);
  await signedIn.getByRole("button", { name: "2 new, show" }).click();
  await expect(rows).toHaveCount(3);
  await expect(signedIn.getByRole("button", { name: /new, show/ })).toHaveCount(0);
});

test("the queues page counts a scheduled job whose time has come as ready, as /metrics does", async ({
  signedIn,
  queue,
}) => {
  const name = `e2e-due-${run}`;
  // No worker takes this queue: once its run time passes, the first job is due but never started.
  await queue.enqueue("e2e.later", {}, { queue: name, runAt: new Date(Date.now() + 1500) });
  await queue.enqueue("e2e.later", {}, { queue: name, runAt: new Date(Date.now() + 3_600_000) });
  await expect(async () => {
    await signedIn.goto("/queues");
    const row = signedIn.getByRole("row").filter({ has: signedIn.getByRole("link", { name, exact: true }) });
    await expect(row).toContainText("oldest due", { timeout: 1000 });
    await expect(row).toContainText("1 ready", { timeout: 1000 });
    await expect(row).toContainText("1 scheduled", { timeout: 1000 });
  }).toPass({ timeout: 20_000 });
  // "1 ready" opens the jobs that count as ready: the due one, though its state column says scheduled.
  const row = signedIn.getByRole("row").filter({ has: signedIn.getByRole("link", { name, exact: true }) });
  await row.getByRole("link", { name: "1 ready" }).click();
  await expect(signedIn).toHaveURL(/[?&]due=1(&|$)/);
  await expect(signedIn.getByLabel("Due now")).toBeChecked();
  await expect(signedIn.locator("tbody tr")).toHaveCount(1);
  await expect(signedIn.locator("tbody tr")).toContainText("scheduled");
});

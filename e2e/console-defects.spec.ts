import { randomBytes } from "node:crypto";
import { expect, test } from "./fixtures";

// Small defects an operator trips over; each test failed before its fix.

const tag = () => randomBytes(4).toString("hex");

test("a 1 MiB payload is sent once, as a preview with a download; the live refresh carries none of it", async ({
  signedIn,
  queue,
  browser,
}) => {
  const blob = "z".repeat(1_000_000);
  const id = await queue.enqueue(`e2e.big.${tag()}`, { orderId: "ORD-77", blob }, { queue: "e2e-big" });
  const page = await signedIn.goto(`/jobs/${id}`);
  const html = (await page?.text()) ?? "";
  expect(html.length).toBeLessThan(200_000);
  await expect(signedIn.getByTestId("payload-truncated")).toContainText("Showing the first 16.0 KiB of 976.6 KiB");
  await expect(signedIn.getByText(/"blob": "zzzz/)).toBeVisible();

  const live = await signedIn.request.get(`/api/jobs/${id}`);
  expect(live.status()).toBe(200);
  const body = await live.text();
  expect(body.length).toBeLessThan(10_000);
  expect(body.includes("zzzz")).toBe(false);

  const link = signedIn.getByRole("link", { name: /^Download the payload \(JSON, 976\.6 KiB\)$/ });
  const download = await signedIn.request.get((await link.getAttribute("href")) as string);
  expect(download.status()).toBe(200);
  expect(download.headers()["content-disposition"]).toBe(`attachment; filename="job-${id}-payload.json"`);
  expect(JSON.parse(await download.text())).toEqual({ orderId: "ORD-77", blob });

  // Signed out, the download is refused.
  const anonymous = await browser.newContext();
  const refused = await anonymous.request.get(`${new URL(signedIn.url()).origin}/api/jobs/${id}/payload`);
  expect(refused.status()).toBe(401);
  await anonymous.close();
});

test("find by key: whitespace flagged, the scopes holding the key offered, the input kept; a purged digest names the purge", async ({
  signedIn,
  queue,
}) => {
  const key = `ORD-near-${tag()}`;
  const scope = `billing-${tag()}`;
  const { jobId } = await queue.enqueueWithResult("e2e.order", {}, { idempotency: { key, scope } });
  await signedIn.goto("/find");
  const form = signedIn.getByRole("form", { name: "Find a job by idempotency key" });
  await form.getByLabel("Scope").fill("support");
  await form.getByLabel("Key", { exact: true }).fill(` ${key} `);
  await form.getByRole("button", { name: "Find" }).click();
  const answer = signedIn.getByTestId("find-answer");
  await expect(answer).toContainText("The key has 1 leading and 1 trailing whitespace characters");
  await expect(form.getByLabel("Key", { exact: true })).toHaveValue(` ${key} `);
  await expect(answer.getByTestId("key-elsewhere")).toContainText("Without the surrounding whitespace, the key");
  await answer.getByRole("button", { name: "Remove them from the key box" }).click();
  await answer.getByRole("button", { name: `Use scope “${scope}”` }).click();
  await expect(form.getByLabel("Scope")).toHaveValue(scope);
  await expect(form.getByLabel("Key", { exact: true })).toHaveValue(key);
  await form.getByRole("button", { name: "Find" }).click();
  await expect(answer).toContainText("The key is bound to job");
  await expect(answer.getByRole("link", { name: jobId }).first()).toBeVisible();

  const digest = (await queue.describeKey({ key, scope })).keyDigest;
  await queue.purge({ jobId }, { actor: "e2e", reason: "released for the test" });
  await signedIn.goto(`/find?digest=${digest}`);
  await expect(signedIn.getByTestId("digest-released")).toContainText(
    `in scope “${scope}” the key was released when job ${jobId} was purged`,
  );
});

test("open job accepts the short ids tables and the worker log show", async ({ signedIn, queue }) => {
  const id = await queue.enqueue(`e2e.short.${tag()}`, {}, { queue: "e2e-short" });
  for (const short of [`…${id.slice(-8)}`, id.replace(/-/g, "").slice(0, 12)]) {
    await signedIn.goto("/jobs");
    await signedIn.getByLabel("Job id").fill(short);
    await signedIn.getByRole("button", { name: "Open job" }).click();
    await expect(signedIn).toHaveURL(new RegExp(`/jobs/${id}$`));
  }
  await signedIn.goto("/jobs?id=zzz");
  await expect(signedIn.getByText(/^That is not a job id\./)).toBeVisible();
});

test("a job page that finds no job answers 404", async ({ signedIn }) => {
  for (const path of ["/jobs/01900000-0000-7000-8000-00000000dead", "/jobs/not-a-job-id"]) {
    const res = await signedIn.goto(path);
    expect(res?.status()).toBe(404);
    await expect(signedIn.getByText("No job has this id, or it is not a job id (a UUID).")).toBeVisible();
  }
});

test("the search value box holds at most 500 characters (a longer one overflowed the URL into HTTP 431)", async ({
  signedIn,
}) => {
  await signedIn.goto("/search");
  await signedIn.getByLabel("Equals", { exact: true }).fill("v".repeat(20_000));
  expect((await signedIn.getByLabel("Equals", { exact: true }).inputValue()).length).toBe(500);
});

test("conflicts: a filter that cannot be read is named, not silently dropped", async ({ signedIn }) => {
  await signedIn.goto("/conflicts?from=garbage");
  await expect(
    signedIn.getByText(
      "This filter is not valid and was not applied: “from” must be a UTC time such as 2026-12-01T02:30.",
    ),
  ).toBeVisible();
});

test("conflicts at 1280 px: no key digest wraps", async ({ signedIn, queue }) => {
  const key = { key: `wrap-${tag()}`, scope: `wrap-${tag()}` };
  await queue.enqueue("e2e.wrap", { a: 1 }, { queue: "e2e-wrap", idempotency: key });
  await queue.enqueue("e2e.wrap", { a: 2 }, { queue: "e2e-wrap", idempotency: key }).catch(() => {});
  await queue.flushObservations();
  await signedIn.setViewportSize({ width: 1280, height: 900 });
  await signedIn.goto(`/conflicts?scope=${key.scope}`);
  // Key digests (links) and request digests (code): each on one line.
  const digests = signedIn.locator("table a[href^='/find?digest='], table code");
  await expect(digests.first()).toBeVisible();
  const shapes = await digests.evaluateAll((els) =>
    els
      .filter((e) => /^[0-9a-f]{12}$/.test((e.textContent ?? "").trim()))
      .map((e) => ({
        text: e.textContent,
        lines: new Set([...e.getClientRects()].map((r) => Math.round(r.top))).size,
      })),
  );
  expect(shapes.length).toBeGreaterThanOrEqual(3);
  for (const s of shapes) expect(s).toEqual({ text: s.text, lines: 1 });
});

test("pause: the dialog keeps its own title after pausing, the hint fits a queue, the Queues table marks it", async ({
  signedIn,
  queue,
}) => {
  const q = `e2e-pz-${tag()}`;
  await queue.enqueue("e2e.pz", {}, { queue: q, runAt: new Date(Date.now() + 3_600_000) });
  await signedIn.goto("/queues");
  await signedIn.getByRole("button", { name: `Pause ${q}…` }).click();
  const dialog = signedIn.getByRole("dialog");
  await expect(dialog.getByText("Kept in the audit log and shown beside the queue while it is paused.")).toBeVisible();
  await expect(dialog.getByText("Kept in the job's timeline")).toHaveCount(0);
  await dialog.getByLabel("Reason").fill("maintenance");
  await dialog.getByRole("button", { name: "Confirm pause" }).click();
  await expect(dialog.getByRole("status")).toContainText(`Paused queue ${q}`);
  await expect(signedIn.getByRole("button", { name: `Resume ${q}…` })).toBeVisible({ timeout: 15_000 });
  await expect(dialog.getByRole("heading", { name: `Pause queue “${q}”?` })).toBeVisible();
  await expect(dialog.getByRole("button", { name: "Cancel", exact: true })).toHaveCount(0);
  await dialog.getByRole("button", { name: "Close" }).click();
  const row = signedIn.getByRole("table", { name: "Queues", exact: true }).getByRole("row").filter({ hasText: q });
  await expect(row).toContainText("paused");
  await queue.resumeQueue(q, { actor: "e2e", reason: "done" });
});

test("job page words: cancel says nothing odd after canceling; a keyless purge releases no binding", async ({
  signedIn,
  queue,
}) => {
  const id = await queue.enqueue("e2e.words", {}, { queue: "e2e-words", runAt: new Date(Date.now() + 3_600_000) });
  await signedIn.goto(`/jobs/${id}`);
  await signedIn.getByRole("button", { name: "Cancel job…" }).click();
  const dialog = signedIn.getByRole("dialog");
  await dialog.getByLabel("Reason").fill("not needed");
  await dialog.getByRole("button", { name: "Confirm cancel" }).click();
  await expect(dialog.getByRole("status")).toBeVisible();
  await expect(signedIn.getByText("canceled", { exact: true }).first()).toBeVisible();
  await expect(dialog).not.toContainText("canceled job becomes canceled");
  await dialog.getByRole("button", { name: "Close" }).click();
  const keyless = await queue.enqueue("e2e.words", {}, { queue: "e2e-words", runAt: new Date(Date.now() + 3_600_000) });
  await signedIn.goto(`/jobs/${keyless}`);
  await signedIn.getByRole("button", { name: "Purge job…" }).click();
  await expect(signedIn.getByRole("dialog")).toContainText("It holds no key binding, so none is released.");
  await expect(signedIn.getByRole("dialog")).not.toContainText("its idempotency binding is released");
});

test("a failed job's stack trace shows with real line breaks", async ({ signedIn, queue }) => {
  const id = await queue.enqueue("e2e.stack", {}, { queue: "e2e-stack", maxAttempts: 1 });
  const { Worker } = await import("../lib/enqueue");
  const pg = (await import("pg")).default;
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 2 });
  const worker = new Worker({
    pool,
    queues: ["e2e-stack"],
    handlers: {
      "e2e.stack": async () => {
        throw new Error("boom with a stack");
      },
    },
    pollIntervalMs: 100,
    onError: () => {},
  });
  await worker.start();
  try {
    await expect.poll(async () => (await queue.getJob(id))?.state, { timeout: 15_000 }).toBe("failed");
  } finally {
    await worker.stop({ graceMs: 0 });
    await pool.end();
  }
  await signedIn.goto(`/jobs/${id}`);
  const stack = signedIn.getByTestId("stack-trace").first();
  await expect(stack).toBeVisible();
  const text = (await stack.textContent()) ?? "";
  expect(text).toContain("Error: boom with a stack\n    at ");
  expect(text.includes("\\n")).toBe(false);
});

test("`/` focuses the overview's search box", async ({ signedIn }) => {
  await signedIn.goto("/");
  await signedIn.locator("body").click({ position: { x: 5, y: 5 } });
  await signedIn.keyboard.press("/");
  await expect(signedIn.getByLabel("Job id")).toBeFocused();
});

import { expect, test } from "./fixtures";
import { KEYS, PASSWORD, SCOPE } from "./keys";
import { JobPage } from "./pages/job-page";

const writableURL = process.env.E2E_BASE_URL ?? "http://127.0.0.1:3100";

test("read-only mode hides purge and refuses a purge request sent anyway", async ({ page, queue, browser }) => {
  // Seed through the core: a ready job that owns a key.
  const { jobId } = await queue.enqueueWithResult(
    "order.refund",
    { orderId: "ORD-2002" },
    { queue: "e2e-readonly", idempotency: { key: KEYS.purgeSeed, scope: SCOPE } },
  );

  // The read-only console (this project's baseURL) shows the job without a purge button.
  await page.goto("/sign-in");
  await page.getByLabel("Your name").fill("readonly-operator");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText("Read-only mode")).toBeVisible();
  // The banner names every action the mode disables, not three of them.
  await expect(page.getByRole("note").filter({ hasText: "Read-only mode" })).toContainText(
    "enqueueing test jobs, cancel, run now, redrive, purge, pausing and resuming queues, and maintenance runs are disabled.",
  );
  const job = new JobPage(page);
  await job.goto(jobId);
  await expect(job.purgeButton()).toHaveCount(0);
  await expect(page.getByText("Read-only mode: cancel, run now, redrive and purge are disabled.")).toBeVisible();
  await page.goto("/enqueue");
  await expect(page.getByText("The console is read-only: enqueueing is disabled.")).toBeVisible();

  // Capture a real purge request from the writable console (same build, so the same action id) …
  const ctx = await browser.newContext({ baseURL: writableURL });
  const writable = await ctx.newPage();
  await writable.goto("/sign-in");
  await writable.getByLabel("Your name").fill("e2e-operator");
  await writable.getByLabel("Password").fill(PASSWORD);
  await writable.getByRole("button", { name: "Sign in" }).click();
  await writable.getByRole("heading", { name: "Overview" }).waitFor();
  const writableJob = new JobPage(writable);
  await writableJob.goto(jobId);
  let captured: { headers: Record<string, string>; body: string } | null = null;
  await writable.route(`**/jobs/${jobId}`, async (route) => {
    const req = route.request();
    if (req.method() === "POST") {
      captured = { headers: req.headers(), body: req.postData() ?? "" };
      await route.abort();
    } else await route.continue();
  });
  await writableJob.purgeButton().click();
  await writable.getByRole("dialog").getByLabel("Reason").fill("should be refused");
  await writable.getByRole("dialog").getByRole("button", { name: "Confirm purge" }).click();
  await expect.poll(() => captured !== null).toBe(true);
  await ctx.close();

  // … and send it to the read-only console with the read-only session.
  const c = captured as unknown as { headers: Record<string, string>; body: string };
  const origin = new URL(page.url()).origin;
  const res = await page.request.post(`/jobs/${jobId}`, {
    headers: {
      "next-action": c.headers["next-action"] ?? "",
      "content-type": c.headers["content-type"] ?? "",
      accept: "text/x-component",
      origin,
    },
    data: c.body,
  });
  expect(res.status()).toBeLessThan(500);
  expect(await res.text()).toContain("read-only");
  const after = await queue.getJob(jobId);
  expect(after?.state).toBe("ready");
  expect((await queue.findBinding({ key: KEYS.purgeSeed, scope: SCOPE }))?.jobId).toBe(jobId);
});

test("read-only mode hides what it refuses: no enqueue tab or button, no purge wording", async ({ page }) => {
  await page.goto("/sign-in");
  await page.getByLabel("Your name").fill("readonly-operator");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText("Read-only mode")).toBeVisible();
  const nav = page.getByRole("navigation", { name: "Console" });
  await expect(nav.getByRole("link", { name: "Jobs" })).toBeVisible();
  await expect(nav.getByRole("link", { name: "Enqueue test job" })).toHaveCount(0);
  await page.goto("/jobs");
  await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
  await expect(page.getByRole("link", { name: /enqueue a test job/i })).toHaveCount(0);
  // No bulk selection or actions on the jobs list.
  await expect(page.getByRole("region", { name: "Bulk actions" })).toHaveCount(0);
  await expect(page.getByRole("checkbox", { name: /^Select job / })).toHaveCount(0);
  await page.goto("/dead-letters");
  await expect(page.getByRole("heading", { name: "Dead letters" })).toBeVisible();
  await expect(page.getByRole("button", { name: /Redrive/ })).toHaveCount(0);
  await page.goto("/queues");
  await expect(page.getByRole("button", { name: /^(Pause|Resume) / })).toHaveCount(0);
  await expect(page.getByRole("heading", { name: "Queues" })).toBeVisible();
  // The banner says purge is disabled; the page itself no longer describes purging.
  await expect(page.getByRole("main").getByText(/purg/i)).toHaveCount(0);
});

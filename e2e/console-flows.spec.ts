import { expect, test } from "./fixtures";
import { KEYS, PASSWORD, SCOPE } from "./keys";
import { ConflictsPage } from "./pages/conflicts-page";
import { EnqueuePage } from "./pages/enqueue-page";
import { FindPage } from "./pages/find-page";
import { JobPage } from "./pages/job-page";

test.describe.configure({ mode: "serial" });

const order = (amount: number) => JSON.stringify({ orderId: "ORD-1001", amount, currency: "EUR" });

let firstJobId = "";

test("sign-in is required and a wrong password is refused", async ({ page }) => {
  await page.goto("/jobs");
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fjobs$/);
  await page.getByLabel("Your name").fill("e2e-operator");
  await page.getByLabel("Password").fill("not-the-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "Wrong password" })).toBeVisible();
  const api = await page.request.get("/api/jobs");
  expect(api.status()).toBe(401);
});

test("enqueue a test job twice: accepted, then replayed with the same id", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  await form.fill({ type: "order.place", queue: "e2e-orders", payload: order(42), key: KEYS.order, scope: SCOPE });
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  firstJobId = await form.jobId();
  expect(firstJobId).toMatch(/^[0-9a-f-]{36}$/);

  await form.submit();
  expect(await form.outcome()).toBe("replayed");
  expect(await form.jobId()).toBe(firstJobId);
});

test("a key reused for different work is a conflict, named on the conflicts page", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  await form.fill({ type: "order.place", queue: "e2e-orders", payload: order(43), key: KEYS.order, scope: SCOPE });
  await form.submit();
  expect(await form.outcome()).toBe("conflict");
  await expect(form.conflictingFields()).toHaveText(["payload"]);
  await expect(form.result).toContainText("$.amount");
  expect(await form.jobId()).toBe(firstJobId);

  const conflicts = new ConflictsPage(signedIn);
  await conflicts.goto({ scope: SCOPE, outcome: "conflict" });
  const row = conflicts.rows().first();
  await expect(row).toContainText("conflict");
  await expect(row.getByRole("listitem")).toHaveText(["payload"]);
  await expect(row).toContainText("$.amount");
  await expect(row.getByRole("link", { name: `…${firstJobId.slice(-8)}` })).toHaveAttribute(
    "href",
    `/jobs/${firstJobId}`,
  );

  await conflicts.goto({ scope: SCOPE, outcome: "replayed" });
  await expect(conflicts.rows()).toHaveCount(1);
});

test("find the job by key (POST: the key is not in the URL)", async ({ signedIn }) => {
  const find = new FindPage(signedIn);
  await find.goto();
  await find.find(SCOPE, KEYS.order);
  await expect(find.answer).toContainText("The key is bound to job");
  await expect(find.answer.getByRole("link", { name: firstJobId }).first()).toBeVisible();
  await expect(find.answer).toContainText("left");
  expect(signedIn.url()).not.toContain(KEYS.order);
  expect(signedIn.url()).toMatch(/\/find$/);
});

test("purge the job: the binding is released and the same key enqueues a new job", async ({ signedIn }) => {
  const job = new JobPage(signedIn);
  await job.goto(firstJobId);
  await expect(
    signedIn.getByRole("region", { name: "Idempotency binding" }).or(signedIn.getByText("TTL remaining")),
  ).toBeVisible();
  const result = await job.purge("customer cancelled the order (e2e)");
  expect(result).toContain("Purged 1 job");
  expect(result).toContain("released 1 binding");
  await signedIn.getByRole("button", { name: "Close" }).click();
  await expect(signedIn.getByText("purged", { exact: true }).first()).toBeVisible();

  const find = new FindPage(signedIn);
  await find.goto();
  await find.find(SCOPE, KEYS.order);
  await expect(find.answer).toContainText("No live binding");
  await expect(find.answer).toContainText("released when job");

  const form = new EnqueuePage(signedIn);
  await form.goto();
  await form.fill({ type: "order.place", queue: "e2e-orders", payload: order(42), key: KEYS.order, scope: SCOPE });
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  const secondJobId = await form.jobId();
  expect(secondJobId).not.toBe(firstJobId);
});

test("bad input gets field errors, not a 500", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  await form.fill({ type: "order.place", payload: "{not json", key: "k", ttlMs: "0" });
  await signedIn.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(signedIn.getByText("Payload is not valid JSON")).toBeVisible();
  await expect(signedIn.getByText("TTL must be between 1 and")).toBeVisible();

  for (const path of [
    "/jobs/not-a-uuid",
    "/jobs?state=bogus&after=zzz",
    "/bindings?after=%00",
    "/conflicts?since=forever",
    "/nope",
  ]) {
    const res = await signedIn.goto(path);
    expect(res?.status(), path).toBeLessThan(500);
    const html = await signedIn.content();
    expect(html, path).not.toMatch(/at [\w.<>]+ \([^)]*:\d+:\d+\)|node_modules/);
  }
});

test("the audit log names the operator for enqueue-test and purge", async ({ signedIn }) => {
  await signedIn.goto("/audit?actor=e2e-operator");
  const table = signedIn.getByRole("table", { name: "Operator audit log, newest first" });
  await expect(table.getByRole("row").filter({ hasText: "purge_job" }).first()).toContainText("customer cancelled");
  await expect(table.getByRole("row").filter({ hasText: "enqueue_test" }).first()).toContainText("e2e-operator");
});

test("sign-in returns to the page asked for, keeps the name after a wrong password, never leaves the site", async ({
  page,
}) => {
  await page.goto("/jobs?state=ready&queue=e2e");
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fjobs%3Fstate%3Dready%26queue%3De2e$/);
  await page.getByLabel("Your name").fill("e2e-returning");
  await page.getByLabel("Password").fill("wrong-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "Wrong password" })).toBeVisible();
  await expect(page.getByLabel("Your name")).toHaveValue("e2e-returning");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/jobs\?state=ready&queue=e2e$/);
  await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();

  // Signed in, a foreign or odd "next" lands on the overview.
  for (const next of ["//evil.example/x", "/\\evil.example", "https://evil.example/", "/sign-in"]) {
    await page.goto(`/sign-in?next=${encodeURIComponent(next)}`);
    await expect(page).toHaveURL(/\/$/);
  }
});

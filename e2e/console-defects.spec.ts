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
  await expect(signedIn.getByText(/"orderId": "ORD-77"/)).toBeVisible();

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

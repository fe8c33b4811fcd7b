import { randomBytes } from "node:crypto";
import pg from "pg";
import { Worker } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { EnqueuePage } from "./pages/enqueue-page";

// The enqueue-test form: each key mode keeps its own fields, and the form says whether a running
// worker (from the workers' check-ins) would run the test job at once.

const run = randomBytes(3).toString("hex");

test("each key mode keeps its own fields: a debounce window never becomes the idempotency TTL", async ({
  signedIn,
}) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  const p = signedIn;
  const mode = p.getByLabel("Key mode", { exact: true });
  const ttl = p.getByLabel("TTL (ms)", { exact: true });
  const windowMs = p.getByLabel("Window (ms)", { exact: true });
  const maxWait = p.getByLabel("Max wait (ms)", { exact: true });
  const runAt = p.getByLabel("Run at", { exact: true });

  await ttl.fill("5000");
  await runAt.fill("2031-01-02T03:04:05");
  await mode.selectOption("debounce");
  await expect(windowMs).toHaveValue("");
  await windowMs.fill("60000");
  await maxWait.fill("120000");
  await mode.selectOption("idempotency");
  await expect(ttl).toHaveValue("5000");
  await expect(runAt).toHaveValue("2031-01-02T03:04:05");
  await mode.selectOption("throttle");
  await expect(windowMs).toHaveValue("");
  await expect(runAt).toHaveValue("");
  await windowMs.fill("30000");
  await mode.selectOption("debounce");
  await expect(windowMs).toHaveValue("60000");
  await expect(maxWait).toHaveValue("120000");
  await mode.selectOption("idempotency");
  await ttl.fill("");
  await expect(ttl).toHaveValue("");

  // What is posted is the shown mode's fields only: an idempotency job with the default 24 h TTL.
  await form.fill({ type: "e2e.modes", queue: `e2e-modes-${run}`, key: `modes-${run}`, scope: `e2e-modes-${run}` });
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  const id = await form.jobId();
  await p.goto(`/jobs/${id}`);
  const card = p.locator("section").filter({ has: p.getByRole("heading", { name: "Idempotency binding" }) });
  await expect(card.getByRole("term").filter({ hasText: /^TTL$/ }).locator("+ dd")).toHaveText("1d 0h");
});

test("the form says whether a running worker serves the chosen queue and type", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  const served = `e2e-served-${run}`;
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 3 });
  const worker = new Worker({
    pool,
    workerId: `e2e-form-${run}`,
    queues: [served],
    heartbeatIntervalMs: 1000,
    handlers: { "e2e.served": () => null },
    onError: () => {},
  });
  try {
    await form.goto();
    const note = signedIn.getByTestId("queue-workers");
    await signedIn.getByLabel("Queue", { exact: true }).fill(served);
    await expect(note).toContainText(`No running worker takes console.test jobs from queue "${served}"`);
    await worker.start();
    await signedIn.getByLabel("Type", { exact: true }).fill("e2e.served");
    await expect(note).toContainText(`1 running worker takes e2e.served jobs from queue "${served}"`, {
      timeout: 20_000,
    });
    await expect(note).toContainText("runs it as soon as it is due");
    // Another queue: nobody serves it.
    await signedIn.getByLabel("Queue", { exact: true }).fill(`${served}-other`);
    await expect(note).toContainText(`No running worker takes e2e.served jobs from queue "${served}-other"`);
    // The worker stops (its check-in row is deleted): the form says so at its next refresh.
    await signedIn.getByLabel("Queue", { exact: true }).fill(served);
    await worker.stop({ graceMs: 0 });
    await expect(note).toContainText(`No running worker takes e2e.served jobs from queue "${served}"`, {
      timeout: 20_000,
    });
  } finally {
    await worker.stop({ graceMs: 0 }).catch(() => {});
    await pool.end();
  }
});

test("a key held until its job finishes: the job page says what holds it, then that the finish released it", async ({
  signedIn,
}) => {
  const form = new EnqueuePage(signedIn);
  const queue = `e2e-held-${run}`;
  const input = {
    type: "report.nightly",
    queue,
    payload: '{"day": "2026-12-01"}',
    key: `nightly-${run}`,
    scope: `e2e-held-${run}`,
    holdUntil: "finished" as const,
  };
  await form.goto();
  await form.fill(input);
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  const first = await form.jobId();
  await form.submit();
  expect(await form.outcome()).toBe("replayed");
  expect(await form.jobId()).toBe(first);

  await signedIn.goto(`/jobs/${first}`);
  const card = signedIn
    .locator("section")
    .filter({ has: signedIn.getByRole("heading", { name: "Idempotency binding" }) });
  await expect(
    card
      .getByRole("term")
      .filter({ hasText: /^Held until$/ })
      .locator("+ dd"),
  ).toHaveText("this job finishes");

  // A worker runs the job: its finish releases the key in the same transaction.
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 3 });
  const worker = new Worker({
    pool,
    workerId: `e2e-held-${run}`,
    queues: [queue],
    pollIntervalMs: 100,
    handlers: { "report.nightly": () => null },
    onError: () => {},
  });
  try {
    await worker.start();
    await expect
      .poll(async () => (await pool.query("select state from workhorse.job where id = $1", [first])).rows[0]?.state, {
        timeout: 20_000,
      })
      .toBe("succeeded");
  } finally {
    await worker.stop({ graceMs: 0 });
    await pool.end();
  }
  await signedIn.goto(`/jobs/${first}`);
  await expect(signedIn.getByTestId("binding-released")).toContainText("released at");
  await expect(signedIn.getByTestId("binding-released")).toContainText("this job succeeded");
  await expect(signedIn.getByTestId("key-released-entry")).toContainText("held until this job finished");

  // The same request now makes a new job.
  await form.goto();
  await form.fill(input);
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  expect(await form.jobId()).not.toBe(first);
});

import { randomBytes } from "node:crypto";
import pg from "pg";
import { type JobHandler, Worker } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { linkLook } from "./pages/checks";
import { OperatorDialog } from "./pages/operator-dialog";

test.describe.configure({ mode: "serial" });

const tag = () => randomBytes(4).toString("hex");

/** A real worker on the console's database, stopped (and its pool ended) by the returned function. */
async function startWorker(queues: string[], handlers: Record<string, JobHandler<never>>) {
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 4 });
  const worker = new Worker({
    pool,
    queues,
    handlers,
    pollIntervalMs: 100,
    heartbeatIntervalMs: 200,
    leaseMs: 3000,
    abortGraceMs: 500,
    onError: () => {},
  });
  await worker.start();
  return async () => {
    await worker.stop({ graceMs: 0 });
    await pool.end();
  };
}

async function until(what: string, fn: () => Promise<boolean>, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("cancel a running job from its page: the worker stops it at its next heartbeat", async ({ signedIn, queue }) => {
  const q = `e2e-cancel-${tag()}`;
  let started = false;
  let reasonName = "";
  const stop = await startWorker([q], {
    "e2e.slow": (_p, ctx) =>
      new Promise((_resolve, reject) => {
        started = true;
        ctx.signal.addEventListener("abort", () => {
          reasonName = (ctx.signal.reason as Error).name;
          reject(ctx.signal.reason);
        });
      }),
  });
  try {
    const id = await queue.enqueue("e2e.slow", {}, { queue: q, maxAttempts: 3 });
    await until("the handler to start", async () => started);
    await signedIn.goto(`/jobs/${id}`);
    await expect(signedIn.getByText(`Job ${id}`)).toBeVisible();
    await expect(signedIn.getByRole("button", { name: "Run now…" })).toHaveCount(0);
    await expect(signedIn.getByRole("button", { name: "Redrive…" })).toHaveCount(0);
    const result = await new OperatorDialog(signedIn).run(
      signedIn.getByRole("button", { name: "Cancel job…" }),
      "customer withdrew the order",
      "Confirm cancel",
    );
    expect(result).toBe("Canceled 0 jobs; asked the workers of 1 active job to stop at their next heartbeat.");
    await until("the job to be canceled", async () => (await queue.getJob(id))?.state === "canceled");
    expect(reasonName).toBe("JobCanceledError");
    expect(await queue.getJob(id)).toMatchObject({ state: "canceled", attempt: 1 });
    await expect(signedIn.getByText("No actions apply to a canceled job.")).toBeVisible();

    // A scheduled job: cancel is immediate, and run now is offered too.
    const later = await queue.enqueue("e2e.slow", {}, { queue: q, runAt: new Date(Date.now() + 3_600_000) });
    await signedIn.goto(`/jobs/${later}`);
    await expect(signedIn.getByRole("button", { name: "Run now…" })).toBeVisible();
    const now = await new OperatorDialog(signedIn).run(
      signedIn.getByRole("button", { name: "Cancel job…" }),
      "not needed",
      "Confirm cancel",
    );
    expect(now).toBe("Canceled 1 job.");
    expect((await queue.getJob(later))?.state).toBe("canceled");

    await signedIn.goto("/audit?action=cancel");
    await expect(signedIn.getByRole("row").filter({ hasText: `job:${later}` })).toContainText("not needed");
  } finally {
    await stop();
  }
});

test("bulk redrive of a dead-letter group, dry run first", async ({ signedIn, queue }) => {
  const q = `e2e-dl-${tag()}`;
  const type = `e2e.fails.${tag()}`;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await queue.enqueue(type, { i }, { queue: q, maxAttempts: 1 }));
  const stop = await startWorker([q], {
    [type]: async () => {
      throw new RangeError("inventory service said no");
    },
  });
  try {
    await until("three failures", async () =>
      (await Promise.all(ids.map((id) => queue.getJob(id)))).every((j) => j?.state === "failed"),
    );
  } finally {
    await stop();
  }
  await signedIn.goto("/dead-letters");
  const row = signedIn.getByRole("row").filter({ hasText: type });
  await expect(row).toContainText("RangeError");
  await expect(row).toContainText("3 jobs");
  await expect(row).toContainText("inventory service said no");
  const { dryRun, done } = await new OperatorDialog(signedIn).redrive(
    row.getByRole("button", { name: "Redrive group…" }),
    "inventory service is back",
  );
  expect(dryRun).toBe("Dry run, nothing changed: 3 would be redriven.");
  expect(done).toBe("3 jobs redriven.");
  const sources = await Promise.all(ids.map((id) => queue.getJob(id)));
  for (const s of sources) {
    expect(s?.state).toBe("failed");
    expect(s?.redriveJobIds).toHaveLength(1);
    const copy = await queue.getJob(s?.redriveJobIds[0] as string);
    expect(copy).toMatchObject({ state: "ready", attempt: 0, redrivenFrom: s?.id, type, queue: q });
  }

  // The redriven group leaves the dead-letter groups; its drill-down shows its jobs only on request,
  // each with the job it became, and a second redrive of a selection is refused (nothing eligible).
  await signedIn.reload();
  await expect(signedIn.getByRole("row").filter({ hasText: type })).toHaveCount(0);
  await signedIn.goto(`/dead-letters?${new URLSearchParams({ queue: q, type, errorName: "RangeError" })}`);
  await expect(signedIn.getByText("No failed jobs in this group")).toBeVisible();
  await signedIn.getByRole("link", { name: "Show jobs redriven already" }).click();
  await expect(signedIn.getByText("redriven", { exact: true })).toHaveCount(3);
  const first = sources[0]?.redriveJobIds[0] as string;
  await expect(signedIn.getByRole("link", { name: `…${first.slice(-8)}` })).toHaveAttribute("href", `/jobs/${first}`);
  // The job ids are links and look like links (link colour, underlined), not like plain text.
  for (const name of [ids[0] as string, `…${first.slice(-8)}`]) {
    expect(await linkLook(signedIn.getByRole("link", { name, exact: true }))).toEqual({
      linkColour: true,
      underlined: true,
    });
  }
  await signedIn.getByLabel(`Select job ${ids[0]}`).check();
  const dialog = signedIn.getByRole("dialog");
  await signedIn.getByRole("button", { name: "Redrive 1 selected…" }).click();
  await dialog.getByLabel("Reason").fill("once more");
  await dialog.getByRole("button", { name: "Dry run" }).click();
  await expect(dialog.getByRole("status")).toHaveText(
    "Dry run, nothing changed: 1 was redriven before and is left alone (redrive again to run it once more).",
  );
  await expect(dialog.getByRole("button", { name: "Confirm redrive of 0 jobs" })).toBeDisabled();
  await dialog.getByRole("button", { name: "Close" }).click();
  expect((await queue.getJob(ids[0] as string))?.redriveJobIds).toHaveLength(1);

  // The source's page says where it went and offers only the explicit "Redrive again".
  await signedIn.goto(`/jobs/${ids[0]}`);
  await expect(signedIn.getByRole("link", { name: first })).toBeVisible();
  expect(await linkLook(signedIn.getByRole("link", { name: first }))).toEqual({ linkColour: true, underlined: true });
  await expect(signedIn.getByRole("button", { name: "Redrive…" })).toHaveCount(0);
  const twice = await new OperatorDialog(signedIn).redrive(
    signedIn.getByRole("button", { name: "Redrive again…" }),
    "the first copy was lost",
  );
  expect(twice.dryRun).toBe("Dry run, nothing changed: 1 would be redriven.");
  expect(twice.done).toBe("1 job redriven.");
  expect((await queue.getJob(ids[0] as string))?.redriveJobIds).toHaveLength(2);

  // The copy's page: "Redriven from" links back to the source, and looks like a link.
  await signedIn.goto(`/jobs/${first}`);
  const from = signedIn.getByRole("link", { name: ids[0] as string, exact: true });
  await expect(from).toHaveAttribute("href", `/jobs/${ids[0]}`);
  expect(await linkLook(from)).toEqual({ linkColour: true, underlined: true });

  await signedIn.goto("/audit?action=redrive");
  await expect(signedIn.getByRole("row").filter({ hasText: "jobs:3" })).toContainText("inventory service is back");
});

test("pause and resume a queue: a paused queue's job waits, then runs", async ({ signedIn, queue }) => {
  const q = `e2e-pause-${tag()}`;
  const first = await queue.enqueue("e2e.quick", {}, { queue: q, runAt: new Date(Date.now() + 3_600_000) });
  await signedIn.goto("/queues");
  const dialog = new OperatorDialog(signedIn);
  const paused = await dialog.run(
    signedIn.getByRole("button", { name: `Pause ${q}…` }),
    "downstream maintenance",
    "Confirm pause",
  );
  expect(paused).toBe(`Paused queue ${q}: workers claim nothing from it until it is resumed.`);
  const row = signedIn.getByRole("row").filter({ hasText: q }).filter({ hasText: "downstream maintenance" });
  await expect(row).toContainText("paused");
  await expect(row).toContainText("e2e-operator");

  let ran = 0;
  const stop = await startWorker([q], { "e2e.quick": async () => void ran++ });
  try {
    const second = await queue.enqueue("e2e.quick", {}, { queue: q });
    await queue.runNow({ jobIds: [first] }, { actor: "e2e", reason: "due now" });
    await new Promise((r) => setTimeout(r, 1500)); // fifteen poll intervals
    expect(ran).toBe(0);
    expect((await queue.getJob(second))?.state).toBe("ready");

    const resumed = await dialog.run(
      signedIn.getByRole("button", { name: `Resume ${q}…` }),
      "maintenance over",
      "Confirm resume",
    );
    expect(resumed).toBe(`Resumed queue ${q}.`);
    await until("both jobs to run", async () => (await queue.getJob(second))?.state === "succeeded");
    await until("the first job to run", async () => (await queue.getJob(first))?.state === "succeeded");
    expect(ran).toBe(2);
  } finally {
    await stop();
  }
  await signedIn.goto("/audit?action=pause_queue");
  await expect(signedIn.getByRole("row").filter({ hasText: `queue:${q}` })).toContainText("downstream maintenance");
});

test("jobs list: select all N jobs matching the filter, the count stated before confirming", async ({
  signedIn,
  queue,
}) => {
  const q = `e2e-bulk-${tag()}`;
  const later = new Date(Date.now() + 3_600_000);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await queue.enqueue("e2e.bulk", { i }, { queue: q, runAt: later }));
  await signedIn.goto(`/jobs?queue=${q}`);
  await signedIn.getByRole("button", { name: "Select all jobs matching this filter" }).click();
  await expect(signedIn.getByText("All 3 jobs matching this filter selected")).toBeVisible();
  await signedIn.getByRole("button", { name: "Run now…", exact: true }).click();
  await expect(signedIn.getByRole("dialog")).toContainText("This applies to all 3 jobs matching this filter.");
  await expect(signedIn.getByRole("dialog").getByRole("button", { name: "Cancel", exact: true })).toHaveCount(0);
  await signedIn.getByRole("dialog").getByRole("button", { name: "Close", exact: true }).click();

  // One row only: its checkbox, then cancel it.
  await signedIn.getByRole("button", { name: "Clear selection" }).click();
  await signedIn.getByLabel(`Select job ${ids[0]}`).check();
  await expect(signedIn.getByText("1 selected", { exact: true })).toBeVisible();
  const one = await new OperatorDialog(signedIn).run(
    signedIn.getByRole("button", { name: "Cancel…", exact: true }),
    "duplicate",
    "Cancel 1 job",
  );
  expect(one).toBe("Canceled 1 job.");

  await signedIn.getByRole("button", { name: "Select all jobs matching this filter" }).click();
  await expect(signedIn.getByText("All 3 jobs matching this filter selected")).toBeVisible();
  const all = await new OperatorDialog(signedIn).run(
    signedIn.getByRole("button", { name: "Cancel…", exact: true }),
    "bad batch",
    "Cancel 3 jobs",
  );
  expect(all).toBe("Canceled 2 jobs. Not changed: 1 already canceled.");
  for (const id of ids) expect((await queue.getJob(id))?.state).toBe("canceled");
});

test("pause and resume from the queue's own page: the page says who paused it and why", async ({ signedIn, queue }) => {
  const q = `e2e-qpage-${tag()}`;
  await queue.enqueue("e2e.quick", {}, { queue: q });
  await signedIn.goto(`/queues/${encodeURIComponent(q)}`);
  await expect(signedIn.getByText("Paused by")).toHaveCount(0);
  const dialog = new OperatorDialog(signedIn);
  const paused = await dialog.run(
    signedIn.getByRole("button", { name: "Pause queue…" }),
    "card network incident",
    "Confirm pause",
  );
  expect(paused).toBe(`Paused queue ${q}: workers claim nothing from it until it is resumed.`);
  await expect(signedIn.getByRole("status").filter({ hasText: "Paused by e2e-operator" })).toContainText(
    "card network incident",
  );
  expect((await queue.listPausedQueues()).map((p) => p.queue)).toContain(q);

  const resumed = await dialog.run(
    signedIn.getByRole("button", { name: "Resume queue…" }),
    "incident over",
    "Confirm resume",
  );
  expect(resumed).toBe(`Resumed queue ${q}.`);
  await expect(signedIn.getByText("Paused by e2e-operator")).toHaveCount(0);
  expect((await queue.listPausedQueues()).map((p) => p.queue)).not.toContain(q);
});

import { randomBytes } from "node:crypto";
import type { Page } from "@playwright/test";
import pg from "pg";
import { Worker } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { seriousAxe, wideTables } from "./pages/checks";

const tag = randomBytes(4).toString("hex");

/** Opens `button`'s dialog, gives a reason, optionally ticks the key choice, confirms; the result shown. */
async function deleteVia(page: Page, button: ReturnType<Page["getByRole"]>, reason: string, releaseKeys = false) {
  await button.click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toBeVisible();
  await dialog.getByLabel("Reason").fill(reason);
  if (releaseKeys) await dialog.getByRole("checkbox", { name: /Also delete jobs that own a live key/ }).check();
  await dialog.getByRole("button", { name: /^Delete \d+ jobs?$/ }).click();
  const status = dialog.getByRole("status");
  await expect(status).toBeVisible();
  const text = ((await status.textContent()) ?? "").trim();
  await dialog.getByRole("button", { name: "Close" }).click();
  return text;
}

test("clearing dead letters: one selected, then the group, where a job owning a live key is kept until the operator chooses to release it", async ({
  signedIn,
  queue,
}) => {
  const q = `e2e-dl-del-${tag}`;
  const type = `e2e.fails.${tag}`;
  const ids: string[] = [];
  for (let i = 0; i < 2; i++) ids.push(await queue.enqueue(type, { i }, { queue: q, maxAttempts: 1 }));
  const keyed = await queue.enqueue(type, { i: 9 }, { queue: q, maxAttempts: 1, idempotency: { key: `ord-${tag}` } });
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 4 });
  const worker = new Worker({
    pool,
    queues: [q],
    handlers: {
      [type]: () => {
        throw new RangeError("warehouse said no");
      },
    },
    pollIntervalMs: 100,
    onError: () => {},
  });
  await worker.start();
  try {
    await expect
      .poll(async () => (await Promise.all([...ids, keyed].map((id) => queue.getJob(id)))).map((j) => j?.state))
      .toEqual(["failed", "failed", "failed"]);
  } finally {
    await worker.stop({ graceMs: 0 });
    await pool.end();
  }

  // One job, selected in its group.
  await signedIn.goto("/dead-letters");
  const group = signedIn.getByRole("row").filter({ hasText: type });
  await expect(group).toContainText("3 jobs");
  await group.getByRole("link", { name: "3 jobs" }).click();
  await signedIn.getByRole("checkbox", { name: `Select job ${ids[0]}` }).check();
  const one = await deleteVia(signedIn, signedIn.getByRole("button", { name: "Delete 1 selected…" }), "test order");
  expect(one).toBe("Deleted 1 failed job.");
  expect(await queue.getJob(ids[0] as string)).toBeNull();
  await expect(signedIn.getByRole("link", { name: ids[0] as string })).toHaveCount(0);

  // The group: the keyed job is kept and named as such, until the operator ticks the choice.
  await signedIn.goto("/dead-letters");
  const kept = await deleteVia(signedIn, group.getByRole("button", { name: "Delete group…" }), "warehouse outage");
  expect(kept).toBe(
    'Deleted 1 failed job. Kept 1 job that still owns a live idempotency key (a repeat of the request returns it); tick "Also delete jobs that own a live key" to delete it too.',
  );
  expect((await queue.getJob(keyed))?.state).toBe("failed");
  await signedIn.goto("/dead-letters");
  await expect(group).toContainText("1 job");
  // The last job of the group: once deleted the group (and its button, dialog and result) leaves the
  // page, so the outcome is read where it is kept, in the audit log.
  await group.getByRole("button", { name: "Delete group…" }).click();
  const dialog = signedIn.getByRole("dialog");
  await dialog.getByLabel("Reason").fill("customer will order again");
  await dialog.getByRole("checkbox", { name: /Also delete jobs that own a live key/ }).check();
  await dialog.getByRole("button", { name: "Delete 1 job" }).click();
  // The emptied group stays on the open page ("none left") so the dialog keeps its result in view;
  // the next load no longer lists it.
  await expect(dialog.getByRole("status")).toContainText("Deleted 1 failed job");
  await dialog.getByRole("button", { name: "Close" }).click();
  await expect(group).toContainText("none left");
  await signedIn.goto("/dead-letters");
  await expect(signedIn.getByRole("row").filter({ hasText: type })).toHaveCount(0);
  expect(await queue.getJob(keyed)).toBeNull();
  expect(await queue.findBinding({ key: `ord-${tag}` })).toBeNull();

  // Every deletion is in the audit log with its reason.
  await signedIn.goto("/audit?action=delete_failed_jobs");
  for (const reason of ["test order", "warehouse outage", "customer will order again"]) {
    await expect(signedIn.getByRole("row").filter({ hasText: reason })).toHaveCount(1);
  }
  await expect(signedIn.getByRole("row").filter({ hasText: "customer will order again" })).toContainText(
    "releasedBindings: 1",
  );
});

test("the dead-letter pages and the delete dialog fit a phone and pass axe in light and dark", async ({
  signedIn,
  queue,
}) => {
  const q = `e2e-dl-phone-${tag}`;
  const type = `e2e.fails.phone.${tag}`;
  const id = await queue.enqueue(type, {}, { queue: q, maxAttempts: 1 });
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 4 });
  const worker = new Worker({
    pool,
    queues: [q],
    handlers: {
      [type]: () => {
        throw new Error("nope");
      },
    },
    pollIntervalMs: 100,
    onError: () => {},
  });
  await worker.start();
  try {
    await expect.poll(async () => (await queue.getJob(id))?.state).toBe("failed");
  } finally {
    await worker.stop({ graceMs: 0 });
    await pool.end();
  }
  for (const width of [1280, 390]) {
    await signedIn.setViewportSize({ width, height: 844 });
    for (const url of [
      "/dead-letters",
      `/dead-letters?${new URLSearchParams({ queue: q, type, errorName: "Error" })}`,
    ]) {
      await signedIn.goto(url);
      expect(await wideTables(signedIn)).toEqual([]);
      for (const scheme of ["light", "dark"] as const) {
        await signedIn.emulateMedia({ colorScheme: scheme });
        expect(await seriousAxe(signedIn)).toEqual([]);
      }
    }
    await signedIn.getByRole("checkbox", { name: `Select job ${id}` }).check();
    await signedIn.getByRole("button", { name: "Delete 1 selected…" }).click();
    await expect(signedIn.getByRole("dialog")).toBeVisible();
    expect(await seriousAxe(signedIn)).toEqual([]);
    await signedIn.getByRole("dialog").getByRole("button", { name: "Close" }).click();
  }
});

import { randomBytes } from "node:crypto";
import pg from "pg";
import { Worker } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { seriousAxe, wideTables } from "./pages/checks";

const run = randomBytes(3).toString("hex");

test("the workers page lists every running worker, idle or busy, with its queues, concurrency, jobs in hand and check-ins", async ({
  signedIn,
  queue,
}) => {
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 4 });
  let release = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const busy = new Worker({
    pool,
    workerId: `e2e-busy-${run}`,
    queues: [`e2e-wk-${run}`],
    concurrency: 2,
    heartbeatIntervalMs: 2000,
    handlers: { "wk.block": () => gate },
    onError: () => {},
  });
  const idle = new Worker({
    pool,
    workerId: `e2e-idle-${run}`,
    queues: [`e2e-wk-idle-${run}`, `e2e-wk-more-${run}`],
    concurrency: 4,
    heartbeatIntervalMs: 2000,
    handlers: { "*": () => null },
    onError: () => {},
  });
  try {
    await busy.start();
    await idle.start();
    const id = await queue.enqueue("wk.block", {}, { queue: `e2e-wk-${run}` });

    for (const width of [1280, 390]) {
      await signedIn.setViewportSize({ width, height: 900 });
      await signedIn.goto("/workers");
      await expect(signedIn.getByRole("heading", { name: "Workers", exact: true })).toBeVisible();
      const busyRow = signedIn.getByRole("row").filter({ hasText: `e2e-busy-${run}` });
      await expect(busyRow.getByText("busy", { exact: true })).toBeVisible();
      await expect(busyRow.getByRole("link", { name: `e2e-wk-${run}` })).toBeVisible();
      await expect(busyRow.getByRole("link", { name: new RegExp(id.slice(-8)) })).toBeVisible();
      await expect(busyRow.getByText("1 job", { exact: true })).toBeVisible();
      await expect(busyRow.getByText("1 / 2")).toBeVisible();
      const idleRow = signedIn.getByRole("row").filter({ hasText: `e2e-idle-${run}` });
      await expect(idleRow.getByText("idle", { exact: true })).toBeVisible();
      await expect(idleRow.getByText("0 / 4")).toBeVisible();
      await expect(idleRow.getByRole("link", { name: `e2e-wk-more-${run}` })).toBeVisible();
      expect(await wideTables(signedIn)).toEqual([]);
      for (const scheme of ["light", "dark"] as const) {
        await signedIn.emulateMedia({ colorScheme: scheme });
        expect(await seriousAxe(signedIn)).toEqual([]);
      }
    }

    // Stopped: its row goes (the live table drops it at the next refresh).
    await idle.stop();
    await signedIn.goto("/workers");
    await expect(signedIn.getByRole("row").filter({ hasText: `e2e-busy-${run}` })).toBeVisible();
    await expect(signedIn.getByRole("row").filter({ hasText: `e2e-idle-${run}` })).toHaveCount(0);
  } finally {
    release();
    await busy.stop({ graceMs: 5000 });
    await idle.stop();
    await pool.end();
  }
});

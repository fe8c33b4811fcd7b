import { randomBytes } from "node:crypto";
import pg from "pg";
import { Worker } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { seriousAxe, wideTables } from "./pages/checks";

const tag = randomBytes(3).toString("hex");

test("run times: p50/p95 per queue and type, and each dead-letter group's error trend, at 1280 and 390 px", async ({
  signedIn,
  queue,
}) => {
  const q = `e2e-rt-${tag}`;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await queue.enqueue("report.build", { i }, { queue: q, maxAttempts: 1 }));
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 4 });
  const worker = new Worker({
    pool,
    queues: [q],
    handlers: {
      "report.build": async (payload: { i: number }) => {
        if (payload.i === 2) throw new RangeError("paper jam");
        return null;
      },
    },
    pollIntervalMs: 100,
    onError: () => {},
  });
  await worker.start();
  try {
    await expect
      .poll(async () => (await Promise.all(ids.map((id) => queue.getJob(id)))).map((j) => j?.state).sort())
      .toEqual(["failed", "succeeded", "succeeded"]);
  } finally {
    await worker.stop({ graceMs: 0 });
    await pool.end();
  }

  for (const width of [1280, 390]) {
    await signedIn.setViewportSize({ width, height: 844 });
    await signedIn.goto("/run-times");
    await expect(signedIn.getByRole("heading", { name: "Run times", exact: true })).toBeVisible();
    const row = signedIn
      .getByRole("table", { name: "Run times by queue and type" })
      .getByRole("row")
      .filter({ hasText: q });
    await expect(row).toContainText("report.build");
    await expect(row.getByText("3 runs, 1 failed").first()).toBeVisible();
    await expect(row).toContainText(/p50 ≤ \d+ ms · p95 ≤ \d+ ms/);
    const trend = signedIn
      .getByRole("table", { name: /Failures per dead-letter group/ })
      .getByRole("row")
      .filter({ hasText: q });
    await expect(trend.getByRole("link", { name: "RangeError" })).toBeVisible();
    await expect(trend).toContainText("new");
    expect(await wideTables(signedIn)).toEqual([]);
    for (const scheme of ["light", "dark"] as const) {
      await signedIn.emulateMedia({ colorScheme: scheme });
      expect(await seriousAxe(signedIn)).toEqual([]);
    }
  }
});

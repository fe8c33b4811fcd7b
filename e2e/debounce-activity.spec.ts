import { randomBytes } from "node:crypto";
import { expect, test } from "./fixtures";
import { seriousAxe, wideTables } from "./pages/checks";
import { ConflictsPage } from "./pages/conflicts-page";

const tag = randomBytes(3).toString("hex");

test("debounce replaced decisions are a list on the conflicts page, filterable beside replays, conflicts and coalesces", async ({
  signedIn,
  queue,
}) => {
  const q = `e2e-replaced-${tag}`;
  const debounce = { key: `shop-${tag}`, scope: `e2e-replaced-${tag}`, windowMs: 600_000 };
  const first = await queue.enqueueWithResult("search.reindex", { v: 1 }, { queue: q, debounce });
  for (let v = 2; v <= 3; v++) {
    expect((await queue.enqueueWithResult("search.reindex", { v }, { queue: q, debounce })).outcome).toBe("replaced");
  }
  const idem = { key: `order-${tag}`, scope: `e2e-replaced-${tag}` };
  await queue.enqueue("order.place", {}, { queue: q, idempotency: idem });
  await queue.enqueue("order.place", {}, { queue: q, idempotency: idem }); // replayed: an observation
  await queue.flushObservations();

  const page = new ConflictsPage(signedIn);
  await page.goto({ scope: `e2e-replaced-${tag}`, outcome: "replaced" });
  await expect(page.rows()).toHaveCount(2);
  for (const row of await page.rows().all()) {
    await expect(row.getByText("replaced", { exact: true })).toBeVisible();
    await expect(row).toContainText(q);
    await expect(row).toContainText("replaced request");
    await expect(row).toContainText("replaced by");
    await expect(row.getByRole("link", { name: new RegExp(first.jobId.slice(-8)) })).toBeVisible();
  }
  // The same filter with another outcome reads the observations.
  await page.goto({ scope: `e2e-replaced-${tag}`, outcome: "replayed" });
  await expect(page.rows()).toHaveCount(1);
  await expect(page.rows().first()).toContainText("replayed");

  await signedIn.goto(`/conflicts?outcome=replaced&scope=e2e-replaced-${tag}`);
  for (const width of [1280, 390]) {
    await signedIn.setViewportSize({ width, height: 844 });
    await expect(page.rows()).toHaveCount(2);
    expect(await wideTables(signedIn)).toEqual([]);
    for (const scheme of ["light", "dark"] as const) {
      await signedIn.emulateMedia({ colorScheme: scheme });
      expect(await seriousAxe(signedIn)).toEqual([]);
    }
  }
});

import AxeBuilder from "@axe-core/playwright";
import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { seriousAxe, wideTables } from "./pages/checks";
import { everyPage as pages, timeFor } from "./pages/every-page";

/**
 * Every page, after the flows and health specs seeded data: no horizontal overflow at 390 px, no
 * table wider than its container at 390 px (tables stack into cards there) or at 1280 px, and no
 * serious or critical axe violation in light and dark colour schemes.
 */
async function settle(page: Page) {
  await page.waitForLoadState("networkidle");
}

test("at 390 px nothing overflows sideways and the navigation is a menu", async ({ signedIn, queue }) => {
  const urls = await pages(signedIn, queue);
  test.setTimeout(timeFor(urls));
  await signedIn.setViewportSize({ width: 390, height: 844 });
  const overflowing: string[] = [];
  for (const url of [...urls, "/sign-in"]) {
    await signedIn.goto(url);
    await settle(signedIn);
    const [scroll, inner] = await signedIn.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    if ((scroll as number) > (inner as number)) overflowing.push(`${url}: ${scroll} > ${inner}`);
  }
  expect(overflowing).toEqual([]);

  await signedIn.goto("/");
  const nav = signedIn.getByRole("navigation", { name: "Console" });
  await expect(nav.getByRole("link", { name: "Jobs" })).toBeHidden();
  await nav.getByRole("button", { name: /Menu/ }).click();
  await expect(nav.getByRole("button", { name: /Menu/ })).toHaveAttribute("aria-expanded", "true");
  await nav.getByRole("link", { name: "Jobs" }).click();
  await expect(signedIn).toHaveURL(/\/jobs$/);
  await expect(nav.getByRole("link", { name: "Overview" })).toBeHidden();
});

for (const width of [1280, 390]) {
  test(`at ${width} px every table fits its container`, async ({ signedIn, queue }) => {
    const urls = await pages(signedIn, queue);
    test.setTimeout(timeFor(urls)); // each page waited on until its network is idle
    await signedIn.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    const wide: string[] = [];
    let tables = 0;
    for (const url of urls) {
      await signedIn.goto(url);
      await settle(signedIn);
      tables += await signedIn.locator("table").count();
      for (const f of await wideTables(signedIn)) wide.push(`${url}: ${f}`);
    }
    expect(tables, "tables seen").toBeGreaterThan(10);
    expect(wide).toEqual([]);
  });
}

test("at 390 px a table is a stack of cards, each cell labelled with its column", async ({ signedIn, queue }) => {
  await pages(signedIn, queue);
  await signedIn.setViewportSize({ width: 390, height: 844 });
  for (const url of ["/jobs", "/bindings", "/conflicts", "/queues", "/audit", "/"]) {
    await signedIn.goto(url);
    await settle(signedIn);
    const table = signedIn.locator("table").first();
    const cell = table.locator("tbody > tr > td").first();
    const [display, label, firstHead] = await cell.evaluate((td) => [
      getComputedStyle(td).display,
      getComputedStyle(td, "::before").content,
      td.closest("table")?.querySelector("thead th")?.textContent ?? "",
    ]);
    // A block of its own (flow-root: it holds its floated label, so it is never shorter than the label).
    expect(display, url).toBe("flow-root");
    expect(label, url).toBe(JSON.stringify(firstHead));
  }
});

for (const scheme of ["light", "dark"] as const) {
  test(`axe finds no serious or critical violation on any page (${scheme})`, async ({ signedIn, queue }) => {
    const urls = await pages(signedIn, queue);
    test.setTimeout(timeFor(urls));
    await signedIn.emulateMedia({ colorScheme: scheme });
    const found: string[] = [];
    for (const url of urls) {
      await signedIn.goto(url);
      await settle(signedIn);
      const result = await new AxeBuilder({ page: signedIn }).analyze();
      for (const v of result.violations) {
        if (v.impact !== "serious" && v.impact !== "critical") continue;
        found.push(
          `${url}: ${v.id} (${v.impact}) ${v.nodes
            .map((n) => n.target.join(" "))
            .slice(0, 3)
            .join(" | ")}`,
        );
      }
    }
    expect(found).toEqual([]);
  });
}

test("the sign-in page passes axe in light and dark", async ({ page }) => {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto("/sign-in");
    expect(await seriousAxe(page)).toEqual([]);
  }
});

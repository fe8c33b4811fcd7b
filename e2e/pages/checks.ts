import AxeBuilder from "@axe-core/playwright";
import type { Page } from "@playwright/test";

/** The ids of axe's serious and critical violations on the page as it is now (empty when clean). */
export async function seriousAxe(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
}

/** Every table on the page whose content is wider than the box it sits in (empty when none). */
export function wideTables(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll("table")).flatMap((t) => {
      const box = t.parentElement?.clientWidth ?? 0;
      return t.scrollWidth > box
        ? [`${t.querySelector("caption")?.textContent ?? "table"}: ${t.scrollWidth} > ${box}`]
        : [];
    }),
  );
}

import AxeBuilder from "@axe-core/playwright";
import type { Locator, Page } from "@playwright/test";

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

/**
 * Whether a link reads as one: its text (down to the innermost element holding it) is in the link's
 * own colour, which differs from the text of the cell or definition it sits in, and it is underlined.
 */
export function linkLook(link: Locator): Promise<{ linkColour: boolean; underlined: boolean }> {
  return link.evaluate((a) => {
    let inner: Element = a;
    while (inner.children.length === 1 && inner.textContent === inner.children[0]?.textContent) {
      inner = inner.children[0] as Element;
    }
    const box = a.parentElement?.closest("td, dd, p, li, div") ?? document.body;
    return {
      linkColour:
        getComputedStyle(inner).color === getComputedStyle(a).color &&
        getComputedStyle(a).color !== getComputedStyle(box).color,
      underlined: getComputedStyle(a).textDecorationLine.includes("underline"),
    };
  });
}

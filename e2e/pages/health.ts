import { expect, type Locator, type Page } from "@playwright/test";
import type { SeriesName } from "../../lib/console/wire/types";

/** The health chart (overview and queue pages): its per-window totals and the drawn lines. */
export class HealthChartPart {
  readonly chart: Locator;
  constructor(readonly page: Page) {
    this.chart = page.getByTestId("health-chart");
  }

  total(series: SeriesName): Locator {
    return this.page.locator(`[data-testid="series-totals"] [data-series="${series}"]`);
  }

  /** The `d` attribute of each drawn line: one per series, each a real path. */
  async linePaths(): Promise<string[]> {
    await expect(this.chart.locator("path.recharts-curve").first()).toBeVisible();
    return this.chart.locator("path.recharts-curve").evaluateAll((ps) => ps.map((p) => p.getAttribute("d") ?? ""));
  }
}

/** The jobs page's state tabs. */
export class StateTabsPart {
  constructor(readonly page: Page) {}

  count(tab: string): Locator {
    return this.page.getByRole("navigation", { name: "Job states" }).locator(`[data-count="${tab}"]`);
  }

  tab(name: string): Locator {
    return this.page
      .getByRole("navigation", { name: "Job states" })
      .getByRole("link", { name: new RegExp(`^${name}\\b`) });
  }
}

import { expect, type Locator, type Page } from "@playwright/test";

export class ConflictsPage {
  readonly table: Locator;
  constructor(readonly page: Page) {
    this.table = page.getByRole("table", {
      name: "Replays, conflicts, coalesced, non-replaceable and replaced requests, newest first",
    });
  }

  async goto(filters: { scope?: string; outcome?: string } = {}) {
    await this.page.goto("/conflicts");
    if (filters.outcome) await this.page.getByLabel("Outcome").selectOption(filters.outcome);
    if (filters.scope) await this.page.getByLabel("Scope").fill(filters.scope);
    await this.page.getByRole("button", { name: "Filter" }).click();
    await this.page.waitForURL(/\/conflicts\?/);
    await expect(this.page.getByRole("heading", { name: "Conflicts & replays" })).toBeVisible();
  }

  rows(): Locator {
    return this.table.locator("tbody tr");
  }
}

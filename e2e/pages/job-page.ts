import { expect, type Locator, type Page } from "@playwright/test";

export class JobPage {
  readonly dialog: Locator;
  constructor(readonly page: Page) {
    this.dialog = page.getByRole("dialog");
  }

  async goto(id: string) {
    await this.page.goto(`/jobs/${id}`);
    await expect(this.page.getByText(`Job ${id}`)).toBeVisible();
  }

  purgeButton(): Locator {
    return this.page.getByRole("button", { name: "Purge job…" });
  }

  async purge(reason: string) {
    await this.purgeButton().click();
    await expect(this.dialog).toBeVisible();
    await this.dialog.getByLabel("Reason").fill(reason);
    await this.dialog.getByRole("button", { name: "Confirm purge" }).click();
    await expect(this.dialog.getByRole("status")).toBeVisible();
    return ((await this.dialog.getByRole("status").textContent()) ?? "").trim();
  }
}

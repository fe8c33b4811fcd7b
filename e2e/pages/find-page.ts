import { expect, type Locator, type Page } from "@playwright/test";

export class FindPage {
  readonly answer: Locator;
  constructor(readonly page: Page) {
    this.answer = page.getByTestId("find-answer");
  }

  async goto() {
    await this.page.goto("/find");
    await expect(this.page.getByRole("heading", { name: "Find a job by key" })).toBeVisible();
  }

  async find(scope: string, key: string) {
    await this.page.getByLabel("Scope").fill(scope);
    await this.page.getByLabel("Key", { exact: true }).fill(key);
    await this.page.getByRole("button", { name: "Find" }).click();
    await expect(this.answer).toBeVisible();
  }
}

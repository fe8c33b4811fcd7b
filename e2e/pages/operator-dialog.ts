import { expect, type Locator, type Page } from "@playwright/test";

/** The confirmation dialogs of operator actions (cancel, run now, pause, resume, redrive). */
export class OperatorDialog {
  readonly dialog: Locator;
  constructor(readonly page: Page) {
    this.dialog = page.getByRole("dialog");
  }

  /** Opens the dialog with `button`, gives the reason, confirms; returns the result shown. */
  async run(button: Locator, reason: string, confirm: string): Promise<string> {
    await button.click();
    await expect(this.dialog).toBeVisible();
    await this.dialog.getByLabel("Reason").fill(reason);
    await this.dialog.getByRole("button", { name: confirm }).click();
    const status = this.dialog.getByRole("status");
    await expect(status).toBeVisible();
    const text = ((await status.textContent()) ?? "").trim();
    await this.dialog.getByRole("button", { name: "Close" }).click();
    return text;
  }

  /** Redrive: dry run first (its result), then confirm (its result). */
  async redrive(button: Locator, reason: string): Promise<{ dryRun: string; done: string }> {
    await button.click();
    await expect(this.dialog).toBeVisible();
    await this.dialog.getByLabel("Reason").fill(reason);
    await this.dialog.getByRole("button", { name: "Dry run" }).click();
    const status = this.dialog.getByRole("status");
    await expect(status).toContainText("Dry run");
    const dryRun = ((await status.textContent()) ?? "").trim();
    await this.dialog.getByRole("button", { name: /^Confirm redrive of / }).click();
    await expect(status).not.toContainText("Dry run");
    const done = ((await status.textContent()) ?? "").trim();
    await this.dialog.getByRole("button", { name: "Close" }).click();
    return { dryRun, done };
  }
}

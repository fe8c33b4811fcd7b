import { expect, type Locator, type Page } from "@playwright/test";

export interface EnqueueInput {
  type: string;
  queue?: string;
  payload?: string;
  key?: string;
  scope?: string;
  ttlMs?: string;
  mode?: "idempotency" | "debounce" | "throttle";
  windowMs?: string;
  schedule?: "reset" | "preserve";
  maxWaitMs?: string;
  /** The key lifetime select: "" (the TTL alone), "finished" or "started". */
  holdUntil?: "" | "finished" | "started";
}

const KEY_LABEL = { idempotency: "Idempotency key", debounce: "Debounce key", throttle: "Throttle key" } as const;

export class EnqueuePage {
  readonly result: Locator;
  constructor(readonly page: Page) {
    this.result = page.getByRole("region", { name: "Result" });
  }

  async goto() {
    await this.page.goto("/enqueue");
    await expect(this.page.getByRole("heading", { name: "Enqueue a test job" })).toBeVisible();
  }

  async fill(input: EnqueueInput) {
    const p = this.page;
    await p.getByLabel("Type", { exact: true }).fill(input.type);
    await p.getByLabel("Queue", { exact: true }).fill(input.queue ?? "");
    await p.getByLabel("Payload (JSON)", { exact: true }).fill(input.payload ?? "{}");
    const mode = input.mode ?? "idempotency";
    await p.getByLabel("Key mode", { exact: true }).selectOption(mode);
    await p.getByLabel(KEY_LABEL[mode], { exact: true }).fill(input.key ?? "");
    await p.getByLabel("Scope", { exact: true }).fill(input.scope ?? "");
    if (mode === "idempotency") {
      await p.getByLabel("TTL (ms)", { exact: true }).fill(input.ttlMs ?? "");
    } else {
      await p.getByLabel("Window (ms)", { exact: true }).fill(input.windowMs ?? "");
    }
    if (mode !== "throttle") {
      await p.getByLabel("Key lifetime", { exact: true }).selectOption(input.holdUntil ?? "");
    }
    if (mode === "debounce") {
      await p.getByLabel("Schedule", { exact: true }).selectOption(input.schedule ?? "reset");
      await p.getByLabel("Max wait (ms)", { exact: true }).fill(input.maxWaitMs ?? "");
    }
  }

  /** The explanation of the outcome (and reason) under the result. */
  explanation(): Locator {
    return this.result.getByTestId("outcome-explanation");
  }

  /** Submits and waits for the result panel to show submission number `> previous`. */
  async submit(): Promise<void> {
    const before = await this.submissionNumber();
    await this.page.getByRole("button", { name: "Enqueue", exact: true }).click();
    await expect.poll(() => this.submissionNumber()).toBeGreaterThan(before);
  }

  async submissionNumber(): Promise<number> {
    const text = await this.result.textContent();
    const m = /Submission#(\d+)/.exec(text?.replace(/\s+/g, "") ?? "");
    return m ? Number(m[1]) : 0;
  }

  async outcome(): Promise<string> {
    const text = (await this.result.textContent()) ?? "";
    const m = /Outcome:\s*(\w+)/.exec(text);
    return m?.[1] ?? "";
  }

  /** The job id shown in the result (the accepted/replayed job, or the existing job of a conflict). */
  async jobId(): Promise<string> {
    const link = this.result.getByRole("link").filter({ hasText: /^[0-9a-f-]{36}$/ });
    return ((await link.first().textContent()) ?? "").trim();
  }

  conflictingFields(): Locator {
    return this.result.getByRole("list", { name: "Conflicting fields" }).getByRole("listitem");
  }
}

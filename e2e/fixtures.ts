import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test as base, type Page } from "@playwright/test";
import pg from "pg";
import { Queue } from "../lib/enqueue";
import { PASSWORD } from "./keys";

/** Where every response body a test's browser received is written, for the no-raw-keys scan. */
export const BODIES_DIR = path.resolve("test-results", "e2e-bodies");

interface Fixtures {
  /** The enqueue core over the console's database: how tests seed data (never raw SQL writes). */
  queue: Queue;
  /** A page already signed in as `e2e-operator`. */
  signedIn: Page;
}

export const test = base.extend<Fixtures & { recordBodies: undefined }>({
  recordBodies: [
    async ({ page }, use, info) => {
      const bodies: string[] = [];
      const pending: Promise<void>[] = [];
      page.on("response", (res) => {
        const type = res.headers()["content-type"] ?? "";
        if (!/html|json|text|x-component|javascript/.test(type)) return;
        pending.push(
          res
            .text()
            .then((t) => {
              bodies.push(`=== ${res.request().method()} ${res.url()}\n${t}`);
            })
            .catch(() => {}),
        );
      });
      await use(undefined);
      await Promise.all(pending);
      bodies.push(`=== final DOM of ${page.url()}\n${await page.content().catch(() => "")}`);
      mkdirSync(BODIES_DIR, { recursive: true });
      const name = `${info.project.name}-${info.title}`.replace(/[^a-z0-9]+/gi, "_").slice(0, 120);
      writeFileSync(path.join(BODIES_DIR, `${name}.txt`), bodies.join("\n"));
    },
    { auto: true },
  ],
  // biome-ignore lint/correctness/noEmptyPattern: Playwright reads fixture dependencies from this pattern
  queue: async ({}, use) => {
    const url = process.env.E2E_DATABASE_URL;
    if (!url) throw new Error("E2E_DATABASE_URL is not set: run the e2e suite with `npm run test:e2e`.");
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const queue = new Queue({ pool, maintenance: false, source: "e2e" });
    await use(queue);
    await queue.close();
    await pool.end();
  },
  signedIn: async ({ page }, use) => {
    await page.goto("/sign-in");
    await page.getByLabel("Your name").fill("e2e-operator");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await use(page);
  },
});

export { expect } from "@playwright/test";

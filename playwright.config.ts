import { defineConfig } from "@playwright/test";

/**
 * Run through `npm run test:e2e` (scripts/e2e.mjs): it starts a private PostgreSQL and two consoles
 * (read-write and read-only) on free ports, and passes their URLs here.
 */
const baseURL = process.env.E2E_BASE_URL ?? "http://127.0.0.1:3100";
const readonlyURL = process.env.E2E_READONLY_URL ?? "http://127.0.0.1:3101";
const databasesURL = process.env.E2E_DATABASES_URL ?? "http://127.0.0.1:3102";
const screenshots = process.env.E2E_SCREENSHOTS === "1";

export default defineConfig({
  testDir: "e2e",
  forbidOnly: !!process.env.CI,
  retries: 0,
  workers: 1,
  fullyParallel: false,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  reporter: [["list"], ["json", { outputFile: "test-results/playwright.json" }]],
  outputDir: "test-results/e2e",
  use: {
    baseURL,
    browserName: "chromium",
    trace: "retain-on-failure",
    viewport: { width: 1280, height: 900 },
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
    },
  },
  projects: screenshots
    ? [{ name: "screenshots", testMatch: /screenshots\.spec\.ts/ }]
    : [
        { name: "flows", testMatch: /console-flows\.spec\.ts/ },
        { name: "readonly", testMatch: /readonly\.spec\.ts/, use: { baseURL: readonlyURL } },
        { name: "databases", testMatch: /databases\.spec\.ts/, use: { baseURL: databasesURL } },
        { name: "contrast", testMatch: /contrast\.spec\.ts/, dependencies: ["flows"] },
        { name: "security", testMatch: /security\.spec\.ts/ },
        { name: "metrics", testMatch: /metrics\.spec\.ts/ },
        { name: "own-console", testMatch: /own-console\.spec\.ts/ },
        { name: "limits", testMatch: /enqueue-limits\.spec\.ts/ },
        { name: "health", testMatch: /console-health\.spec\.ts/ },
        { name: "layout", testMatch: /layout-a11y\.spec\.ts/, dependencies: ["flows", "health"] },
        { name: "operator-actions", testMatch: /operator-actions\.spec\.ts/ },
        { name: "debounce-throttle", testMatch: /debounce-throttle\.spec\.ts/ },
        { name: "workers", testMatch: /workers\.spec\.ts/ },
        { name: "dead-letters-delete", testMatch: /dead-letters-delete\.spec\.ts/ },
        { name: "debounce-activity", testMatch: /debounce-activity\.spec\.ts/ },
        { name: "payload-search", testMatch: /payload-search\.spec\.ts/ },
        { name: "run-times", testMatch: /run-times\.spec\.ts/ },
        { name: "defects", testMatch: /console-defects\.spec\.ts/ },
        { name: "new-user-trial", testMatch: /new-user-trial\.spec\.ts/ },
        { name: "enqueue-form", testMatch: /enqueue-form\.spec\.ts/ },
        {
          name: "no-raw-keys",
          testMatch: /no-raw-keys\.spec\.ts/,
          dependencies: ["flows", "readonly", "operator-actions", "debounce-throttle", "defects"],
        },
      ],
});

import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { alias: { "@": path.resolve(import.meta.dirname) } },
  test: {
    // test/**/*.citus.ts need a Citus coordinator: included when the run lays its databases out for it.
    include:
      process.env.WORKHORSE_DISTRIBUTED === "1" ? ["test/**/*.test.ts", "test/**/*.citus.ts"] : ["test/**/*.test.ts"],
    reporters: ["default", ["json", { outputFile: "test-results/vitest.json" }]],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
    server: { deps: { inline: ["server-only"] } },
  },
});

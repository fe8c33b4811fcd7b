import { appendFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // The package's entries (sdk/typescript) are the sources themselves inside the repository, as in tsconfig.json's paths.
  resolve: {
    alias: [
      { find: /^@workhorse\/core$/, replacement: path.resolve(import.meta.dirname, "lib/enqueue/index.ts") },
      { find: /^@workhorse\/core\/client$/, replacement: path.resolve(import.meta.dirname, "lib/enqueue/client.ts") },
      { find: /^@workhorse\/core\/worker$/, replacement: path.resolve(import.meta.dirname, "lib/worker/index.ts") },
      { find: "@", replacement: path.resolve(import.meta.dirname) },
    ],
  },
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
    // An error thrown outside any test fails the run; it is also kept whole in a file, which .ci/run
    // prints last when a run fails (a CI log may be read from its end only).
    onUnhandledError(error) {
      mkdirSync("test-results", { recursive: true });
      appendFileSync(
        "test-results/unhandled-errors.log",
        `${new Date().toISOString()} ${error.type}: ${error.name}: ${error.message}\n${error.stack ?? ""}\n\n`,
      );
    },
  },
});

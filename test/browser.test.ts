// `npm test` on a machine without the browser: the browser tests say what to do in one sentence,
// before any server starts, instead of failing every test with Playwright's launch error.
import { spawn } from "node:child_process";
import path from "node:path";
import { expect, test } from "vitest";

const root = path.join(import.meta.dirname, "..");

function run(env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["scripts/e2e.mjs"], { cwd: root, env: { ...process.env, ...env } });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    child.on("exit", (code) => resolve({ code, out, err }));
  });
}

test("a CHROMIUM_PATH that does not exist ends the browser tests at once with one sentence saying what to do", async () => {
  const missing = path.join(root, "test-results", "no-such-chromium");
  const { code, out, err } = await run({ CHROMIUM_PATH: missing });
  expect(code).toBe(1);
  expect(out).not.toContain("[e2e] database"); // no server was started
  const lines = err.trim().split("\n");
  expect(lines).toEqual([
    `[e2e] CHROMIUM_PATH is ${missing}, which is not an executable file: point it at a Chromium binary, or unset it to use Debian's /usr/bin/chromium.`,
  ]);
}, 30_000);

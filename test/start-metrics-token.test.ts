// `npm start` with a WORKHORSE_METRICS_TOKEN too short to guard /metrics: it says so and does not
// start (before PostgreSQL or Next.js), instead of serving a console whose /metrics is silently off.
import { expect, test } from "vitest";
import { runScript } from "./helpers";

/** `npm start`'s script against a port nobody listens on: were the check missing, the start would fail there, not here. */
async function start(env: Record<string, string>) {
  const run = runScript(["scripts/start.ts"], {
    ...process.env,
    DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
    PORT: "1",
    ...env,
  });
  const code = await run.exited;
  return { code, out: run.stdout(), err: run.stderr() };
}

test("a metrics token under 16 characters stops the start with one sentence saying why and what to set", async () => {
  const { code, out, err } = await start({ WORKHORSE_METRICS_TOKEN: "short-token" });
  expect(code).toBe(2);
  expect(out).toBe("");
  expect(err.trim().split("\n")).toEqual([
    "[workhorse] WORKHORSE_METRICS_TOKEN is 11 characters; it must be at least 16 to turn /metrics on (e.g. `openssl rand -hex 24`), or unset to leave /metrics off.",
  ]);
}, 60_000);

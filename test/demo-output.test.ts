// What `npm run demo` and `npm start` print, run as real processes against a real embedded
// PostgreSQL on a port of its own (WORKHORSE_PG_PORT, not the default 54329): the full connection
// URL as used, and for the demo a few keys (scope and key) and job ids that the console finds.
import pg from "pg";
import { expect, test } from "vitest";
import { freePort } from "../lib/db";
import { Queue } from "../lib/enqueue";
import { privateServer, runScript, waitFor } from "./helpers";

const server = privateServer("demo-output");

function run(script: string, env: Record<string, string>) {
  const { DATABASE_URL: _unset, ...rest } = process.env;
  // Its own process group: whatever it starts (next build) is stopped with it.
  return runScript([script], {
    ...rest,
    WORKHORSE_PG_PORT: String(server.port),
    WORKHORSE_PG_DIR: server.dataDir,
    ...env,
  });
}

test("`npm run demo` prints the database URL with its port, and keys and job ids that the console finds", async () => {
  const url = `postgres://postgres:workhorse@127.0.0.1:${server.port}/workhorse`;
  const { output, exited } = run("scripts/demo.ts", {});
  const code = await exited;
  const out = output();
  expect(code, out).toBe(0);
  expect(out).toContain(`Writing demo traffic to ${url}\n`);
  expect(out).toContain("Look these up in the console (Find by key: scope and key; Jobs: the job id):\n");

  const keyed = [...out.matchAll(/^ {2}(.+): scope "([^"]+)", key "([^"]+)", job ([0-9a-f-]{36})$/gm)].map((m) => ({
    what: m[1] as string,
    scope: m[2] as string,
    key: m[3] as string,
    jobId: m[4] as string,
  }));
  expect(keyed.map((k) => k.scope)).toEqual([
    "order-form",
    "stripe-webhooks",
    "invoice-capture",
    "order-form",
    "search-index",
    "shipping-notice",
  ]);
  // The summary counts every job the demo wrote: its lines that made a job add up to the jobs stored.
  const made = [...out.matchAll(/^ +(\d+) {2}(.+)$/gm)]
    .filter((m) => /: (accepted|scheduled)$/.test(m[2] as string))
    .reduce((sum, m) => sum + Number(m[1]), 0);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const queue = new Queue({ pool, maintenance: false });
  try {
    const { rows: stored } = await pool.query<{ n: number }>("select count(*)::int as n from workhorse.job");
    expect(made, out).toBe(stored[0]?.n);
    for (const k of keyed) {
      const binding = await queue.findBinding({ scope: k.scope, key: k.key });
      if (k.what.includes("purged")) {
        expect(binding, k.what).toBeNull();
        const { rows } = await pool.query("select state::text from workhorse.job where id = $1::uuid", [k.jobId]);
        expect(rows).toEqual([{ state: "purged" }]);
      } else {
        expect(binding?.jobId, k.what).toBe(k.jobId);
      }
    }
  } finally {
    await queue.close();
    await pool.end();
  }
}, 120_000);

test("`npm start` logs the full connection URL of the embedded PostgreSQL on WORKHORSE_PG_PORT", async () => {
  const { proc, output } = run("scripts/start.ts", { PORT: String(await freePort()) });
  try {
    await waitFor("the PostgreSQL line", async () => /PostgreSQL (started|reused) at .*\n/.test(output()), 60_000, 50);
    expect(output()).toContain(
      `[workhorse] PostgreSQL reused at postgres://postgres:workhorse@127.0.0.1:${server.port}/workhorse\n`,
    );
  } finally {
    // The server it reused is this file's; the console (and a build it started) go with the group.
    try {
      process.kill(-(proc.pid as number), "SIGKILL");
    } catch {}
  }
}, 90_000);

// Ctrl-C in a terminal sends SIGINT to the whole foreground process group (npm, tsx, node), so the
// worker gets the signal more than once. `npm run worker` must still drain as documented: running
// jobs finish (or are released), none is left `active` for another worker to reap.
import { spawn } from "node:child_process";
import path from "node:path";
import { beforeAll, expect, test } from "vitest";
import { MIGRATION_LOCK } from "../lib/enqueue/migrate";
import { setupQueueTests, waitFor as waitUntil } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());
/** The shared poll with this file's patience (its waits span process starts and lease expiries). */
const waitFor = (what: string, fn: () => Promise<boolean>) => waitUntil(what, fn, 30_000, 50);

test("Ctrl-C on `npm run worker` (SIGINT to the whole process group) drains: no job is left active", async () => {
  const q = t.queue();
  await q.enqueueMany(
    Array.from({ length: 6 }, (_, i) => ({
      type: "order.place",
      payload: { cartId: `cart-${i}` },
      options: { queue: "ctrlc" },
    })),
  );
  const proc = spawn("npm", ["run", "worker", "--", "--no-traffic", "--queues=ctrlc", "--concurrency=4"], {
    cwd: path.join(import.meta.dirname, ".."),
    env: { ...process.env, DATABASE_URL: t.url },
    detached: true, // its own process group, as a terminal's foreground job
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<string>((resolve) => proc.once("exit", (code, signal) => resolve(`${code ?? signal}`)));
  try {
    await waitFor("jobs to be active", async () => (await t.count("job", "queue = 'ctrlc' and state = 'active'")) >= 2);
    process.kill(-(proc.pid as number), "SIGINT");
    const code = await exited;
    expect(out).toContain("stopping: waiting up to 10 s for running jobs");
    expect(out).toMatch(/worker .*: \{"claimed":/); // the closing stats line: the drain ran to its end
    // npm re-raises the signal its script got once that script has exited; never a SIGKILL.
    expect(["0", "SIGINT"]).toContain(code);
    expect(await t.count("job", "queue = 'ctrlc' and state = 'active'")).toBe(0);
  } finally {
    try {
      process.kill(-(proc.pid as number), "SIGKILL"); // whatever of the group is still alive
    } catch {
      // the whole group is gone
    }
  }
});

test("Ctrl-C while `npm run worker` is still connecting and starting its workers drains too (no default kill)", async () => {
  const q = t.queue();
  await q.enqueueMany(
    Array.from({ length: 4 }, (_, i) => ({
      type: "order.place",
      payload: { cartId: `early-${i}` },
      options: { queue: "ctrlc-early" },
    })),
  );
  const appName = `workhorse-ctrlc-early-${process.pid}`;
  // Hold the migration lock, so the worker stays inside its start-up (migrate) until released.
  const holder = await t.pool.connect();
  await holder.query("begin");
  await holder.query("select pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
  let held = true;
  const release = async () => {
    if (!held) return;
    held = false;
    await holder.query("commit");
    holder.release();
  };
  const proc = spawn("npm", ["run", "worker", "--", "--no-traffic", "--queues=ctrlc-early", "--concurrency=2"], {
    cwd: path.join(import.meta.dirname, ".."),
    env: { ...process.env, DATABASE_URL: t.url, PGAPPNAME: appName },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<string>((resolve) => proc.once("exit", (code, signal) => resolve(`${code ?? signal}`)));
  try {
    // The worker is waiting for the migration lock: it has connected, and no worker has started.
    await waitFor("the worker to wait in migrate", async () => {
      const { rows } = await t.pool.query(
        "select 1 from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
        [appName],
      );
      return rows.length > 0;
    });
    process.kill(-(proc.pid as number), "SIGINT");
    // Give the signal time to land (a default handler kills at once), then let start-up go on.
    await waitFor(
      "the signal to be handled",
      async () => out.includes("stopping:") || proc.exitCode !== null || proc.signalCode !== null,
    );
    await release();
    const code = await exited;
    expect(out).toContain("stopping: waiting up to 10 s for running jobs");
    expect(["0", "SIGINT"]).toContain(code);
    expect(await t.count("job", "queue = 'ctrlc-early' and state = 'active'")).toBe(0);
  } finally {
    await release();
    try {
      process.kill(-(proc.pid as number), "SIGKILL");
    } catch {
      // the whole group is gone
    }
  }
});

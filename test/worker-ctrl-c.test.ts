// Ctrl-C in a terminal sends SIGINT to the whole foreground process group (npm, tsx, node), so the
// worker gets the signal more than once. `npm run worker` must still drain as documented: running
// jobs finish (or are released), none is left `active` for another worker to reap.
import { spawn } from "node:child_process";
import path from "node:path";
import { beforeAll, expect, test } from "vitest";
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

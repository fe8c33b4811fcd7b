// `npm run worker`: it works the demo's queues and no others (a test job from the console stays
// put), and its failures are few and bounded: the demo's handlers and trickle, run on a real worker
// with a seeded random source, fail 1 job in 40 for good, and never more than the trickle's cap.
import { beforeAll, expect, test } from "vitest";
import { Worker } from "../lib/enqueue";
import { DEMO_QUEUES, demoHandlers, type Sleep, seededRandom, Trickle } from "../scripts/demo-jobs";
import { runScript, setupQueueTests, waitFor } from "./helpers";

const t = setupQueueTests({ max: 24 });
beforeAll(() => t.ready());

test("`npm run worker` works the demo's queues, says which at start, and leaves a console test job in `default` alone", async () => {
  const q = t.queue();
  const testJob = await q.enqueue("console.test", { hello: "world" }, { idempotency: { key: "tester-key" } });
  const other = await q.enqueue("console.test", {}, { queue: "my-own-queue" });
  const demoJob = await q.enqueue("report.generate", { report: "sales" }, { queue: "reports" });
  const { proc, output, exited } = runScript(["scripts/worker.ts", "--no-traffic", "--seed=7"], {
    ...process.env,
    DATABASE_URL: t.url,
  });
  try {
    await waitFor(
      "the demo job to succeed",
      async () => (await t.count("job", `id = '${demoJob}' and state = 'succeeded'`)) === 1,
      60_000,
      100,
    );
    expect(output()).toMatch(
      new RegExp(`works the demo's queues ${DEMO_QUEUES.join(", ")} \\(no others\\), concurrency 4, seed 7`),
    );
    // A second discovery round would have come 5 s after the start: wait past it.
    await new Promise((r) => setTimeout(r, 6000));
    const states = await t.sql<{ id: string; state: string }>(
      "select id::text, state::text from workhorse.job where id = any($1::uuid[]) order by id",
      [[testJob, other]],
    );
    expect(states.map((s) => s.state)).toEqual(["ready", "ready"]);
    expect(output()).not.toMatch(/console\.test/);
  } finally {
    try {
      process.kill(-(proc.pid as number), "SIGINT");
    } catch {}
    await exited;
  }
}, 90_000);

test("the trickle caps the jobs that fail for good at maxDoomed, however long it runs", () => {
  const trickle = new Trickle();
  const doomed: string[] = [];
  for (let i = 0; i < 10_000; i++) for (const j of trickle.next()) if (j.doom) doomed.push(j.doom);
  expect(doomed).toHaveLength(20);
  expect(trickle.doomed).toBe(20);
  expect(new Set(doomed)).toEqual(new Set(["attempts_exhausted", "execution_timed_out", "deadline_exceeded"]));
});

test("on a real worker, 400 trickle jobs with the demo's handlers: 2.5 % fail for good (each kind), the rest succeed", async () => {
  const q = t.queue();
  const trickle = new Trickle({ retryDelayMs: 20 });
  const jobs = Array.from({ length: 200 }, () => trickle.next()).flat();
  expect(jobs).toHaveLength(400);
  await q.enqueueMany(jobs.map((j) => ({ type: j.type, payload: j.payload, options: j.options })));
  // Durations are not waited for; a hung handler still waits for its signal (timeout, deadline).
  const noWait: Sleep = (_ms, signal) => (signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve());
  let transientFailures = 0;
  const worker = new Worker({
    pool: t.pool,
    queues: ["webhooks", "email"],
    handlers: demoHandlers({ random: seededRandom(42), sleep: noWait }),
    concurrency: 16,
    pollIntervalMs: 100,
    onEvent: (e) => {
      if (e.kind === "retry_scheduled") transientFailures++;
    },
    onError: () => {},
  });
  await worker.start();
  try {
    await waitFor(
      "every trickle job to finish",
      async () =>
        (await t.count("job", "queue in ('webhooks', 'email') and state in ('scheduled', 'ready', 'active')")) === 0,
      60_000,
      100,
    );
  } finally {
    await worker.stop({ graceMs: 0 });
  }
  const byState = await t.sql<{ state: string; n: number }>(
    "select state::text, count(*)::int as n from workhorse.job where queue in ('webhooks', 'email') group by 1 order by 1",
  );
  expect(byState).toEqual([
    { state: "failed", n: 10 },
    { state: "succeeded", n: 390 },
  ]);
  expect(trickle.doomed).toBe(10);
  const failed = await t.sql<{ type: string; error: string; doom: string }>(
    "select type, last_error ->> 'name' as error, payload ->> 'doom' as doom from workhorse.job where state = 'failed' order by 1, 2",
  );
  expect(failed.every((f) => f.doom === "gone" || f.doom === "hang")).toBe(true);
  const kinds = new Set(failed.map((f) => `${f.type} ${f.error}`));
  expect(kinds.size).toBe(3);
  // Transient failures happened (a few percent of attempts) and were retried to success.
  expect(transientFailures).toBeGreaterThan(0);
  expect(transientFailures).toBeLessThan(40);
}, 90_000);

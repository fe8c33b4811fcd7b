import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type HandlerContext, Worker } from "../lib/enqueue";
import { setupQueueTests, waitFor as waitUntil } from "./helpers";

const t = setupQueueTests();
let child: ChildProcess | null = null;
let survivor: Worker | null = null;
/** The shared poll with this file's patience (its waits span process starts and lease expiries). */
const waitFor = (what: string, fn: () => Promise<boolean>) => waitUntil(what, fn, 30_000, 25);

beforeAll(async () => {
  await t.ready();
  await t.sql(`create table crash_effect (job_id uuid, stage text, attempt integer, worker text,
                 at timestamptz default clock_timestamp())`);
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await survivor?.stop({ graceMs: 0 });
});

test("a worker killed mid-handler: after its lease the other worker runs attempt 2 and skips the checkpointed stage", async () => {
  const q = t.queue();
  const id = await q.enqueue(
    "order.ship",
    { orderId: "O-9" },
    { queue: "crash", retryPolicy: { type: "fixed", delayMs: 0 } },
  );

  const proc = spawn(
    process.execPath,
    ["--import", "tsx", path.join(import.meta.dirname, "worker-crash-child.ts"), t.url],
    {
      cwd: path.join(import.meta.dirname, ".."),
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  child = proc;
  let out = "";
  proc.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  await waitFor("the doomed worker to checkpoint its first stage", async () => out.includes("checkpointed"));
  const held = await t.sql<{ lease_owner: string; lease_expires_at: Date; state: string; attempt: number }>(
    "select lease_owner, lease_expires_at, state, attempt from workhorse.job where id = $1",
    [id],
  );
  expect(held[0]).toMatchObject({ lease_owner: expect.stringMatching(/^doomed-worker~/), state: "active", attempt: 1 });
  // Its heartbeats are alive: the lease moves forward while the handler hangs.
  const firstExpiry = held[0]?.lease_expires_at.getTime() as number;
  await waitFor("a heartbeat", async () => {
    const [row] = await t.sql<{ e: Date }>("select lease_expires_at as e from workhorse.job where id = $1", [id]);
    return (row?.e.getTime() ?? 0) > firstExpiry;
  });

  const killedAt = Date.now();
  proc.kill("SIGKILL");
  await new Promise((r) => proc.once("exit", r));

  const stages: string[] = [];
  survivor = new Worker({
    pool: t.pool,
    queues: ["crash"],
    workerId: "survivor",
    leaseMs: 1500,
    pollIntervalMs: 50,
    reapIntervalMs: 0,
    onError: () => {},
    handlers: {
      "order.ship": async (_p: unknown, ctx: HandlerContext) => {
        const charge = await ctx.checkpoint("charge", async () => {
          stages.push("charge");
          await t.sql("insert into crash_effect (job_id, stage, attempt, worker) values ($1, 'charge', $2, $3)", [
            ctx.jobId,
            ctx.attempt,
            ctx.workerId,
          ]);
          return { chargeId: "never" };
        });
        stages.push("ship");
        await t.sql("insert into crash_effect (job_id, stage, attempt, worker) values ($1, 'ship', $2, $3)", [
          ctx.jobId,
          ctx.attempt,
          ctx.workerId,
        ]);
        return { charge, shipped: true, attempt: ctx.attempt };
      },
    },
  });
  await survivor.start();
  await waitFor("the job to succeed on the survivor", async () => {
    const [row] = await t.sql<{ state: string }>("select state from workhorse.job where id = $1", [id]);
    return row?.state === "succeeded";
  });

  const [job] = await t.sql<{ attempt: number; lease_owner: string; result: unknown }>(
    "select attempt, lease_owner, result from workhorse.job where id = $1",
    [id],
  );
  expect(job).toEqual({
    attempt: 2,
    lease_owner: expect.stringMatching(/^survivor~/),
    result: { charge: { chargeId: `ch_${id.slice(-6)}` }, shipped: true, attempt: 2 },
  });
  expect(stages).toEqual(["ship"]);
  const effects = await t.sql("select stage, attempt, worker from crash_effect where job_id = $1 order by at", [id]);
  expect(effects).toEqual([
    { stage: "charge", attempt: 1, worker: "doomed-worker" },
    { stage: "ship", attempt: 2, worker: "survivor" },
  ]);
  const events = await t.sql<{ kind: string; data: Record<string, unknown> }>(
    "select kind, data from workhorse.job_timeline where job_id = $1 order by seq",
    [id],
  );
  expect(events.map((e) => e.kind)).toEqual([
    "enqueued",
    "claimed",
    "checkpoint_saved",
    "lease_expired",
    "claimed",
    "succeeded",
  ]);
  expect(events[3]?.data).toMatchObject({ attempt: 1, worker: held[0]?.lease_owner });
  expect(events[4]?.data).toMatchObject({ attempt: 2, worker: job?.lease_owner });
  // Reclaimed only once the lease ran out, never while it was still held.
  const [expiredEvent] = await t.sql<{ at: Date; lapsed: string }>(
    "select at, data ->> 'leaseExpiresAt' as lapsed from workhorse.job_event where job_id = $1 and kind = 'lease_expired'",
    [id],
  );
  expect(expiredEvent?.at.getTime()).toBeGreaterThan(new Date(expiredEvent?.lapsed as string).getTime());
  expect(new Date(expiredEvent?.lapsed as string).getTime()).toBeGreaterThan(killedAt - 1500);
});

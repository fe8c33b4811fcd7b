// The console's Workers page read model (lib/console/reads/workers.ts) against real PostgreSQL: every
// running Worker keeps a heartbeat row (lib/worker/check-in.ts), idle or busy; gone ones
// age out through maintenance.
import { beforeAll, describe, expect, test, vi } from "vitest";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

vi.mock("server-only", () => ({}));

const { listWorkers } = await import("@/lib/console/reads/workers");

const t = setupQueueTests();
beforeAll(() => t.ready());
const startWorker = workerStarter(t.pool, { pollIntervalMs: 25, reapIntervalMs: 0, leaseMs: 2000 });

async function worker(id: string) {
  return (await listWorkers(t.pool)).workers.find((w) => w.worker === id);
}

describe("workers page from heartbeat rows", () => {
  test("an idle worker is listed with its queues, types and concurrency; busy with the job in hand; removed when it stops", async () => {
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const w = await startWorker({
      workerId: "wk-idle-busy",
      queues: ["wk-a", "wk-b"],
      concurrency: 3,
      // Long enough that a check-in delayed by a loaded machine never reads as three missed ones.
      heartbeatIntervalMs: 1000,
      handlers: { "wk.block": () => gate },
    });
    const idle = await waitFor("the idle check-in", () => worker("wk-idle-busy"));
    expect(idle).toMatchObject({
      state: "idle",
      queues: ["wk-a", "wk-b"],
      types: ["wk.block"],
      concurrency: 3,
      running: 0,
      held: 0,
      jobIds: [],
      intervalMs: 1000,
      pid: process.pid,
    });
    expect(Date.parse(idle.checkedAt)).toBeGreaterThanOrEqual(Date.parse(idle.startedAt) - 1000);

    const id = await t.queue().enqueue("wk.block", {}, { queue: "wk-b" });
    const busy = await waitFor("the busy check-in", async () => {
      const r = await worker("wk-idle-busy");
      return r?.state === "busy" ? r : null;
    });
    expect(busy).toMatchObject({ running: 1, held: 1, jobIds: [id] });
    expect(busy.startedAt).toBe(idle.startedAt);

    release();
    await waitFor("idle again", async () => (await worker("wk-idle-busy"))?.state === "idle");
    await w.stop();
    expect(await worker("wk-idle-busy")).toBeUndefined();
    expect(await t.count("worker_heartbeat", "worker_id = 'wk-idle-busy'")).toBe(0);
  });

  test("a worker that missed three check-ins shows as gone, after the running ones; maintenance deletes it after the retention", async () => {
    const w = await startWorker({ workerId: "wk-alive", heartbeatIntervalMs: 1000, handlers: { "wk.x": () => null } });
    await waitFor("the check-in", () => worker("wk-alive"));
    const row = (id: string, checkedSecsAgo: number) =>
      t.sql(
        `insert into workhorse.worker_heartbeat
                (worker_id, host, pid, queues, concurrency, running, held, interval_ms, started_at, checked_at)
         values ($1, 'h', 1, '{default}', 1, 0, 0, 10000, now() - interval '1 hour',
                 now() - $2::int * interval '1 second')`,
        [id, checkedSecsAgo],
      );
    await row("wk-late", 25); // two intervals missed: still running
    await row("wk-gone", 31); // three missed: gone
    await row("wk-long-gone", 31 + 15 * 60); // gone for longer than the retention
    const listed = (await listWorkers(t.pool)).workers.filter((x) => x.worker.startsWith("wk-"));
    expect(listed.map((x) => [x.worker, x.state])).toEqual([
      ["wk-alive", "idle"],
      ["wk-late", "idle"],
      ["wk-gone", "gone"],
      ["wk-long-gone", "gone"],
    ]);

    const m = await t.queue().runMaintenance();
    expect(m.goneWorkersDeleted).toBe(1);
    const left = (await listWorkers(t.pool)).workers.filter((x) => x.worker.startsWith("wk-"));
    expect(left.map((x) => x.worker)).toEqual(["wk-alive", "wk-late", "wk-gone"]);
    expect(await t.sql("select removed from workhorse.maintenance_run where task = 'prune_gone_workers'")).toEqual([
      { removed: "1" },
    ]);
    await w.stop();
  });
});

// Clearing dead letters (queue.deleteFailedJobs, workhorse.delete_failed_jobs) against real
// PostgreSQL, with jobs that really failed under a worker.
import { beforeAll, describe, expect, test } from "vitest";
import { EnqueueValidationError } from "../lib/enqueue";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const startWorker = workerStarter(t.pool, { pollIntervalMs: 25, reapIntervalMs: 0, leaseMs: 1500 });
const MISSING = "01900000-0000-7000-8000-000000000000";

async function failedJobs(queue: string, n: number, key?: string): Promise<string[]> {
  const q = t.queue();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const idem = key ? { idempotency: { key: `${key}-${i}`, scope: "orders" } } : {};
    ids.push(await q.enqueue("always.fails", { i }, { queue, maxAttempts: 1, ...idem }));
  }
  const w = await startWorker({
    queues: [queue],
    concurrency: 4,
    handlers: {
      "always.fails": () => {
        throw new TypeError("card declined");
      },
    },
  });
  for (const id of ids) {
    await waitFor(`job ${id} failed`, async () => (await t.count("job", `id = '${id}' and state = 'failed'`)) === 1);
  }
  await w.stop({ graceMs: 0 });
  return ids;
}

async function audits() {
  return t.sql<{ actor: string; target: string; reason: string; result: Record<string, unknown> }>(
    "select actor, target, reason, result from workhorse.operator_audit where action = 'delete_failed_jobs' order by at",
  );
}

describe("deleteFailedJobs", () => {
  test("deletes the failed jobs of a selection with their events, checkpoints and redrive requests; other jobs are counted, not touched; one audit row", async () => {
    const q = t.queue();
    const [a, b, c] = (await failedJobs("dl1", 3)) as [string, string, string];
    await q.redrive({ jobIds: [c], requestId: "r1", requestedBy: "bob", reason: "try again" });
    const pending = await q.enqueue("x", {}, { queue: "dl1", runAt: new Date(Date.now() + 3_600_000) });
    expect(await t.count("job_event", `job_id in ('${a}', '${b}')`)).toBeGreaterThan(0);
    await t.sql("insert into workhorse.job_checkpoint (job_id, name, attempt, value) values ($1, 'page', 1, '3')", [a]);

    const r = await q.deleteFailedJobs(
      { jobIds: [a, b, c, pending, MISSING] },
      { actor: "alice@ops", reason: "provider outage, customers refunded" },
    );
    expect(r).toEqual({
      deleted: 3,
      releasedBindings: 0,
      keptOwningLiveKey: [],
      unchanged: { scheduled: 1, missing: 1 },
    });
    expect(await t.count("job", `id in ('${a}', '${b}', '${c}')`)).toBe(0);
    expect(await t.count("job_event", `job_id in ('${a}', '${b}', '${c}')`)).toBe(0);
    expect(await t.count("redrive_request", `source_job_id = '${c}'`)).toBe(0);
    expect(await t.count("job_checkpoint", `job_id = '${a}'`)).toBe(0);
    expect(await t.count("job", `id = '${pending}' and state = 'scheduled'`)).toBe(1);
    expect((await audits()).at(-1)).toEqual({
      actor: "alice@ops",
      target: "jobs:5",
      reason: "provider outage, customers refunded",
      result: {
        status: "ok",
        requested: 5,
        deleted: 3,
        releasedBindings: 0,
        keptOwningLiveKey: 0,
        releaseKeys: false,
        unchanged: { scheduled: 1, missing: 1 },
      },
    });
  });

  test("a failed job that owns a live key is kept and named unless the operator asks to release its key", async () => {
    const q = t.queue();
    const [keyed] = (await failedJobs("dl2", 1, "order-42")) as [string];
    const [plain] = (await failedJobs("dl2", 1)) as [string];
    expect((await q.findBinding({ key: "order-42-0", scope: "orders" }))?.jobId).toBe(keyed);

    const kept = await q.deleteFailedJobs({ jobIds: [keyed, plain] }, { actor: "alice", reason: "cleanup" });
    expect(kept).toEqual({ deleted: 1, releasedBindings: 0, keptOwningLiveKey: [keyed], unchanged: {} });
    expect(await t.count("job", `id = '${keyed}'`)).toBe(1);
    // The key still answers with its job: a replay of the request returns it.
    const replay = await q.enqueueWithResult(
      "always.fails",
      { i: 0 },
      { queue: "dl2", maxAttempts: 1, idempotency: { key: "order-42-0", scope: "orders" } },
    );
    expect(replay).toMatchObject({ jobId: keyed, outcome: "replayed" });

    const released = await q.deleteFailedJobs(
      { jobIds: [keyed] },
      { actor: "alice", reason: "customer asked to retry from scratch", releaseKeys: true },
    );
    expect(released).toEqual({ deleted: 1, releasedBindings: 1, keptOwningLiveKey: [], unchanged: {} });
    expect(await t.count("job", `id = '${keyed}'`)).toBe(0);
    expect(await q.findBinding({ key: "order-42-0", scope: "orders" })).toBeNull();
    expect((await audits()).at(-1)).toMatchObject({
      target: `job:${keyed}`,
      result: { deleted: 1, releasedBindings: 1, keptOwningLiveKey: 0, releaseKeys: true },
    });
    // The key is free: the same request is a new job now.
    const again = await q.enqueueWithResult(
      "always.fails",
      { i: 0 },
      { idempotency: { key: "order-42-0", scope: "orders" } },
    );
    expect(again.outcome).toBe("accepted");
  });

  test("bad input is refused before anything is written", async () => {
    const q = t.queue();
    const before = (await audits()).length;
    await expect(q.deleteFailedJobs({ jobIds: [] }, { actor: "a", reason: "r" })).rejects.toBeInstanceOf(
      EnqueueValidationError,
    );
    await expect(q.deleteFailedJobs({ jobIds: [MISSING] }, { actor: "a", reason: "" })).rejects.toBeInstanceOf(
      EnqueueValidationError,
    );
    await expect(
      q.deleteFailedJobs({ jobIds: [MISSING] }, { actor: "a", reason: "r", releaseKeys: "yes" as unknown as boolean }),
    ).rejects.toThrow("releaseKeys: must be true or false");
    expect((await audits()).length).toBe(before);
  });
});

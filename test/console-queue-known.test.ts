// Whether /queues/<name> names a known queue (lib/console/open-queue.ts, queueKnown in
// lib/enqueue/store/console-status.ts) against real PostgreSQL: a queue is known when it holds a
// job in any state or is paused; a few index probes, then the console's shared state counts.
import { beforeAll, describe, expect, test, vi } from "vitest";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { queueKnown, queuePath, queuePathMissing } = await import("@/lib/console/open-queue");
const { invalidateCounts } = await import("@/lib/console/overview");
const { queueProbed } = await import("@/lib/enqueue/store/console-status");

const t = setupQueueTests();
beforeAll(() => t.ready());

describe("known queues", () => {
  test("a queue is known with a job in any state, or paused without jobs; never-used names are not", async () => {
    const q = t.queue();
    for (const state of ["ready", "scheduled", "active", "succeeded", "failed", "canceled", "purged"]) {
      const id = await q.enqueue("t", {}, { queue: `qk-${state}` });
      await t.sql("update workhorse.job set state = $2 where id = $1", [id, state]);
      invalidateCounts(t.pool); // the counts are shared for 15 s
      expect(await queueKnown(t.pool, `qk-${state}`), state).toBe(true);
      // Running and succeeded jobs are found by the counts, every other state by an index probe.
      expect(await queueProbed(t.pool, `qk-${state}`), state).toBe(!["active", "succeeded"].includes(state));
    }
    expect(await queueKnown(t.pool, "qk-never")).toBe(false);
    await q.pauseQueue("qk-paused-empty", { actor: "test", reason: "known without jobs" });
    expect(await queueKnown(t.pool, "qk-paused-empty")).toBe(true);
    // A prefix of a known name is a different queue.
    expect(await queueKnown(t.pool, "qk-")).toBe(false);
  });

  test("the path: an invalid or undecodable name and an unknown queue are missing; other paths are not asked", async () => {
    const q = t.queue();
    await q.enqueue("t", {}, { queue: "qk path" });
    expect(queuePath(`/queues/${"q".repeat(500)}`)).toEqual({ kind: "invalid" });
    expect(queuePath("/queues/%E0%A4%A")).toEqual({ kind: "invalid" });
    expect(queuePath("/queues/a%01b")).toEqual({ kind: "invalid" });
    expect(queuePath("/queues/qk%20path?x=1")).toEqual({ kind: "name", queue: "qk path" });
    // Exactly as enqueued: nothing trimmed; 128 characters counted as the core counts them (code points).
    expect(queuePath("/queues/orders%20")).toEqual({ kind: "name", queue: "orders " });
    expect(queuePath("/queues/%20orders")).toEqual({ kind: "name", queue: " orders" });
    expect(queuePath("/queues/orders%0A")).toEqual({ kind: "invalid" });
    expect(queuePath(`/queues/${encodeURIComponent("🐴".repeat(128))}`)).toEqual({
      kind: "name",
      queue: "🐴".repeat(128),
    });
    expect(queuePath("/queues")).toBeNull();
    expect(queuePath("/queues/a/b")).toBeNull();
    expect(await queuePathMissing(t.pool, `/queues/${"q".repeat(500)}`)).toBe(true);
    expect(await queuePathMissing(t.pool, "/queues/%E0%A4%A")).toBe(true);
    expect(await queuePathMissing(t.pool, "/queues/no-such-queue-xyz")).toBe(true);
    expect(await queuePathMissing(t.pool, "/queues/qk%20path")).toBe(false);
    expect(await queuePathMissing(t.pool, "/queues")).toBe(false);
    expect(await queuePathMissing(t.pool, "/jobs")).toBe(false);
  });
});

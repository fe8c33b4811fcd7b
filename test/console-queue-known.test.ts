// Whether /queues/<name> names a known queue (lib/console/reads/open-queue.ts, queueKnown in
// lib/store/console/status.ts) against real PostgreSQL: a queue is known when it holds a
// job in any state or is paused; a few index probes, then the console's shared state counts.
import { beforeAll, describe, expect, test, vi } from "vitest";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { consolePathMissing, queueKnown, queuePath, queuePathMissing } = await import("@/lib/console/reads/open-queue");
const { invalidateCounts } = await import("@/lib/console/reads/overview");
const { queueProbed } = await import("@/lib/store/console/status");

const t = setupQueueTests();
beforeAll(() => t.ready());

describe("known queues", () => {
  test("a queue is known with a job in any state, or paused without jobs; never-used names are not", async () => {
    const q = t.queue();
    for (const state of ["ready", "scheduled", "active", "succeeded", "failed", "canceled", "purged"]) {
      const id = await q.enqueue("t", {}, { queue: `qk-${state}` });
      // As a worker leaves it: a running job holds a lease, a finished one its finish time.
      await t.sql(
        "update workhorse.job set state = $2, lease_expires_at = $3::timestamptz, finished_at = $4::timestamptz where id = $1",
        [
          id,
          state,
          state === "active" ? new Date(Date.now() + 60_000) : null,
          ["succeeded", "failed", "canceled", "purged"].includes(state) ? new Date() : null,
        ],
      );
      invalidateCounts(t.pool); // the counts are shared for 15 s
      expect(await queueKnown(t.pool, `qk-${state}`), state).toBe(true);
      // Found without the counts (which may be 15 s old): a running job among the running ones, a
      // succeeded one among the newest finished (a new queue whose first job just ran).
      expect(await queueProbed(t.pool, `qk-${state}`), state).toBe(true);
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

  test("with PostgreSQL unreachable the layout's check does not throw: a page shows its own load error, not a 500; an invalid name is still a 404", async () => {
    const net = await import("node:net");
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer();
      srv.listen(0, "127.0.0.1", () => {
        const p = (srv.address() as import("node:net").AddressInfo).port;
        srv.close(() => resolve(p)); // nothing listens there now
      });
    });
    const pg = (await import("pg")).default;
    const down = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`, max: 1 });
    try {
      expect(await consolePathMissing(down, "/queues/orders")).toBe(false);
      expect(await consolePathMissing(down, "/jobs/0190a3b2-0000-7000-8000-000000000000")).toBe(false);
      expect(await consolePathMissing(down, `/queues/${"q".repeat(500)}`)).toBe(true);
      expect(await consolePathMissing(down, "/jobs/not-an-id")).toBe(true);
    } finally {
      await down.end();
    }
  });
});

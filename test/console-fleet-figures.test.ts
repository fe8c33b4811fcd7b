// The fleet page's figures of one database (lib/store/console/fleet.ts): bounded counts that
// say when they stopped at the cap, the oldest due job over every queue (a loose index scan), and the
// last hour's replays and conflicts. Runs on one node and, in CI's Citus pass (test/console-*), on
// the distributed layout.
import { beforeAll, expect, test } from "vitest";
import { fleetFigures } from "../lib/store/console/fleet";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

test("counts stop at the cap and say so; the oldest due job is found over every queue; future jobs are not ready", async () => {
  const q = t.queue();
  expect(await fleetFigures(t.pool, 3)).toEqual({
    ready: 0,
    ready_capped: false,
    oldest_ready_seconds: 0,
    dead_letters: 0,
    dead_letters_capped: false,
    replays: 0,
    conflicts: 0,
    workers: 0,
  });
  const now = Date.now();
  // Due 10 minutes ago in queue "b", 1 minute ago in "a", 1 hour from now in "c" (not ready).
  await q.enqueue("t", {}, { queue: "a", runAt: new Date(now - 60_000) });
  await q.enqueue("t", {}, { queue: "b", runAt: new Date(now - 600_000) });
  await q.enqueue("t", {}, { queue: "c", runAt: new Date(now + 3_600_000) });
  const three = await fleetFigures(t.pool, 3);
  expect(three).toMatchObject({ ready: 2, ready_capped: false });
  expect(three.oldest_ready_seconds).toBeGreaterThanOrEqual(600);
  expect(three.oldest_ready_seconds).toBeLessThan(700);
  await q.enqueue("t", {}, { queue: "a" });
  expect(await fleetFigures(t.pool, 3)).toMatchObject({ ready: 3, ready_capped: false });
  await q.enqueue("t", {}, { queue: "d" });
  expect(await fleetFigures(t.pool, 3)).toMatchObject({ ready: 3, ready_capped: true });
  expect(await fleetFigures(t.pool, 10)).toMatchObject({ ready: 4, ready_capped: false });
});

test("dead letters stop at the cap; the last hour's replays and conflicts are counted", async () => {
  const q = t.queue();
  for (let i = 0; i < 3; i++) {
    const id = await q.enqueue("t", {}, { queue: "dead", maxAttempts: 1 });
    await t.sql("update workhorse.job set state = 'failed', finished_at = now() where id = $1", [id]);
  }
  expect(await fleetFigures(t.pool, 2)).toMatchObject({ dead_letters: 2, dead_letters_capped: true });
  expect(await fleetFigures(t.pool, 3)).toMatchObject({ dead_letters: 3, dead_letters_capped: false });
  const producer = t.queue();
  const key = { key: "fleet-k" };
  await producer.enqueue("t", { n: 1 }, { queue: "obs", idempotency: key });
  await producer.enqueue("t", { n: 1 }, { queue: "obs", idempotency: key });
  await producer.enqueue("t", { n: 2 }, { queue: "obs", idempotency: key }).catch(() => {});
  await producer.close(); // flushes the observation log
  expect(await fleetFigures(t.pool, 10)).toMatchObject({ replays: 1, conflicts: 1 });
});

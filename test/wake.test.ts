// Wake-ups after commit (docs/enqueue.md, "Wake-ups"): every accepted job's queue is named by a
// NOTIFY sent after its commit, and a burst of accepts costs PostgreSQL at most one NOTIFY
// transaction per WAKE_MIN_INTERVAL_MS instead of one per accept.
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { WAKE_MIN_INTERVAL_MS } from "../lib/enqueue/queue-context";
import { setupQueueTests, waitFor } from "./helpers";

const t = setupQueueTests();
const listener = new pg.Client({ connectionString: t.url });
const heard: Array<{ queue: string; at: number }> = [];

beforeAll(async () => {
  await t.ready();
  await listener.connect();
  listener.on("notification", (n) => heard.push({ queue: n.payload ?? "", at: performance.now() }));
  await listener.query("listen workhorse_jobs");
});
afterAll(() => listener.end());

test("a burst of accepts from 8 callers sends at most one NOTIFY per interval, and each queue is named after its last commit", async () => {
  const queue = t.queue();
  const CALLS = 400;
  const queues = ["wake-a", "wake-b", "wake-c"];
  const lastReturn = new Map<string, number>();
  heard.length = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < CALLS) {
        const i = next++;
        const q = queues[i % queues.length] as string;
        const r = await queue.enqueueWithResult("t", { i }, { queue: q, idempotency: { key: `burst-${i}` } });
        expect(r.outcome).toBe("accepted");
        lastReturn.set(q, performance.now());
      }
    }),
  );
  await queue.close(); // waits for the wake-up still pending
  const elapsed = performance.now() - started;
  await waitFor(
    "every queue named by a notification heard after its last accept returned",
    async () => queues.every((q) => heard.some((h) => h.queue === q && h.at >= (lastReturn.get(q) ?? 0))),
    5000,
  );
  // One NOTIFY statement names a queue at most once, so a queue's notifications count the
  // statements that named it: at most one per interval.
  const most = Math.ceil(elapsed / WAKE_MIN_INTERVAL_MS) + 1;
  for (const q of queues) expect(heard.filter((h) => h.queue === q).length).toBeLessThanOrEqual(most);
});

test("the first accept after a quiet spell wakes at once; replays wake nobody", async () => {
  const queue = t.queue();
  heard.length = 0;
  await queue.enqueue("t", { k: 1 }, { queue: "wake-quiet", idempotency: { key: "quiet-1" } });
  await waitFor("the wake-up of the first accept", async () => heard.some((h) => h.queue === "wake-quiet"), 5000);
  heard.length = 0;
  await new Promise((r) => setTimeout(r, WAKE_MIN_INTERVAL_MS * 3));
  await queue.enqueue("t", { k: 1 }, { queue: "wake-quiet", idempotency: { key: "quiet-1" } });
  await queue.close();
  await new Promise((r) => setTimeout(r, WAKE_MIN_INTERVAL_MS * 3));
  expect(heard).toEqual([]);
});

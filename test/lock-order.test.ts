// One lock order (docs/decisions.md, "Lock order"): every function that locks a job and its key's
// binding locks the job first. A debounce request used to lock the binding first, and deadlocked
// (40P01, after deadlock_timeout) with a purge or a redrive of its key's job, which lock the job
// and then release or move the binding. Operator actions on a selection lock their jobs in id order
// (a bulk purge updated its jobs in plan order and deadlocked with a bulk cancel of the same jobs).
// The Queue's retry is off here, so a deadlock would surface.
import { beforeAll, expect, test } from "vitest";
import { WorkhorseDatabaseError } from "../lib/enqueue";
import { sqlStateOf } from "../lib/enqueue/errors";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests({ max: 12 });
beforeAll(() => t.ready());

const ctx = { actor: "test", reason: "lock order" };
const RACES = 300;

/** The SQLSTATE of an error from the Queue (its driver cause), if any. */
function stateOf(err: unknown): string | undefined {
  return sqlStateOf(err instanceof WorkhorseDatabaseError ? err.cause : err) ?? sqlStateOf(err);
}

/** Runs `race(i)` `count` times, one after another; stops at the first deadlock. Returns the failures. */
async function races(
  race: (i: number) => Promise<unknown[]>,
  count = RACES,
): Promise<{ deadlocks: string[]; other: unknown[] }> {
  const deadlocks: string[] = [];
  const other: unknown[] = [];
  for (let i = 0; i < count && deadlocks.length === 0; i++) {
    const settled = await Promise.allSettled(await race(i));
    for (const s of settled) {
      if (s.status === "fulfilled") continue;
      if (stateOf(s.reason) === "40P01") {
        const cause = (s.reason as WorkhorseDatabaseError).cause as { detail?: string; where?: string } | undefined;
        deadlocks.push(`race ${i}: ${cause?.detail ?? ""} ${cause?.where ?? ""}`);
      } else other.push(s.reason);
    }
  }
  return { deadlocks, other };
}

test("a purge racing three debounce requests on its key never deadlocks", async () => {
  const q = t.queue({ retry: false });
  const scope = `purge-${Date.now()}`;
  const res = await races(async (i) => {
    const key = { key: `k${i}`, scope, windowMs: 60_000 };
    const jobId = await q.enqueue("t", { rev: 0 }, { debounce: key });
    return [q.purge({ jobId }, ctx), ...[1, 2, 3].map((rev) => q.enqueueWithResult("t", { rev }, { debounce: key }))];
  });
  expect(res.deadlocks).toEqual([]);
  expect(res.other).toEqual([]);
}, 60_000);

test("a redrive racing three debounce requests on its key never deadlocks", async () => {
  const q = t.queue({ retry: false });
  const scope = `redrive-${Date.now()}`;
  const res = await races(async (i) => {
    const key = { key: `k${i}`, scope, windowMs: 60_000 };
    const jobId = await q.enqueue("t", { rev: 0 }, { debounce: key });
    // Failed while its debounce window is still open: the binding is live, the job not pending.
    await t.sql(
      `update workhorse.job set state = 'failed', attempt = 1, started_at = now(), finished_at = now(),
              last_error = '{"name": "Error", "message": "boom"}'::jsonb where id = $1`,
      [jobId],
    );
    return [
      q.redrive({ jobIds: [jobId], requestId: `r${i}`, requestedBy: "bob", reason: "again" }),
      ...[1, 2, 3].map((rev) => q.enqueueWithResult("t", { rev }, { debounce: key })),
    ];
  });
  expect(res.deadlocks).toEqual([]);
  expect(res.other).toEqual([]);
}, 60_000);

test("bulk cancels, purges and dead-letter deletes over the same jobs in opposite orders never deadlock, and each job ends once", async () => {
  const q = t.queue({ retry: false });
  const scope = `bulk-${Date.now()}`;
  const outcomes: number[] = [];
  const res = await races(async (i) => {
    const ids = await q.enqueueMany(
      Array.from({ length: 30 }, (_, k) => ({
        type: "t",
        payload: { k },
        options: {
          idempotency:
            k % 3 ? { key: `k${i}-${k}`, scope } : { key: `k${i}-${k}`, scope, holdUntil: "finished" as const },
        },
      })),
    );
    const reversed = [...ids].reverse();
    return [
      q.cancel({ jobIds: ids }, ctx),
      q.purgeJobs({ jobIds: reversed }, ctx),
      q.cancel({ jobIds: reversed }, ctx),
      q.deleteFailedJobs({ jobIds: ids }, { ...ctx, releaseKeys: true }),
    ].map((p, n) =>
      p.then((r) => {
        if (n < 3) outcomes.push(("canceled" in r ? r.canceled : 0) + ("purged" in r ? r.purged : 0));
        return r;
      }),
    );
  }, 40);
  expect(res.deadlocks).toEqual([]);
  expect(res.other).toEqual([]);
  // Each race ended its 30 jobs exactly once between the two cancels and the purge.
  const perRace = Array.from({ length: 40 }, (_, i) => outcomes.slice(3 * i, 3 * i + 3).reduce((a, b) => a + b, 0));
  expect(perRace).toEqual(Array(40).fill(30));
}, 120_000);

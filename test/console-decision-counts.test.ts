// The decisions /metrics counts from the database (lib/enqueue/store/decision-counts.ts), span by
// span: every outcome of another producer's traffic once, and nothing twice across spans. Runs on
// one node and, in CI's Citus pass (test/console-*), on the distributed layout.
import { beforeAll, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError } from "../lib/enqueue";
import { DecisionTally } from "../lib/enqueue/decision-counts";
import { selectDecisionCounts } from "../lib/enqueue/store/decision-counts";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

async function traffic(q: string): Promise<void> {
  const producer = t.queue();
  const key = { key: `${q}-k1` };
  await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: key });
  await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: key });
  await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: key });
  const conflict = await producer.enqueue("t", { n: 2 }, { queue: q, idempotency: key }).catch((e: unknown) => e);
  expect(conflict).toBeInstanceOf(EnqueueIdempotencyConflictError);
  await producer.enqueue("t", { n: 3 }, { queue: q });
  const outcomes = [
    await producer.enqueueWithResult("t", { v: 1 }, { queue: q, debounce: { key: `${q}-d`, windowMs: 60_000 } }),
    await producer.enqueueWithResult("t", { v: 2 }, { queue: q, debounce: { key: `${q}-d`, windowMs: 60_000 } }),
    await producer.enqueueWithResult("t", { v: 1 }, { queue: q, throttle: { key: `${q}-t`, windowMs: 60_000 } }),
    await producer.enqueueWithResult("t", { v: 1 }, { queue: q, throttle: { key: `${q}-t`, windowMs: 60_000 } }),
    await producer.enqueueWithResult("t", { v: 1 }, { queue: q, debounce: { key: `${q}-k1`, windowMs: 60_000 } }),
  ].map((r) => r.outcome);
  expect(outcomes).toEqual(["accepted", "replaced", "accepted", "coalesced", "non_replaceable"]);
  await producer.close(); // flushes the observation log
}

const EXPECTED = { accepted: 4, conflict: 1, coalesced: 1, non_replaceable: 1, replaced: 1, replayed: 2 };

test("one span counts each outcome of the traffic in it once; the next span counts none of it again", async () => {
  const first = await selectDecisionCounts(t.pool, null, 0);
  expect(first.rows).toEqual([]); // the first call only marks where counting starts
  await traffic("dc-span");
  const second = await selectDecisionCounts(t.pool, first.until, 0);
  const got = Object.fromEntries(second.rows.filter((r) => r.queue === "dc-span").map((r) => [r.outcome, r.n]));
  expect(got).toEqual(EXPECTED);
  expect(second.until.ms).toBeGreaterThan(first.until.ms);
  const third = await selectDecisionCounts(t.pool, second.until, 0);
  expect(third.rows.filter((r) => r.queue === "dc-span")).toEqual([]);
});

test("the tally adds span after span; decisions within the settle time wait for a later span", async () => {
  const tally = new DecisionTally(0);
  await tally.advance(t.pool);
  await traffic("dc-tally");
  await tally.advance(t.pool);
  await tally.advance(t.pool);
  const totals = (q: string, list = tally.list()) =>
    Object.fromEntries(list.filter((d) => d.queue === q).map((d) => [d.outcome, d.total]));
  expect(totals("dc-tally")).toEqual(EXPECTED);
  // A tally that settles for an hour has not counted any of it yet.
  const late = new DecisionTally(3_600_000);
  await late.advance(t.pool);
  await traffic("dc-late");
  await late.advance(t.pool);
  expect(totals("dc-late", late.list())).toEqual({});
});

test("the first read reaches back since the process started (here: a minute), so traffic before it is counted", async () => {
  await traffic("dc-before");
  const back = new DecisionTally(0, () => 60_000);
  await back.advance(t.pool);
  const none = new DecisionTally(0, () => 0);
  await none.advance(t.pool);
  const totals = (tally: DecisionTally) =>
    Object.fromEntries(
      tally
        .list()
        .filter((d) => d.queue === "dc-before")
        .map((d) => [d.outcome, d.total]),
    );
  expect(totals(back)).toEqual(EXPECTED);
  expect(totals(none)).toEqual({});
});

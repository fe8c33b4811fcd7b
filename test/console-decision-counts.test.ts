// The decisions /metrics counts from the database (lib/store/core/decision-counts.ts), span by
// span: every outcome of another producer's traffic once, and nothing twice across spans. Runs on
// one node and, in CI's Citus pass (test/console-*), on the distributed layout.
import { beforeAll, expect, test } from "vitest";
import { stateGaugesText } from "../lib/console/metrics/state-text";
import { EnqueueIdempotencyConflictError } from "../lib/enqueue";
import { DecisionTally } from "../lib/enqueue/decision-counts";
import { selectDecisionCounts } from "../lib/store/core/decision-counts";
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

test("key releases are counted per queue and reason, apart from the enqueue decisions, and /metrics writes them", async () => {
  const tally = new DecisionTally(0);
  await tally.advance(t.pool);
  const q = t.queue();
  const queue = "dc-released";
  const held = (key: string, holdUntil: "finished" | "started") => ({
    queue,
    idempotency: { key: `${queue}-${key}`, holdUntil },
  });
  await q.enqueue("t", { n: 1 }, held("a", "finished"));
  const canceled = await q.enqueue("t", { n: 2 }, held("b", "finished"));
  await q.enqueue("t", { n: 3 }, held("c", "started"));
  await q.cancel({ jobIds: [canceled] }, { actor: "test", reason: "test" });
  const claimed = await t.sql<{ id: string; attempt: number }>(
    "select id, attempt from workhorse.claim_jobs(array[$1], null, 'w~1', 10, 60000, false)",
    [queue],
  );
  expect(claimed).toHaveLength(2);
  for (const c of claimed) {
    await t.sql(
      "select id from workhorse.complete_jobs(array[$1::uuid], array[$2::integer], array['w~1'], array['null'::jsonb])",
      [c.id, c.attempt],
    );
  }
  await tally.advance(t.pool);
  const got = tally.releases().filter((r) => r.queue === queue);
  expect(got).toEqual([
    { queue, reason: "canceled", total: 1 },
    { queue, reason: "started", total: 1 },
    { queue, reason: "succeeded", total: 1 },
  ]);
  expect(tally.list().filter((d) => d.queue === queue)).toEqual([{ queue, outcome: "accepted", total: 3 }]);
  const text = stateGaugesText({
    readAt: new Date(0),
    queues: [],
    decisions: [],
    keyReleases: got,
    bindings: { live: 0, expired: 0, oldestExpiredAgeSeconds: 0, exact: { live: true, expired: true } },
  });
  expect(text).toContain("# TYPE workhorse_key_releases_total counter");
  expect(text).toContain(
    `workhorse_key_releases_total{messaging_system="workhorse",messaging_destination_name="${queue}",workhorse_key_release_reason="started",otel_scope_name="workhorse"} 1`,
  );
  await q.close();
});

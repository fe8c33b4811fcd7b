// Identical decisions within one flush of the observation log are one row with a count and the
// first and last times (docs/enqueue.md, "Observations"); everything that counted rows adds up the
// counts, and the console shows them.
import { beforeAll, expect, test, vi } from "vitest";
import { EnqueueIdempotencyConflictError } from "../lib/enqueue";
import { selectDecisionCounts } from "../lib/store/core/decision-counts";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));
const { listObservations } = await import("@/lib/console/reads/observation-reads");
const { parseObservationFilters } = await import("@/lib/console/reads/filters");

const t = setupQueueTests();
beforeAll(() => t.ready());

interface Row {
  outcome: string;
  key_preview: string;
  count: number;
  at: Date;
  last_at: Date | null;
}

test("40 replays of a key in one flush write one row counting 40; other requests and outcomes stay apart", async () => {
  // One flush, whenever the calls land: the timer never fires before close().
  const producer = t.queue({ observations: { flushIntervalMs: 3_600_000 } });
  const q = "obs-count";
  const start = await selectDecisionCounts(t.pool, null, 0);
  await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: { key: "alpha" } });
  await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: { key: "bravo" } });
  await Promise.all(
    Array.from({ length: 40 }, () => producer.enqueue("t", { n: 1 }, { queue: q, idempotency: { key: "alpha" } })),
  );
  for (let i = 0; i < 3; i++) await producer.enqueue("t", { n: 1 }, { queue: q, idempotency: { key: "bravo" } });
  const conflict = await producer.enqueue("t", { n: 2 }, { queue: q, idempotency: { key: "alpha" } }).catch((e) => e);
  expect(conflict).toBeInstanceOf(EnqueueIdempotencyConflictError);
  await producer.close();

  expect(producer.observationStats()).toMatchObject({ recorded: 44, written: 44, dropped: 0, batches: 1 });
  const rows = await t.sql<Row>(
    "select outcome, key_preview, count, at, last_at from workhorse.enqueue_observation where queue = $1 order by id",
    [q],
  );
  expect(rows.map((r) => [r.outcome, r.key_preview, r.count])).toEqual([
    ["replayed", "a…", 40],
    ["replayed", "b…", 3],
    ["conflict", "a…", 1],
  ]);
  const [alpha, , single] = rows as [Row, Row, Row];
  expect(alpha.last_at).not.toBeNull();
  expect((alpha.last_at as Date).getTime()).toBeGreaterThanOrEqual(alpha.at.getTime());
  expect(single.last_at).toBeNull();

  // /metrics' decision counts and the console's list add up the counts.
  const span = await selectDecisionCounts(t.pool, start.until, 0);
  const counted = Object.fromEntries(span.rows.filter((r) => r.queue === q).map((r) => [r.outcome, r.n]));
  expect(counted).toMatchObject({ replayed: 43, conflict: 1 });
  const page = await listObservations(t.pool, parseObservationFilters({ queue: q }));
  expect(page.rows.map((o) => [o.outcome, o.count, o.lastAt === null])).toEqual([
    ["conflict", 1, true],
    ["replayed", 3, false],
    ["replayed", 40, false],
  ]);
});

test("rows written one decision each (older rows, other clients) still count as one", async () => {
  const q = "obs-count-legacy";
  await t.sql(
    `insert into workhorse.enqueue_observation (at, outcome, queue, type, scope, key_preview, key_digest, key_length)
     select now(), 'replayed', $1, 't', 'default', 'k', repeat('0', 64), 1 from generate_series(1, 2)`,
    [q],
  );
  const rows = await t.sql<Row>("select count, last_at from workhorse.enqueue_observation where queue = $1", [q]);
  expect(rows).toEqual([
    { count: 1, last_at: null },
    { count: 1, last_at: null },
  ]);
  await expect(
    t.sql(
      `insert into workhorse.enqueue_observation (at, outcome, queue, type, scope, key_preview, key_digest, key_length, count)
       values (now(), 'replayed', $1, 't', 'default', 'k', repeat('0', 64), 1, 0)`,
      [q],
    ),
  ).rejects.toMatchObject({ code: "23514" });
});

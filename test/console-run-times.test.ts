// Run times (lib/console/reads/run-times.ts, lib/store/console/runtimes.ts, runtime-rollups.ts)
// against real PostgreSQL: durations as bucket histograms, the rollups maintenance keeps, the
// page's window and the dead-letter groups' error trend. Nothing here reads the wall clock: the page
// and maintenance are given their time, and the jobs their finish times relative to it (a worker
// cannot finish a job hours ago), so each scenario runs the same at every hour boundary, at
// midnight UTC and at any minute.
import { beforeAll, describe, expect, test, vi } from "vitest";
import { refreshRunTimeWindow, rollupRunTimesBatch } from "@/lib/store/core/runtime-rollups";
import { sqlOf } from "@/lib/store/layout";
import { distributedTests } from "./citus";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { runTimes, percentileOf, trendWord } = await import("@/lib/console/reads/run-times");

const t = setupQueueTests();
beforeAll(() => t.ready());

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** A Tuesday; every time below is on it or the day after, in UTC. */
const BASE = Date.parse("2026-03-10T00:00:00.000Z");
const at = (hh: number, mm = 0, ss = 0, ms = 0) => new Date(BASE + hh * HOUR + mm * MINUTE + ss * SECOND + ms);

/** `n` jobs of queue/type, enqueued through the core; their ids (stamped by `stamp`). */
async function jobs(queue: string, type: string, n: number): Promise<string[]> {
  const q = t.queue();
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
      type,
      payload: { k },
      options: { queue },
    }));
    ids.push(...(await q.enqueueMany(batch)));
  }
  return ids;
}

/** The jobs `ids` ran `ms` and finished `agoMs` before `now`, in `state`. */
async function stamp(ids: string[], now: Date, ms: number, agoMs: number, state = "succeeded") {
  await t.sql(
    `update workhorse.job set state = $2::text, attempt = 1,
            finished_at = $5::timestamptz - $4::bigint * interval '1 millisecond',
            started_at = $5::timestamptz - ($4::bigint + $3::bigint) * interval '1 millisecond',
            last_error = case when $2::text = 'failed' then '{"name": "TimeoutError", "message": "slow"}'::jsonb end
      where id = any($1::uuid[])`,
    [ids, state, ms, agoMs, now],
  );
}

/** A fresh history: no job, no rollup, no window. */
async function clean() {
  await t.sql("delete from workhorse.job");
  for (const table of ["run_time_bucket", "run_time_day", "failure_bucket", "run_time_window"]) {
    await t.sql(`delete from workhorse.${table}`);
  }
}

/** Maintenance's run-time step, run at `when`. */
const maintain = (when: Date) => rollupRunTimesBatch(sqlOf(t.pool), when);

type Page = Awaited<ReturnType<typeof runTimes>>;
const rowOf = (r: Page, queue: string, type: string) => r.rows.find((x) => x.queue === queue && x.type === type);

/**
 * The standard history, relative to `now`: rt/fast 18 ok (10 ms) 5 min ago, 2 failed (3 s) 10 min
 * ago, 5 ok (150 ms) 3 hours ago, 4 ok (700 ms) 30 hours ago; rt/slow 1 ok (2 h) 20 min ago;
 * rt/edge 3 ok 61 min ago (out of the last hour) and 2 ok 59 min ago; rt-dl/charge failed 2 10 min
 * ago, 1 3 hours ago and 4 30 hours ago (the day before).
 */
async function standard() {
  const g = {
    fastNow: await jobs("rt", "fast", 18),
    fastFailed: await jobs("rt", "fast", 2),
    fastEarlier: await jobs("rt", "fast", 5),
    fastYesterday: await jobs("rt", "fast", 4),
    slow: await jobs("rt", "slow", 1),
    edgeOut: await jobs("rt", "edge", 3),
    edgeIn: await jobs("rt", "edge", 2),
    dlNow: await jobs("rt-dl", "charge", 2),
    dlEarlier: await jobs("rt-dl", "charge", 1),
    dlBefore: await jobs("rt-dl", "charge", 4),
  };
  return async (now: Date) => {
    await stamp(g.fastNow, now, 10, 5 * MINUTE);
    await stamp(g.fastFailed, now, 3000, 10 * MINUTE, "failed");
    await stamp(g.fastEarlier, now, 150, 3 * HOUR);
    await stamp(g.fastYesterday, now, 700, 30 * HOUR);
    await stamp(g.slow, now, 2 * HOUR, 20 * MINUTE);
    await stamp(g.edgeOut, now, 10, 61 * MINUTE);
    await stamp(g.edgeIn, now, 10, 59 * MINUTE);
    await stamp(g.dlNow, now, 100, 10 * MINUTE, "failed");
    await stamp(g.dlEarlier, now, 100, 3 * HOUR, "failed");
    await stamp(g.dlBefore, now, 100, 30 * HOUR, "failed");
  };
}

/** The standard history's figures, the same at any `now` once maintenance has run within the hour. */
function expectStandard(r: Page, now: Date) {
  expect(r.now).toBe(now.toISOString());
  expect(rowOf(r, "rt", "fast")).toEqual({
    queue: "rt",
    type: "fast",
    lastHour: { runs: 20, failed: 2, p50Ms: 20, p95Ms: 5000, p95Open: false },
    lastDay: { runs: 25, failed: 2, p50Ms: 20, p95Ms: 5000, p95Open: false },
    last7Days: { runs: 29, failed: 2, p50Ms: 20, p95Ms: 5000, p95Open: false },
  });
  expect(rowOf(r, "rt", "slow")?.lastHour).toEqual({
    runs: 1,
    failed: 0,
    p50Ms: 3_600_000,
    p95Ms: 3_600_000,
    p95Open: true,
  });
  expect(rowOf(r, "rt", "edge")).toMatchObject({ lastHour: { runs: 2 }, lastDay: { runs: 5 }, last7Days: { runs: 5 } });
  expect(r.deadLetterTrend).toEqual([
    { queue: "rt-dl", type: "charge", errorName: "TimeoutError", lastHour: 2, lastDay: 3, dayBefore: 4 },
    { queue: "rt", type: "fast", errorName: "TimeoutError", lastHour: 2, lastDay: 2, dayBefore: 0 },
  ]);
  expect(r.liveSample).toBeNull();
  expect(r.trendSample).toBeNull();
  const today = Math.floor(now.getTime() / DAY) * DAY;
  expect(r.weekFrom).toBe(new Date(today - 6 * DAY).toISOString());
}

/**
 * The standard history at `now`, with maintenance last run `sinceMaintenance` before it (its
 * window for `now`'s hour: of that hour, or of the hour before for a page read before maintenance
 * runs again): the page through the window, and summed from the rollups; both exact.
 */
async function standardAt(restamp: (now: Date) => Promise<void>, now: Date, sinceMaintenance: number) {
  for (const table of ["run_time_bucket", "run_time_day", "failure_bucket", "run_time_window"]) {
    await t.sql(`delete from workhorse.${table}`);
  }
  await restamp(now);
  await maintain(new Date(now.getTime() - sinceMaintenance));
  const viaWindow = await runTimes(t.pool, undefined, { now });
  const hour = Math.floor(now.getTime() / HOUR) * HOUR;
  const maintenanceHour = Math.floor((now.getTime() - sinceMaintenance) / HOUR) * HOUR;
  // The window of the page's hour was read: rolled up to the maintenance run's hour.
  expect(viaWindow.rolledUpTo).toBe(new Date(maintenanceHour - HOUR).toISOString());
  expect(hour - maintenanceHour).toBeLessThanOrEqual(HOUR);
  expectStandard(viaWindow, now);
  const summed = await runTimes(t.pool, undefined, { now, window: false });
  expect({ ...summed, rolledUpTo: "" }).toEqual({ ...viaWindow, rolledUpTo: "" });
}

describe("run times", () => {
  test("percentiles come from bucket histograms, to the bucket's upper bound", () => {
    // width_bucket: bucket 4 is [10 ms, 20 ms), bucket 11 [2 s, 5 s), 20 at or above the last bound.
    const h = new Map([
      [4, 18],
      [11, 2],
    ]);
    expect(percentileOf(h, 50)).toEqual({ ms: 20, open: false });
    expect(percentileOf(h, 95)).toEqual({ ms: 5000, open: false });
    expect(percentileOf(new Map([[20, 1]]), 95)).toEqual({ ms: 3_600_000, open: true });
    expect(percentileOf(new Map(), 50)).toEqual({ ms: null, open: false });
  });

  test("the trend word: new only for a group with no failures the day before, else rising, falling or steady", () => {
    expect(trendWord(5, 0)).toBe("new");
    expect(trendWord(1, 0)).toBe("new");
    expect(trendWord(0, 0)).toBe("steady");
    expect(trendWord(10, 2)).toBe("rising");
    expect(trendWord(2, 1)).toBe("steady");
    expect(trendWord(0, 6)).toBe("falling");
    expect(trendWord(4, 4)).toBe("steady");
  });

  test("p50/p95 per queue and type over the last hour, day and week; beyond the last two hours from the rollup maintenance writes", async () => {
    await clean();
    const restamp = await standard();
    const now = at(15, 25);
    await restamp(now);
    let r = await runTimes(t.pool, undefined, { now });
    expect(r.rolledUpTo).toBeNull();
    // Nothing rolled up yet: the day covers only the last two hours.
    expect(rowOf(r, "rt", "fast")?.lastHour).toEqual({ runs: 20, failed: 2, p50Ms: 20, p95Ms: 5000, p95Open: false });
    expect(rowOf(r, "rt", "fast")?.lastDay.runs).toBe(20);

    expect(await maintain(now)).toBeGreaterThan(0);
    expect(await maintain(new Date(now.getTime() + MINUTE))).toBe(0); // each hour once
    r = await runTimes(t.pool, undefined, { now: new Date(now.getTime() + MINUTE) });
    expect(r.rolledUpTo).toBe(at(14).toISOString());
    expectStandard(r, new Date(now.getTime() + MINUTE));
  });

  test("the same figures at 03:05 UTC, at midnight UTC and just before it, and at an hour's last millisecond", async () => {
    await clean();
    const restamp = await standard();
    for (const now of [at(3, 5), at(24), at(23, 59, 59, 999), at(11, 59, 59, 999), at(12)]) {
      for (const since of [90 * SECOND, 59 * MINUTE, 0]) await standardAt(restamp, now, since);
    }
  });

  test("the same figures at every hour boundary of a day, whenever in the last hour maintenance ran", async () => {
    await clean();
    const restamp = await standard();
    for (let hh = 0; hh < 24; hh++) {
      for (const now of [at(hh), at(hh, 59, 59, 999)]) {
        for (const since of [90 * SECOND, 59 * MINUTE]) await standardAt(restamp, now, since);
      }
    }
  });

  test("the counts stay exact when more than 1,000 jobs finish since the last rolled hour", async () => {
    await clean();
    const orders = await jobs("orders", "order.place", 24);
    const billing = await jobs("billing", "charge", 4);
    const bulk = await jobs("bulk", "x", 1200);
    const later = await jobs("bulk", "y", 1200);
    for (const now of [at(3, 5), at(0, 0, 0, 0), at(23, 59, 59, 999)]) {
      await stamp(orders, now, 10, 10 * MINUTE);
      await stamp(billing, now, 10, 12 * MINUTE);
      await stamp(bulk, now, 5, 3 * MINUTE);
      await stamp(later, now, 5, 3 * HOUR);
      for (const table of ["run_time_bucket", "run_time_day", "failure_bucket", "run_time_window"]) {
        await t.sql(`delete from workhorse.${table}`);
      }
      await maintain(new Date(now.getTime() - MINUTE));
      const r = await runTimes(t.pool, undefined, { now });
      expect(r.liveSample).toBeNull();
      for (const [queue, type, n] of [
        ["orders", "order.place", 24],
        ["billing", "charge", 4],
        ["bulk", "x", 1200],
      ] as const) {
        const row = rowOf(r, queue, type);
        expect([row?.lastHour.runs, row?.lastDay.runs, row?.last7Days.runs]).toEqual([n, n, n]);
      }
      expect([rowOf(r, "bulk", "y")?.lastDay.runs, rowOf(r, "bulk", "y")?.lastHour]).toEqual([
        1200,
        { runs: 0, failed: 0, p50Ms: null, p95Ms: null, p95Open: false },
      ]);
    }
  });

  test("when more jobs finished since maintenance's run than the page reads, it says the counts are partial", async () => {
    await clean();
    const now = at(9, 30);
    await stamp(await jobs("rt-cap", "x", 5), now, 10, 2 * MINUTE, "failed");
    await maintain(new Date(now.getTime() - 10 * MINUTE));
    const capped = await runTimes(t.pool, 3, { now });
    expect(capped.liveSample).toMatchObject({ jobs: 3 });
    expect(capped.trendSample).toMatchObject({ jobs: 3 });
    expect(rowOf(capped, "rt-cap", "x")?.lastHour.runs).toBe(3);
    const whole = await runTimes(t.pool, undefined, { now });
    expect(whole.liveSample).toBeNull();
    expect(whole.trendSample).toBeNull();
    expect(rowOf(whole, "rt-cap", "x")?.lastHour.runs).toBe(5);
    // Without a window: the newest N since the rolled hours, said the same way.
    const summed = await runTimes(t.pool, 3, { now, window: false });
    expect(summed.liveSample).toMatchObject({ jobs: 3 });
    expect(summed.trendSample).toMatchObject({ jobs: 3 });
  });

  test("the rollup is bounded: hours past 30 days are deleted by maintenance", async () => {
    await clean();
    const now = at(6, 10);
    await t.sql(
      `insert into workhorse.run_time_bucket (hour, queue, type, bucket, succeeded, failed)
       values ($1::timestamptz - interval '31 days', 'rt-old', 'x', 3, 1, 0),
              ($1::timestamptz - interval '29 days', 'rt-old', 'x', 3, 1, 0)`,
      [at(6)],
    );
    await maintain(now);
    const left = await t.sql<{ days: number }>(
      "select extract(day from $1::timestamptz - hour)::int as days from workhorse.run_time_bucket where queue = 'rt-old'",
      [at(6)],
    );
    expect(left).toEqual([{ days: 29 }]);
  });

  test("the 7 days are whole UTC days from the daily rollup, then today", async () => {
    await clean();
    const now = at(2, 40);
    const threeDaysAgo = at(-72);
    // An hour of three days ago in the hourly rollup only is not read: the week reads days.
    await t.sql(
      `insert into workhorse.run_time_bucket (hour, queue, type, bucket, succeeded, failed)
       values ($1::timestamptz + interval '5 hours', 'rt-week', 'x', 3, 100, 0)`,
      [threeDaysAgo],
    );
    await t.sql(
      `insert into workhorse.run_time_day (day, queue, type, bucket, succeeded, failed)
       values ($1::timestamptz, 'rt-week', 'x', 3, 7, 1), ($1::timestamptz - interval '4 days', 'rt-week', 'x', 3, 50, 0)`,
      [threeDaysAgo],
    );
    await maintain(now); // sums the page's window for this hour from the rollups
    const r = await runTimes(t.pool, undefined, { now });
    expect(r.weekFrom).toBe(at(-6 * 24).toISOString());
    expect(rowOf(r, "rt-week", "x")?.last7Days).toMatchObject({ runs: 8, failed: 1 });
  });

  test("maintenance sums whole days into the daily rollup", async () => {
    await clean();
    const restamp = await standard();
    const now = at(1, 15);
    await restamp(now);
    await maintain(now);
    const rows = await t.sql<{ hours: number; days: number }>(
      `select (select coalesce(sum(succeeded + failed), 0) from workhorse.run_time_bucket
                where queue = 'rt' and hour < $1::timestamptz)::int as hours,
              (select coalesce(sum(succeeded + failed), 0) from workhorse.run_time_day where queue = 'rt')::int as days`,
      [at(0)],
    );
    expect(rows).toEqual([{ hours: 9, days: 9 }]); // the 3- and 30-hours-ago jobs, before today
  });

  test("each dead-letter group's failures: rolled hours are read from the rollup, not the jobs", async () => {
    await clean();
    const restamp = await standard();
    const now = at(20, 45);
    await restamp(now);
    await maintain(new Date(now.getTime() - 2 * MINUTE));
    // Deleting the old failures changes nothing: they are in the rollup.
    await t.sql(
      "delete from workhorse.job where queue = 'rt-dl' and finished_at < $1::timestamptz - interval '2 hours'",
      [now],
    );
    const r = await runTimes(t.pool, undefined, { now });
    expect(r.deadLetterTrend.find((g) => g.queue === "rt-dl")).toEqual({
      queue: "rt-dl",
      type: "charge",
      errorName: "TimeoutError",
      lastHour: 2,
      lastDay: 3,
      dayBefore: 4,
    });
  });

  test("the window is what maintenance summed: rollup rows written after its run show only when summed, until it runs again", async () => {
    await clean();
    const now = at(13, 20);
    await maintain(new Date(now.getTime() - 5 * MINUTE));
    await t.sql(
      `insert into workhorse.run_time_bucket (hour, queue, type, bucket, succeeded, failed)
       values ($1::timestamptz - interval '2 hours', 'rt-win-late', 'x', 3, 5, 0)`,
      [at(13)],
    );
    expect(rowOf(await runTimes(t.pool, undefined, { now }), "rt-win-late", "x")).toBeUndefined();
    const summed = await runTimes(t.pool, undefined, { now, window: false });
    expect(rowOf(summed, "rt-win-late", "x")?.lastDay.runs).toBe(5);
    await refreshRunTimeWindow(sqlOf(t.pool), now);
    expect(rowOf(await runTimes(t.pool, undefined, { now }), "rt-win-late", "x")?.lastDay.runs).toBe(5);
  });

  test("maintenance keeps the windows of this hour and the next only", async () => {
    await clean();
    const now = at(7, 30);
    await t.sql(
      `insert into workhorse.run_time_window (ends_at, rolled_to, taken_at, recent, runs, failures)
       values ($1::timestamptz - interval '3 hours', $1::timestamptz - interval '3 hours', $1::timestamptz - interval '3 hours', '[]', '[]', '[]')`,
      [at(7)],
    );
    await maintain(now);
    const rows = await t.sql<{ ends: number; rolled: number; taken: string }>(
      `select extract(epoch from ends_at - $1::timestamptz)::int / 3600 as ends,
              extract(epoch from rolled_to - $1::timestamptz)::int / 3600 as rolled, taken_at::text as taken
         from workhorse.run_time_window order by ends_at`,
      [at(7)],
    );
    expect(rows.map((r) => [r.ends, r.rolled, Date.parse(r.taken)])).toEqual([
      [0, 0, now.getTime()],
      [1, 0, now.getTime()],
    ]);
  });

  test("one node: with maintenance's window the page is one statement; Citus: the window, then the read of the jobs", async () => {
    const now = at(8, 8);
    await maintain(now);
    const sent: string[] = [];
    const counting = {
      query: (text: string, values?: unknown[]) => {
        if (!text.includes("shard_bucket")) sent.push(text); // not the layout read (once per pool)
        return t.pool.query(text, values);
      },
    } as unknown as typeof t.pool;
    const r = await runTimes(counting, undefined, { now });
    expect(r.rolledUpTo).toBe(at(7).toISOString()); // the window of this hour was read
    expect(sent).toHaveLength(distributedTests() ? 2 : 1);
  });
});

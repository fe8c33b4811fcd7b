// Run times (lib/console/run-times.ts, lib/enqueue/store/console-runtimes.ts) against real
// PostgreSQL: durations as bucket histograms, the hourly rollup maintenance keeps, and the
// dead-letter groups' error trend. Jobs are enqueued through the core, then given their finish
// times directly (a worker cannot finish a job hours ago).
import { beforeAll, describe, expect, test, vi } from "vitest";
import { distributedTests } from "./citus";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { runTimes, percentileOf, trendWord } = await import("@/lib/console/run-times");

const t = setupQueueTests();
beforeAll(() => t.ready());

/** `n` jobs of queue/type that ran `ms` and finished `agoMs` before now, in `state`. */
async function finished(queue: string, type: string, n: number, ms: number, agoMs: number, state = "succeeded") {
  const q = t.queue();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await q.enqueue(type, { i }, { queue }));
  await t.sql(
    `update workhorse.job set state = $2::text, attempt = 1,
            finished_at = now() - $4::bigint * interval '1 millisecond',
            started_at = now() - ($4::bigint + $3::bigint) * interval '1 millisecond',
            last_error = case when $2::text = 'failed' then '{"name": "TimeoutError", "message": "slow"}'::jsonb end
      where id = any($1::uuid[])`,
    [ids, state, ms, agoMs],
  );
}

const HOUR = 3_600_000;

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
    await finished("rt", "fast", 18, 10, 5 * 60_000);
    await finished("rt", "fast", 2, 3000, 10 * 60_000, "failed");
    await finished("rt", "fast", 5, 150, 3 * HOUR); // earlier today: rollup only
    await finished("rt", "fast", 4, 700, 30 * HOUR); // yesterday: the week only
    await finished("rt", "slow", 1, 2 * HOUR, 20 * 60_000);

    let r = await runTimes(t.pool);
    expect(r.rolledUpTo).toBeNull();
    const fast = () => r.rows.find((x) => x.queue === "rt" && x.type === "fast");
    expect(fast()?.lastHour).toEqual({ runs: 20, failed: 2, p50Ms: 20, p95Ms: 5000, p95Open: false });
    // Nothing rolled up yet: the day covers only the last two hours.
    expect(fast()?.lastDay.runs).toBe(20);
    expect(r.rows.find((x) => x.type === "slow")?.lastHour).toMatchObject({ runs: 1, p95Ms: 3_600_000, p95Open: true });

    const m = await t.queue().runMaintenance();
    expect(m.runTimeRowsRolledUp).toBeGreaterThan(0);
    expect((await t.queue().runMaintenance()).runTimeRowsRolledUp).toBe(0); // each hour once
    r = await runTimes(t.pool);
    expect(r.rolledUpTo).not.toBeNull();
    expect(fast()?.lastHour.runs).toBe(20);
    expect(fast()?.lastDay).toEqual({ runs: 25, failed: 2, p50Ms: 20, p95Ms: 5000, p95Open: false });
    expect(fast()?.last7Days).toEqual({ runs: 29, failed: 2, p50Ms: 20, p95Ms: 5000, p95Open: false });
  });

  test("the rollup is bounded: hours past 30 days are deleted by maintenance", async () => {
    await t.sql(
      `insert into workhorse.run_time_bucket (hour, queue, type, bucket, succeeded, failed)
       values (date_trunc('hour', now()) - interval '31 days', 'rt-old', 'x', 3, 1, 0),
              (date_trunc('hour', now()) - interval '29 days', 'rt-old', 'x', 3, 1, 0)`,
    );
    await t.queue().runMaintenance();
    const left = await t.sql<{ days: number }>(
      "select extract(day from date_trunc('hour', now()) - hour)::int as days from workhorse.run_time_bucket where queue = 'rt-old'",
    );
    expect(left).toEqual([{ days: 29 }]);
  });

  test("the jobs are read up to a bound: the newest N finished (and failed), and the page is told", async () => {
    await finished("rt-cap", "x", 5, 10, 2 * 60_000, "failed");
    const capped = await runTimes(t.pool, 3);
    expect(capped.liveSample).toMatchObject({ jobs: 3 });
    expect(capped.trendSample).toMatchObject({ jobs: 3 });
    expect(capped.rows.find((x) => x.queue === "rt-cap")?.lastHour.runs).toBe(3);
    const whole = await runTimes(t.pool);
    expect(whole.liveSample).toBeNull();
    expect(whole.trendSample).toBeNull();
    expect(whole.rows.find((x) => x.queue === "rt-cap")?.lastHour.runs).toBe(5);
  });

  test("the 7 days are whole UTC days from the daily rollup, then today", async () => {
    const today = new Date();
    today.setUTCHours(0, 0, 0, 0);
    const threeDaysAgo = new Date(today.getTime() - 3 * 24 * HOUR);
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
    await t.queue().runMaintenance(); // sums the page's window for this hour from the rollups
    const r = await runTimes(t.pool);
    expect(r.weekFrom).toBe(new Date(today.getTime() - 6 * 24 * HOUR).toISOString());
    expect(r.rows.find((x) => x.queue === "rt-week")?.last7Days).toMatchObject({ runs: 8, failed: 1 });
  });

  test("maintenance sums whole days into the daily rollup", async () => {
    const rows = await t.sql<{ hours: number; days: number }>(
      `select (select coalesce(sum(succeeded + failed), 0) from workhorse.run_time_bucket
                where queue = 'rt' and hour >= date_trunc('day', date_trunc('hour', now()) - interval '48 hours', 'UTC')
                  and hour < date_trunc('day', now(), 'UTC'))::int as hours,
              (select coalesce(sum(succeeded + failed), 0) from workhorse.run_time_day
                where queue = 'rt' and day >= date_trunc('day', date_trunc('hour', now()) - interval '48 hours', 'UTC'))::int as days`,
    );
    expect(rows[0]?.hours).toBeGreaterThan(0); // the 30-hours-ago jobs at least
    expect(rows[0]?.days).toBe(rows[0]?.hours);
  });

  test("each dead-letter group's failures in the last hour, day and the day before: whole hours from the failure rollup", async () => {
    // As on a first deploy: maintenance fills the failure rollup for the last 48 hours.
    await t.sql("delete from workhorse.failure_bucket");
    await finished("rt-dl", "charge", 2, 100, 10 * 60_000, "failed");
    await finished("rt-dl", "charge", 1, 100, 3 * HOUR, "failed");
    await finished("rt-dl", "charge", 4, 100, 30 * HOUR, "failed");
    await t.queue().runMaintenance();
    // Rolled hours are read from the rollup, not the jobs: deleting the old failures changes nothing.
    await t.sql("delete from workhorse.job where queue = 'rt-dl' and finished_at < now() - interval '2 hours'");
    const r = await runTimes(t.pool);
    expect(r.deadLetterTrend.find((g) => g.queue === "rt-dl")).toEqual({
      queue: "rt-dl",
      type: "charge",
      errorName: "TimeoutError",
      lastHour: 2,
      lastDay: 3,
      dayBefore: 4,
    });
  });

  test("maintenance sums the page's rolled-up part once per run: the page reads that window, with the same figures as summing the rollups", async () => {
    // Over the rollups the tests above left: rt/fast (rolled hours of today and yesterday, the
    // live last hour) and the rt-dl failures (rolled hours of the last day and the day before).
    // Maintenance and the read in the same hour (an hour boundary between them leaves no window
    // for the read's hour: run both again).
    let viaWindow: Awaited<ReturnType<typeof runTimes>>;
    let summed: Awaited<ReturnType<typeof runTimes>>;
    for (;;) {
      await t.queue().runMaintenance();
      viaWindow = await runTimes(t.pool);
      summed = await runTimes(t.pool, undefined, { window: false });
      if (viaWindow.now.slice(0, 13) === summed.now.slice(0, 13)) break;
    }
    // rolledUpTo differs by design: the rollups alone tell the newest hour that had runs, the
    // window that every hour before its own was rolled up.
    expect({ ...viaWindow, now: "", rolledUpTo: "" }).toEqual({ ...summed, now: "", rolledUpTo: "" });
    const hour = Math.floor(Date.parse(viaWindow.now) / HOUR) * HOUR;
    expect(viaWindow.rolledUpTo).toBe(new Date(hour - HOUR).toISOString());
    const fast = viaWindow.rows.find((x) => x.queue === "rt" && x.type === "fast");
    expect(fast?.lastDay.runs).toBe(25);
    expect(fast?.last7Days.runs).toBe(29);
    expect(viaWindow.deadLetterTrend.find((g) => g.queue === "rt-dl")).toMatchObject({ lastDay: 3, dayBefore: 4 });

    // Rollup rows written after the run show only when summed, until maintenance runs again.
    await t.sql(
      `insert into workhorse.run_time_bucket (hour, queue, type, bucket, succeeded, failed)
       values (date_trunc('hour', now()) - interval '2 hours', 'rt-win-late', 'x', 3, 5, 0)`,
    );
    const before = await runTimes(t.pool);
    if (before.now.slice(0, 13) === viaWindow.now.slice(0, 13)) {
      expect(before.rows.find((x) => x.queue === "rt-win-late")).toBeUndefined();
    }
    expect(
      (await runTimes(t.pool, undefined, { window: false })).rows.find((x) => x.queue === "rt-win-late")?.lastDay.runs,
    ).toBe(5);
    await t.queue().runMaintenance();
    expect((await runTimes(t.pool)).rows.find((x) => x.queue === "rt-win-late")?.lastDay.runs).toBe(5);
    // Maintenance writes each hour once and sums whole days once: a row written into an hour
    // afterwards (only a test does that) is in the hours but not in its day's sum. Taken out again
    // so that the tests below compare the window with the rollups on data maintenance wrote.
    await t.sql("delete from workhorse.run_time_bucket where queue = 'rt-win-late'");
    await t.sql("delete from workhorse.run_time_day where queue = 'rt-win-late'");
  });

  test("a window for the next hour, for a page read before maintenance runs again: the jobs read from the window's end", async () => {
    // As if maintenance last ran an hour ago: its windows for that hour and this one, rolled up to
    // the start of that hour (the jobs of the hour since are read live).
    const { refreshRunTimeWindow } = await import("@/lib/enqueue/store/console-runtimes");
    const sqlOf = { query: (c: import("pg").QueryConfig) => t.pool.query(c), layout: async () => "single" as const };
    let viaWindow: Awaited<ReturnType<typeof runTimes>>;
    let summed: Awaited<ReturnType<typeof runTimes>>;
    for (;;) {
      await t.queue().runMaintenance();
      await t.sql("delete from workhorse.run_time_window");
      await refreshRunTimeWindow(sqlOf, new Date(Date.now() - HOUR));
      viaWindow = await runTimes(t.pool);
      summed = await runTimes(t.pool, undefined, { window: false });
      if (viaWindow.now.slice(0, 13) === summed.now.slice(0, 13)) break;
    }
    const hour = Math.floor(Date.parse(viaWindow.now) / HOUR) * HOUR;
    expect(viaWindow.rolledUpTo).toBe(new Date(hour - 2 * HOUR).toISOString());
    expect({ ...viaWindow, now: "", rolledUpTo: "" }).toEqual({ ...summed, now: "", rolledUpTo: "" });
    expect(viaWindow.rows.find((x) => x.queue === "rt" && x.type === "fast")?.lastDay.runs).toBe(25);
  });

  test("maintenance keeps the windows of this hour and the next only", async () => {
    await t.sql(
      `insert into workhorse.run_time_window (ends_at, rolled_to, runs, failures)
       values (date_trunc('hour', now()) - interval '3 hours', date_trunc('hour', now()) - interval '3 hours', '[]', '[]')`,
    );
    await t.queue().runMaintenance();
    const rows = await t.sql<{ ends: number; rolled: number }>(
      `select extract(epoch from ends_at - date_trunc('hour', now()))::int / 3600 as ends,
              extract(epoch from rolled_to - date_trunc('hour', now()))::int / 3600 as rolled
         from workhorse.run_time_window order by ends_at`,
    );
    expect(rows).toEqual([
      { ends: 0, rolled: 0 },
      { ends: 1, rolled: 0 },
    ]);
  });

  test("one node: with maintenance's window the page is one statement; Citus: the window, then the two reads of the jobs", async () => {
    const sent: string[] = [];
    const counting = {
      query: (text: string, values?: unknown[]) => {
        if (!text.includes("shard_bucket")) sent.push(text); // not the layout read (once per pool)
        return t.pool.query(text, values);
      },
    } as unknown as typeof t.pool;
    for (;;) {
      await t.queue().runMaintenance();
      sent.length = 0;
      const r = await runTimes(counting);
      const hour = Math.floor(Date.parse(r.now) / HOUR) * HOUR;
      if (r.rolledUpTo === new Date(hour - HOUR).toISOString()) break; // the window of this hour was read
    }
    expect(sent).toHaveLength(distributedTests() ? 3 : 1);
  });
});

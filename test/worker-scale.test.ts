import pg from "pg";
import { beforeAll, describe, expect, test } from "vitest";
import type { HandlerContext } from "../lib/enqueue";
import { setupQueueTests, waitFor as waitUntil, workerStarter } from "./helpers";

const t = setupQueueTests({ max: 30 });
beforeAll(() => t.ready());
/** The shared poll with this file's patience (its waits span process starts and lease expiries). */
const waitFor = (what: string, fn: () => Promise<boolean>) => waitUntil(what, fn, 50_000, 50);

const startWorker = workerStarter(t.pool, { pollIntervalMs: 50, leaseMs: 5000 });

interface Run {
  id: string;
  attempt: number;
  start: number;
  end: number;
}

/** Pairs of runs of one job whose [start, end] intervals intersect. */
function overlaps(runs: Run[]): Array<[Run, Run]> {
  const byJob = new Map<string, Run[]>();
  for (const r of runs) byJob.set(r.id, [...(byJob.get(r.id) ?? []), r]);
  const out: Array<[Run, Run]> = [];
  for (const list of byJob.values()) {
    list.sort((a, b) => a.start - b.start);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1] as Run;
      const cur = list[i] as Run;
      if (cur.start < prev.end) out.push([prev, cur]);
    }
  }
  return out;
}

describe("many workers", () => {
  test("2 workers x concurrency 4 run 2,000 jobs: each succeeds exactly once, no attempt overlaps another", async () => {
    const q = t.queue();
    const ids: string[] = [];
    for (let batch = 0; batch < 2; batch++) {
      ids.push(
        ...(await q.enqueueMany(
          Array.from({ length: 1000 }, (_, i) => ({
            type: "count",
            payload: { n: batch * 1000 + i },
            options: { queue: "scale" },
          })),
        )),
      );
    }
    const runs: Run[] = [];
    const handler = async (p: { n: number }, ctx: HandlerContext) => {
      const start = performance.now();
      await new Promise((r) => setImmediate(r));
      runs.push({ id: ctx.jobId, attempt: ctx.attempt, start, end: performance.now() });
      return { n: p.n };
    };
    const a = await startWorker({ queues: ["scale"], concurrency: 4, handlers: { count: handler } });
    const b = await startWorker({ queues: ["scale"], concurrency: 4, handlers: { count: handler } });
    await waitFor(
      "2,000 jobs to succeed",
      async () => (await t.count("job", "queue = 'scale' and state = 'succeeded'")) === 2000,
    );

    expect(runs).toHaveLength(2000);
    expect(new Set(runs.map((r) => r.id)).size).toBe(2000);
    expect(runs.every((r) => r.attempt === 1)).toBe(true);
    expect(overlaps(runs)).toEqual([]);
    const perJob = await t.sql<{ claimed: string; succeeded: string; other: string; n: string }>(
      `select count(*) filter (where kind = 'claimed') as claimed, count(*) filter (where kind = 'succeeded') as succeeded,
              count(*) filter (where kind not in ('enqueued', 'claimed', 'succeeded')) as other, count(distinct job_id) as n
         from workhorse.job_event where job_id = any ($1::uuid[])`,
      [ids],
    );
    expect(perJob).toEqual([{ claimed: "2000", succeeded: "2000", other: "0", n: "2000" }]);
    const wrong = await t.sql(
      "select id from workhorse.job where id = any ($1::uuid[]) and (attempt <> 1 or (result ->> 'n') is null)",
      [ids],
    );
    expect(wrong).toEqual([]);
    expect(a.stats().succeeded + b.stats().succeeded).toBe(2000);
    expect(a.stats().stale + b.stats().stale).toBe(0);
  });

  test("a concurrency key admits one active job at a time across workers; unkeyed jobs run alongside", async () => {
    const q = t.queue();
    const keys = ["acct-1", "acct-2", "acct-3"];
    await q.enqueueMany(
      Array.from({ length: 90 }, (_, i) => ({
        type: "keyed",
        payload: { i },
        options: { queue: "keys", concurrencyKey: keys[i % 3] as string },
      })),
    );
    await q.enqueueMany(
      Array.from({ length: 30 }, (_, i) => ({ type: "free", payload: { i }, options: { queue: "keys" } })),
    );
    const inFlight = new Map<string, number>();
    let maxPerKey = 0;
    let maxFree = 0;
    let free = 0;
    const handlers = {
      keyed: async (_p: unknown, ctx: HandlerContext) => {
        const key = ctx.job.concurrencyKey as string;
        const n = (inFlight.get(key) ?? 0) + 1;
        inFlight.set(key, n);
        maxPerKey = Math.max(maxPerKey, n);
        await new Promise((r) => setTimeout(r, 3));
        inFlight.set(key, (inFlight.get(key) ?? 1) - 1);
      },
      free: async () => {
        free++;
        maxFree = Math.max(maxFree, free);
        await new Promise((r) => setTimeout(r, 10));
        free--;
      },
    };
    await startWorker({ queues: ["keys"], concurrency: 4, handlers });
    await startWorker({ queues: ["keys"], concurrency: 4, handlers });
    await waitFor(
      "120 jobs to succeed",
      async () => (await t.count("job", "queue = 'keys' and state = 'succeeded'")) === 120,
    );
    expect(maxPerKey).toBe(1);
    expect(maxFree).toBeGreaterThan(1);
    expect(await t.count("concurrency_slot")).toBe(0);
  });
});

describe("concurrency key races (SQL)", () => {
  // The first claimer asks for one job, so it row-locks only the older one; the second asks for five.
  const claim = (c: pg.ClientBase, worker: string, limit: number) =>
    c.query<{ id: string }>("select id from workhorse.claim_jobs(array['race'], null, $1, $2, 60000, false)", [
      worker,
      limit,
    ]);

  async function raceSetup() {
    await t.sql("delete from workhorse.job where queue = 'race'");
    const q = t.queue();
    const [older, newer] = await q.enqueueMany([
      { type: "r", payload: 1, options: { queue: "race", concurrencyKey: "K" } },
      { type: "r", payload: 2, options: { queue: "race", concurrencyKey: "K" } },
    ]);
    const c1 = new pg.Client({ connectionString: t.url });
    const c2 = new pg.Client({ connectionString: t.url });
    await c1.connect();
    await c2.connect();
    const pid2 = (await c2.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid;
    return { older: older as string, newer: newer as string, c1, c2, pid2 };
  }

  async function blockedOnLock(pid: number | undefined) {
    await waitFor("the second claimer to wait on the first one's key", async () => {
      const rows = await t.sql<{ w: string | null }>(
        "select wait_event_type as w from pg_stat_activity where pid = $1",
        [pid],
      );
      return rows[0]?.w === "Lock";
    });
  }

  test("two claimers racing for one key: the second waits on the first and takes nothing once it commits", async () => {
    const { older, c1, c2, pid2 } = await raceSetup();
    try {
      await c1.query("begin");
      const first = await claim(c1, "w1", 1);
      expect(first.rows.map((r) => r.id)).toEqual([older]);
      // The second claimer's snapshot sees no active job for K and the newer job unlocked: only the
      // slot's primary key stands between it and a second active job for K.
      const second = claim(c2, "w2", 5);
      await blockedOnLock(pid2);
      await c1.query("commit");
      expect((await second).rows).toEqual([]);
      const active = await t.sql("select id from workhorse.job where queue = 'race' and state = 'active'");
      expect(active).toEqual([{ id: older }]);
    } finally {
      await c1.end();
      await c2.end();
    }
  });

  test("if the first claimer rolls back, the waiting one takes the key", async () => {
    const { newer, c1, c2, pid2 } = await raceSetup();
    try {
      await c1.query("begin");
      await claim(c1, "w1", 1);
      const second = claim(c2, "w2", 5);
      await blockedOnLock(pid2);
      await c1.query("rollback");
      expect((await second).rows.map((r) => r.id)).toEqual([newer]);
      expect(await t.count("job", "queue = 'race' and state = 'active'")).toBe(1);
    } finally {
      await c1.end();
      await c2.end();
    }
  });

  test("PostgreSQL itself refuses a second active job for a key", async () => {
    const { older, newer, c1, c2 } = await raceSetup();
    await c1.end();
    await c2.end();
    await t.sql("update workhorse.job set state = 'active' where id = $1", [older]);
    const err = await t.sql("update workhorse.job set state = 'active' where id = $1", [newer]).catch((e) => e);
    expect(err).toMatchObject({ code: "23505", constraint: "job_active_concurrency_key_idx" });
  });
});

// Smart batching: single calls on one Queue that overlap share a statement (lib/enqueue/coalesce.ts).
// Each call must get exactly what it would have got alone: the same outcome, the same job, the same
// typed conflict, the same validation error, the keyed-call retry after a lost reply. Coalescing is
// forced deterministically with maxStatements: 1 (the first call of a burst goes alone, every
// other call of the burst waits for it and then shares one statement).
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  EnqueueIdempotencyConflictError,
  type EnqueueOptions,
  EnqueueValidationError,
  Queue,
  WorkhorseDatabaseError,
} from "../lib/enqueue";
import { setupQueueTests, waitFor } from "./helpers";
import { type LostReplyProxy, startLostReplyProxy } from "./lost-reply-proxy";

const t = setupQueueTests();
beforeAll(() => t.ready());

let n = 0;
const fresh = (p: string) => `${p}-${++n}-${Date.now()}`;

interface Call {
  name: string;
  type: string;
  payload: unknown;
  options?: EnqueueOptions;
}

/** The calls of one run, in namespace `ns` (its own scopes), against the seeds below. */
function calls(ns: string): Call[] {
  const idem = (key: string, extra: Partial<EnqueueOptions> = {}) => ({
    queue: "coalesce",
    idempotency: { key, scope: `${ns}-idem` },
    ...extra,
  });
  const list: Call[] = [
    { name: "new key", type: "order.place", payload: { order: 100 }, options: idem("new-1") },
    { name: "replay", type: "order.place", payload: { order: 1 }, options: idem("seed-replay") },
    {
      name: "conflict: payload",
      type: "order.place",
      payload: { order: 1, amount: 6 },
      options: idem("seed-conflict"),
    },
    {
      name: "conflict: queue",
      type: "order.place",
      payload: { order: 2 },
      options: { ...idem("seed-queue"), queue: "other" },
    },
    { name: "keyless", type: "order.place", payload: { order: 200 }, options: { queue: "coalesce" } },
    {
      name: "scheduled, tagged",
      type: "order.place",
      payload: { order: 101 },
      options: idem("new-2", { runAt: new Date(Date.now() + 3_600_000), tags: ["a", "b"], maxAttempts: 3 }),
    },
    {
      name: "throttle inside its window",
      type: "report.build",
      payload: { r: 1 },
      options: { queue: "coalesce", throttle: { key: "seed-throttle", scope: `${ns}-thr`, windowMs: 60_000 } },
    },
    {
      name: "throttle new",
      type: "report.build",
      payload: { r: 2 },
      options: { queue: "coalesce", throttle: { key: "thr-new", scope: `${ns}-thr`, windowMs: 60_000 } },
    },
    {
      name: "debounce repeat",
      type: "search.reindex",
      payload: { rev: 2 },
      options: { queue: "coalesce", debounce: { key: "seed-debounce", scope: `${ns}-deb`, windowMs: 60_000 } },
    },
    {
      name: "debounce on an idempotency key",
      type: "order.place",
      payload: { order: 1 },
      options: { queue: "coalesce", debounce: { key: "seed-replay", scope: `${ns}-idem`, windowMs: 60_000 } },
    },
    { name: "second new key", type: "order.place", payload: { order: 102 }, options: idem("new-3") },
    { name: "second keyless", type: "order.ship", payload: { order: 201 }, options: { queue: "coalesce" } },
  ];
  return list;
}

async function seed(queue: Queue, ns: string): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const idem = (key: string) => ({ queue: "coalesce", idempotency: { key, scope: `${ns}-idem` } });
  ids.set("seed-replay", await queue.enqueue("order.place", { order: 1 }, idem("seed-replay")));
  ids.set("seed-conflict", await queue.enqueue("order.place", { order: 1, amount: 5 }, idem("seed-conflict")));
  ids.set("seed-queue", await queue.enqueue("order.place", { order: 2 }, idem("seed-queue")));
  ids.set(
    "seed-throttle",
    await queue.enqueue(
      "report.build",
      { r: 1 },
      { queue: "coalesce", throttle: { key: "seed-throttle", scope: `${ns}-thr`, windowMs: 60_000 } },
    ),
  );
  ids.set(
    "seed-debounce",
    await queue.enqueue(
      "search.reindex",
      { rev: 1 },
      { queue: "coalesce", debounce: { key: "seed-debounce", scope: `${ns}-deb`, windowMs: 60_000 } },
    ),
  );
  return ids;
}

/** What a caller saw, with job ids named by the seed they belong to (or "new"), so two runs compare. */
function seen(outcome: PromiseSettledResult<unknown>, seeds: Map<string, string>): unknown {
  const label = (id: unknown) => [...seeds].find(([, v]) => v === id)?.[0] ?? (typeof id === "string" ? "new" : id);
  if (outcome.status === "fulfilled") {
    const r = outcome.value as { jobId: string; outcome: string; reason?: string; keyDigest?: string | null };
    return { outcome: r.outcome, reason: r.reason ?? null, job: label(r.jobId), keyed: r.keyDigest != null };
  }
  const e = outcome.reason as Error;
  if (e instanceof EnqueueIdempotencyConflictError) {
    return {
      error: e.name,
      ordinal: e.ordinal,
      existing: label(e.existingJobId),
      fields: e.conflictingFields,
      paths: e.payloadPaths ?? null,
      retryable: false,
    };
  }
  if (e instanceof EnqueueValidationError) return { error: e.name, issues: e.issues };
  return { error: e.name, message: e.message };
}

async function runAll(queue: Queue, list: Call[], together: boolean) {
  if (together) {
    return Promise.allSettled(list.map((c) => queue.enqueueWithResult(c.type, c.payload, c.options)));
  }
  const out: PromiseSettledResult<unknown>[] = [];
  for (const c of list) {
    out.push(
      await queue.enqueueWithResult(c.type, c.payload, c.options).then(
        (value) => ({ status: "fulfilled", value }) as const,
        (reason: unknown) => ({ status: "rejected", reason }) as const,
      ),
    );
  }
  return out;
}

describe("coalesced calls get what they would alone", () => {
  test("a burst of mixed calls (new keys, replays, conflicts, throttle, debounce, keyless) shares statements and answers each call as alone", async () => {
    const alone = t.queue({ coalesce: false });
    const shared = t.queue({ coalesce: { maxStatements: 1 } });
    const [nsAlone, nsShared] = [fresh("alone"), fresh("shared")];
    const seedsAlone = await seed(alone, nsAlone);
    const seedsShared = await seed(alone, nsShared);

    const expected = (await runAll(alone, calls(nsAlone), false)).map((o) => seen(o, seedsAlone));
    const before = shared.coalesceStats();
    const got = (await runAll(shared, calls(nsShared), true)).map((o) => seen(o, seedsShared));
    const stats = shared.coalesceStats();
    if (process.env.SHOW) console.log(JSON.stringify({ got, expected, stats }, null, 1));

    const names = calls("x").map((c) => c.name);
    expect(Object.fromEntries(names.map((name, i) => [name, got[i]]))).toEqual(
      Object.fromEntries(names.map((name, i) => [name, expected[i]])),
    );
    // The burst really shared: one call alone, then the other calls in shared statements (conflicts
    // send the rest again, so a few statements).
    expect(stats.calls - before.calls).toBe(names.length);
    expect(stats.sharedStatements - before.sharedStatements).toBeGreaterThanOrEqual(1);
    expect(stats.largestStatement).toBeGreaterThan(5);
    expect(stats.statements - before.statements).toBeLessThan(names.length);
    // Conflicts named their fields, with ordinal 1 as a single call's would.
    expect(got[2]).toMatchObject({ error: "EnqueueIdempotencyConflictError", ordinal: 1, fields: ["payload"] });

    // What was stored is the same too: each key's job, its payload, state and attempts.
    const stored = async (ns: string) =>
      t.sql(
        `select key_scope, encode(key_hash, 'hex') is not null as keyed, type, payload, state, max_attempts, tags
           from workhorse.job where key_scope like $1 or (key_scope is null and queue = 'coalesce' and payload->>'order' in ('200', '201') and id > $2)
          order by type, payload::text`,
        [`${ns}-%`, seedsAlone.get("seed-replay")],
      );
    const strip = (rows: Record<string, unknown>[], ns: string) =>
      rows.map((r) => ({ ...r, key_scope: typeof r.key_scope === "string" ? r.key_scope.replace(ns, "ns") : null }));
    const keyedOnly = (rows: Record<string, unknown>[]) => rows.filter((r) => r.key_scope !== null);
    expect(keyedOnly(strip(await stored(nsShared), nsShared))).toEqual(
      keyedOnly(strip(await stored(nsAlone), nsAlone)),
    );
  });

  test("two calls for one key in one burst never share a statement: the second sees the first's decision", async () => {
    const shared = t.queue({ coalesce: { maxStatements: 1 } });
    const scope = fresh("same-key");
    const options = { queue: "coalesce", idempotency: { key: "k", scope } };
    const other = { queue: "coalesce", idempotency: { key: "other", scope } };
    const before = shared.coalesceStats().statements;
    const [a, b, c, d] = await Promise.all([
      shared.enqueueWithResult("order.place", { o: 0 }, other), // goes alone, the rest wait for it
      shared.enqueueWithResult("order.place", { o: 1 }, options),
      shared.enqueueWithResult("order.place", { o: 1 }, options),
      shared.enqueueWithResult("order.place", { o: 1 }, options),
    ]);
    expect(a.outcome).toBe("accepted");
    expect([b.outcome, c.outcome, d.outcome]).toEqual(["accepted", "replayed", "replayed"]);
    expect(new Set([b.jobId, c.jobId, d.jobId]).size).toBe(1);
    // a alone; b, c and d one statement each, since they name one key.
    expect(shared.coalesceStats().statements - before).toBe(4);
    expect(await t.count("job", `key_scope = '${scope}'`)).toBe(2);

    const conflicting = await Promise.allSettled([
      shared.enqueueWithResult("order.place", { o: 0 }, other),
      shared.enqueueWithResult("order.place", { o: 1 }, options),
      shared.enqueueWithResult("order.place", { o: 2 }, options),
    ]);
    expect(conflicting.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    const err = (conflicting[2] as PromiseRejectedResult).reason as EnqueueIdempotencyConflictError;
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err.existingJobId).toBe(b.jobId);
    expect(err.ordinal).toBe(1);
  });

  test("a lone call is sent at once, alone; invalid input is refused before it could wait", async () => {
    const shared = t.queue({ coalesce: { maxStatements: 1 } });
    const r = await shared.enqueueWithResult("order.place", { lone: true }, { queue: "coalesce" });
    expect(r.outcome).toBe("accepted");
    expect(shared.coalesceStats()).toEqual({ calls: 1, statements: 1, sharedStatements: 0, largestStatement: 1 });
    await expect(shared.enqueue("", {}, { queue: "coalesce" })).rejects.toBeInstanceOf(EnqueueValidationError);
    expect(shared.coalesceStats().calls).toBe(1);
  });

  test("calls inside withClient and transaction never coalesce; coalesce: false sends each call alone", async () => {
    const shared = t.queue({ coalesce: { maxStatements: 1 } });
    await shared.transaction(async (tx) => {
      for (const i of [1, 2, 3]) await tx.enqueue("order.place", { i }, { queue: "coalesce" });
    });
    const client = await t.pool.connect();
    try {
      await shared.withClient(client).enqueue("order.place", { i: 4 }, { queue: "coalesce" });
    } finally {
      client.release();
    }
    expect(shared.coalesceStats().calls).toBe(0);

    const off = t.queue({ coalesce: false });
    await Promise.all([1, 2, 3].map((i) => off.enqueue("order.place", { i }, { queue: "coalesce" })));
    expect(off.coalesceStats()).toEqual({ calls: 0, statements: 0, sharedStatements: 0, largestStatement: 0 });
  });

  test("close() waits for calls still waiting for their statement", async () => {
    const q = new Queue({ pool: t.pool, maintenance: false, coalesce: { maxStatements: 1 } });
    const pending = [1, 2, 3, 4, 5].map((i) => q.enqueue("order.place", { closing: i }, { queue: "coalesce" }));
    await q.close();
    const ids = await Promise.all(pending);
    expect(new Set(ids).size).toBe(5);
    expect(await t.count("job", `id = any('{${ids.join(",")}}'::uuid[])`)).toBe(5);
    await expect(q.enqueue("order.place", {}, { queue: "coalesce" })).rejects.toThrow(/closed/i);
  });

  test("a shared statement's payloads total at most 64 MiB, as a batch's: a call that would pass it waits for the next statement", async () => {
    const shared = t.queue({ coalesce: { maxStatements: 1 }, maxPayloadBytes: 40 * 1024 * 1024 });
    const scope = fresh("bytes");
    const big = "x".repeat(33 * 1024 * 1024); // two of them pass LIMITS.maxBatchPayloadBytes (64 MiB)
    const blocker = await t.pool.connect();
    try {
      // The first call takes the slot and waits for a key the blocker's transaction holds.
      await blocker.query("begin");
      const opts = { queue: "coalesce", idempotency: { key: "held", scope } };
      await shared.withClient(blocker).enqueue("order.place", { held: true }, opts);
      const pid = (await blocker.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid;
      const before = shared.coalesceStats();
      const first = shared.enqueue("order.place", { held: true }, opts);
      await waitFor("the first call to wait for the blocker", async () => {
        const [row] = await t.sql<{ n: string }>(
          "select count(*) as n from pg_stat_activity where $1::int = any(pg_blocking_pids(pid))",
          [pid],
        );
        return Number(row?.n) > 0;
      });
      const rest = [
        shared.enqueue("order.place", { big, n: 1 }, { queue: "coalesce", tags: [scope] }),
        shared.enqueue("order.place", { big, n: 2 }, { queue: "coalesce", tags: [scope] }),
        shared.enqueue("order.place", { n: 3 }, { queue: "coalesce", tags: [scope] }),
      ];
      await waitFor("the three calls to wait", async () => shared.coalesceStats().calls === before.calls + 4);
      await blocker.query("commit");
      await Promise.all([first, ...rest]);
      const stats = shared.coalesceStats();
      // The first alone; then the first big call with the small one; the second big call alone.
      expect(stats.statements - before.statements).toBe(3);
      expect(stats.sharedStatements - before.sharedStatements).toBe(1);
      expect(stats.largestStatement).toBe(2);
      expect(await t.count("job", `'${scope}' = any(tags)`)).toBe(3);
    } finally {
      await blocker.query("rollback").catch(() => {});
      blocker.release();
    }
  });

  test("bad coalesce options are typed errors naming the option", () => {
    expect(() => new Queue({ pool: t.pool, coalesce: { maxStatements: 0 } })).toThrow(EnqueueValidationError);
    expect(() => new Queue({ pool: t.pool, coalesce: { maxCalls: 1 } })).toThrow(/coalesce\.maxCalls/);
    expect(() => new Queue({ pool: t.pool, coalesce: { nope: 1 } as never })).toThrow(EnqueueValidationError);
  });
});

describe("a shared statement whose reply was lost", () => {
  let proxy: LostReplyProxy;
  let pool: pg.Pool;
  let queue: Queue;
  beforeAll(async () => {
    const u = new URL(t.url);
    proxy = await startLostReplyProxy({ host: u.hostname, port: Number(u.port) });
    pool = new pg.Pool({ connectionString: proxy.urlFor(t.url), max: 4 });
    pool.on("error", () => {});
    queue = new Queue({ pool, maintenance: false, notify: false, coalesce: { maxStatements: 1 } });
    await queue.enqueue("warm.up", {}, { idempotency: { key: fresh("warm") } });
  });
  afterAll(async () => {
    await queue.close();
    await pool.end();
    await proxy.close();
  });

  test("keyed calls repeat alone and are told accepted with the job the lost statement stored; a keyless call gets the retryable error", async () => {
    const scope = fresh("lost");
    // The burst's first call goes alone and is held on a lock (another transaction binds its key
    // first), so the others queue behind it; only then is the proxy armed, for their shared statement.
    const blocker = await t.pool.connect();
    try {
      await blocker.query("begin");
      const held = await queue
        .withClient(blocker)
        .enqueue("order.place", { k: 0 }, { queue: "lost", idempotency: { key: "k0", scope } });
      const burst = Promise.allSettled([
        queue.enqueueWithResult("order.place", { k: 0 }, { queue: "lost", idempotency: { key: "k0", scope } }),
        queue.enqueueWithResult("order.place", { k: 1 }, { queue: "lost", idempotency: { key: "k1", scope } }),
        queue.enqueueWithResult(
          "order.place",
          { k: 2 },
          { queue: "lost", throttle: { key: "k2", scope, windowMs: 60_000 } },
        ),
        queue.enqueueWithResult("order.place", { k: 3 }, { queue: "lost" }),
      ]);
      await waitFor("the first call to wait for the lock", async () => {
        const [row] = await t.sql<{ n: string }>(
          "select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%enqueue%'",
        );
        return Number(row?.n) > 0;
      });
      const lost = proxy.lost;
      proxy.loseNextReplies(1);
      await blocker.query("commit");
      const settled = await burst;
      expect(proxy.lost).toBe(lost + 1);
      expect(settled.map((s) => (s.status === "fulfilled" ? s.value.outcome : "rejected"))).toEqual([
        "replayed",
        "accepted",
        "accepted",
        "rejected",
      ]);
      expect((settled[0] as PromiseFulfilledResult<{ jobId: string }>).value.jobId).toBe(held);
      const keyless = settled[3] as PromiseRejectedResult;
      expect(keyless.reason).toBeInstanceOf(WorkhorseDatabaseError);
      expect((keyless.reason as WorkhorseDatabaseError).retryable).toBe(true);
      // One job per key, each the one its caller was told; the keyless job committed with the statement.
      const rows = await t.sql<{ id: string; k: number }>(
        "select id, (payload->>'k')::int as k from workhorse.job where queue = 'lost' order by 2",
      );
      expect(rows.map((r) => r.k)).toEqual([0, 1, 2, 3]);
      for (const i of [1, 2]) {
        expect((settled[i] as PromiseFulfilledResult<{ jobId: string }>).value.jobId).toBe(rows[i]?.id);
      }
      expect(queue.coalesceStats().sharedStatements).toBeGreaterThanOrEqual(1);
    } finally {
      blocker.release();
    }
  });
});

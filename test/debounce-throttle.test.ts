import { beforeAll, describe, expect, test } from "vitest";
import {
  EnqueueIdempotencyConflictError,
  type EnqueueOptions,
  type EnqueueResult,
  EnqueueValidationError,
  type KeyMode,
} from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests({ max: 45 });
beforeAll(() => t.ready());

let n = 0;
/** A fresh key per test, so tests never share a binding. */
const fresh = (p = "k") => `${p}-${++n}-${Date.now()}`;

const WINDOW = 60_000;
const ctx = { actor: "test", reason: "test" };

interface JobRowT {
  id: string;
  state: string;
  payload: unknown;
  queue: string;
  type: string;
  tags: string[];
  max_attempts: number;
  run_at: Date;
  created_at: Date;
  request_digest: string;
}
async function job(id: string): Promise<JobRowT> {
  const rows = await t.sql<JobRowT>(
    `select id, state, payload, queue, type, tags, max_attempts, run_at, created_at,
            encode(request_digest, 'hex') as request_digest
       from workhorse.job where id = $1`,
    [id],
  );
  return rows[0] as JobRowT;
}

interface BindingRowT {
  job_id: string;
  mode: string;
  schedule: string | null;
  max_wait_ms: string | null;
  ttl_ms: string;
  created_at: Date;
  expires_at: Date;
  request_digest: string;
}
/** The binding of the job's key (through the job's key columns). */
async function bindingOf(jobId: string): Promise<BindingRowT | undefined> {
  // Two reads rather than a join: on Citus a join must be on the distribution column.
  const [key] = await jobKey(jobId);
  if (!key) return undefined;
  const rows = await t.sql<BindingRowT>(
    `select b.job_id, b.mode, b.schedule, b.max_wait_ms, b.ttl_ms, b.created_at, b.expires_at,
            encode(b.request_digest, 'hex') as request_digest
       from workhorse.key_binding b where b.scope = $1 and b.key_hash = $2`,
    [key.key_scope, key.key_hash],
  );
  return rows[0];
}

async function jobKey(jobId: string): Promise<Array<{ key_scope: string; key_hash: Buffer }>> {
  return t.sql("select key_scope, key_hash from workhorse.job where id = $1 and key_hash is not null", [jobId]);
}

async function events(jobId: string, kind: string): Promise<Array<{ at: Date; data: Record<string, unknown> }>> {
  return t.sql("select at, data from workhorse.job_event where job_id = $1 and kind = $2 order by seq", [jobId, kind]);
}

/** Moves a key's window into the past, as if `ms` had gone by since the binding was made. */
async function age(jobId: string, ms: number): Promise<void> {
  // New times computed first, then written as values (Citus refuses timestamptz arithmetic on
  // columns inside an UPDATE).
  const [key] = await jobKey(jobId);
  const [b] = await t.sql<{ c: Date; e: Date }>(
    `select created_at - $3::bigint * interval '1 millisecond' as c, expires_at - $3::bigint * interval '1 millisecond' as e
       from workhorse.key_binding where scope = $1 and key_hash = $2`,
    [key?.key_scope, key?.key_hash, ms],
  );
  if (b) {
    await t.sql(
      "update workhorse.key_binding set created_at = $3, expires_at = $4 where scope = $1 and key_hash = $2",
      [key?.key_scope, key?.key_hash, b.c, b.e],
    );
  }
  const [j] = await t.sql<{ c: Date; r: Date }>(
    `select created_at - $2::bigint * interval '1 millisecond' as c, run_at - $2::bigint * interval '1 millisecond' as r
       from workhorse.job where id = $1`,
    [jobId, ms],
  );
  await t.sql("update workhorse.job set created_at = $2, run_at = $3 where id = $1", [jobId, j?.c, j?.r]);
}

const ms = (a: Date, b: Date) => a.getTime() - b.getTime();

/** What the key's owner has, counted, so "nothing was written" can be checked. */
async function writes(): Promise<{ jobs: number; events: number; bindings: number }> {
  return {
    jobs: await t.count("job"),
    events: await t.count("job_event"),
    bindings: await t.count("key_binding"),
  };
}

function reasonOf(r: EnqueueResult): string | null {
  // `reason` only exists on the non_replaceable member of the union.
  return r.outcome === "non_replaceable" ? r.reason : null;
}

describe("debounce", () => {
  test("the first request is accepted: a scheduled job due at now + window, a binding expiring then", async () => {
    const q = t.queue();
    const key = fresh();
    const r = await q.enqueueWithResult("search.reindex", { doc: 1 }, { debounce: { key, windowMs: WINDOW } });
    expect(r).toMatchObject({ jobId: expect.any(String), outcome: "accepted" });
    const j = await job(r.jobId);
    expect(j.state).toBe("scheduled");
    expect(ms(j.run_at, j.created_at)).toBe(WINDOW);
    const b = await bindingOf(r.jobId);
    expect(b).toMatchObject({
      job_id: r.jobId,
      mode: "debounce",
      schedule: "reset",
      max_wait_ms: null,
      ttl_ms: "60000",
    });
    expect(b?.expires_at.getTime()).toBe(j.run_at.getTime());
    expect(b?.created_at.getTime()).toBe(j.created_at.getTime());
    const info = await q.findBinding({ key });
    expect(info).toMatchObject({ mode: "debounce", schedule: "reset", maxWaitMs: null, ttlMs: WINDOW, expired: false });
  });

  test("a repeat inside the window replaces the job in place (reset): same id, new definition, run time and expiry moved, a debounced event with both digests", async () => {
    const q = t.queue();
    const key = fresh();
    const first = await q.enqueueWithResult(
      "search.reindex",
      { doc: 1, title: "secret-a" },
      {
        debounce: { key, windowMs: WINDOW },
        tags: ["a"],
      },
    );
    const before = await job(first.jobId);
    await age(first.jobId, 5_000); // 5 s into the window
    const again = await q.enqueueWithResult(
      "search.refresh",
      { doc: 1, title: "secret-b" },
      {
        queue: "search",
        debounce: { key, windowMs: 30_000 },
        tags: ["b", "a"],
        maxAttempts: 3,
      },
    );
    expect(again).toMatchObject({ jobId: first.jobId, outcome: "replaced" });
    const after = await job(first.jobId);
    expect(after).toMatchObject({
      state: "scheduled",
      payload: { doc: 1, title: "secret-b" },
      queue: "search",
      type: "search.refresh",
      tags: ["a", "b"],
      max_attempts: 3,
    });
    const [ev] = await events(first.jobId, "debounced");
    expect(ev).toBeDefined();
    // reset: run time and expiry are now + the new window, counted from the replacing transaction
    expect(ms(after.run_at, ev!.at)).toBe(30_000);
    const b = await bindingOf(first.jobId);
    expect(b?.expires_at.getTime()).toBe(after.run_at.getTime());
    expect(b?.ttl_ms).toBe("30000");
    expect(ev!.data.priorRequestDigest).toBe(before.request_digest);
    expect(ev!.data.requestDigest).toBe(after.request_digest);
    expect(ev!.data.priorRequestDigest).not.toBe(ev!.data.requestDigest);
    expect(b?.request_digest).toBe(after.request_digest);
    expect(JSON.stringify(ev!.data)).not.toContain("secret");
    expect(JSON.stringify(ev!.data)).not.toContain(key);
    expect(await t.count("job", `key_hash = (select key_hash from workhorse.job where id = '${first.jobId}')`)).toBe(1);
  });

  test("preserve replaces the definition but keeps the run time and the expiry", async () => {
    const q = t.queue();
    const key = fresh();
    const opts: EnqueueOptions = { debounce: { key, windowMs: WINDOW, schedule: "preserve" } };
    const first = await q.enqueueWithResult("t", { v: 1 }, opts);
    const before = await job(first.jobId);
    const bBefore = await bindingOf(first.jobId);
    const again = await q.enqueueWithResult("t", { v: 2 }, opts);
    expect(again).toMatchObject({ jobId: first.jobId, outcome: "replaced" });
    const after = await job(first.jobId);
    expect(after.payload).toEqual({ v: 2 });
    expect(after.run_at.getTime()).toBe(before.run_at.getTime());
    expect((await bindingOf(first.jobId))?.expires_at.getTime()).toBe(bBefore?.expires_at.getTime());
    expect((await bindingOf(first.jobId))?.schedule).toBe("preserve");
    expect(await events(first.jobId, "debounced")).toHaveLength(1);
  });

  test("reset switched to preserve with a larger window: findBinding shows the window that holds", async () => {
    const q = t.queue();
    const key = fresh();
    const first = await q.enqueueWithResult("t", { v: 1 }, { debounce: { key, windowMs: 1_000 } });
    const b0 = await bindingOf(first.jobId);
    const again = await q.enqueueWithResult(
      "t",
      { v: 2 },
      { debounce: { key, windowMs: 5_000, schedule: "preserve" } },
    );
    expect(again).toMatchObject({ jobId: first.jobId, outcome: "replaced" });
    const b = await bindingOf(first.jobId);
    expect(b?.expires_at.getTime()).toBe(b0?.expires_at.getTime());
    const info = await q.findBinding({ key });
    expect(info).toMatchObject({ schedule: "preserve", ttlMs: 1_000 });
    expect(info!.expiresAt!.getTime() - b!.created_at.getTime()).toBe(info!.ttlMs);
  });

  test("maxWaitMs: reset never moves the run time past the first acceptance + maxWaitMs", async () => {
    const q = t.queue();
    const key = fresh();
    const opts: EnqueueOptions = { debounce: { key, windowMs: 10_000, maxWaitMs: 15_000 } };
    const first = await q.enqueueWithResult("search.reindex", { v: 0 }, opts);
    const b0 = await bindingOf(first.jobId);
    expect(b0?.max_wait_ms).toBe("15000");
    // 2 s later: now + window (12 s after acceptance) is inside the cap.
    await age(first.jobId, 2_000);
    expect(await q.enqueueWithResult("search.reindex", { v: 1 }, opts)).toMatchObject({
      jobId: first.jobId,
      outcome: "replaced",
    });
    let b = await bindingOf(first.jobId);
    let j = await job(first.jobId);
    const [ev1] = await events(first.jobId, "debounced");
    expect(ms(j.run_at, ev1!.at)).toBe(10_000);
    // 9 s after acceptance (window still open): now + window would be 19 s; the cap is 15 s.
    await age(first.jobId, 7_000);
    expect(await q.enqueueWithResult("search.reindex", { v: 2 }, opts)).toMatchObject({
      jobId: first.jobId,
      outcome: "replaced",
    });
    b = await bindingOf(first.jobId);
    j = await job(first.jobId);
    expect(ms(j.run_at, b!.created_at)).toBe(15_000);
    expect(b!.expires_at.getTime()).toBe(j.run_at.getTime());
    expect(b!.created_at.getTime()).toBe(j.created_at.getTime()); // the first acceptance never moves
    const evs = await events(first.jobId, "debounced");
    expect(new Date(evs[1]!.data.maxWaitUntil as string).getTime()).toBe(b!.created_at.getTime() + 15_000);
  });

  test("a later request with a smaller maxWaitMs tightens the cap; none can lift it", async () => {
    const q = t.queue();
    const key = fresh();
    const first = await q.enqueueWithResult("t", {}, { debounce: { key, windowMs: 10_000, maxWaitMs: 20_000 } });
    await q.enqueueWithResult("t", {}, { debounce: { key, windowMs: 10_000, maxWaitMs: 12_000 } });
    expect((await bindingOf(first.jobId))?.max_wait_ms).toBe("12000");
    await age(first.jobId, 5_000);
    await q.enqueueWithResult("t", {}, { debounce: { key, windowMs: 10_000 } });
    const b = await bindingOf(first.jobId);
    expect(b?.max_wait_ms).toBe("12000");
    expect(ms((await job(first.jobId)).run_at, b!.created_at)).toBe(12_000);
  });

  test("window open but the job is active or has ended: non_replaceable / not_pending, nothing written but the observation", async () => {
    const q = t.queue({ observations: { flushIntervalMs: 10 } });
    const activeKey = fresh("active");
    const a = await q.enqueueWithResult("t", { v: 1 }, { debounce: { key: activeKey, windowMs: WINDOW } });
    await t.sql("update workhorse.job set state = 'active', attempt = 1, started_at = now() where id = $1", [a.jobId]);
    const endedKey = fresh("ended");
    const e = await q.enqueueWithResult("t", { v: 1 }, { debounce: { key: endedKey, windowMs: WINDOW } });
    await q.cancel({ jobIds: [e.jobId] }, ctx);
    const retriedKey = fresh("retried");
    const r = await q.enqueueWithResult("t", { v: 1 }, { debounce: { key: retriedKey, windowMs: WINDOW } });
    // back to scheduled for a retry: it has started before
    await t.sql("update workhorse.job set attempt = 1, started_at = now() where id = $1", [r.jobId]);

    const before = await writes();
    const results = [
      await q.enqueueWithResult("t", { v: 2 }, { debounce: { key: activeKey, windowMs: WINDOW } }),
      await q.enqueueWithResult("t", { v: 2 }, { debounce: { key: endedKey, windowMs: WINDOW } }),
      await q.enqueueWithResult("t", { v: 2 }, { debounce: { key: retriedKey, windowMs: WINDOW } }),
    ];
    expect(results).toMatchObject([
      { jobId: a.jobId, outcome: "non_replaceable", reason: "not_pending" },
      { jobId: e.jobId, outcome: "non_replaceable", reason: "not_pending" },
      { jobId: r.jobId, outcome: "non_replaceable", reason: "not_pending" },
    ]);
    expect(await writes()).toEqual(before);
    expect((await job(a.jobId)).payload).toEqual({ v: 1 });
    await q.flushObservations();
    const obs = await t.sql<{ outcome: string; reason: string; job_id: string }>(
      "select outcome, reason, job_id from workhorse.enqueue_observation where job_id = any($1::uuid[]) order by id",
      [[a.jobId, e.jobId, r.jobId]],
    );
    expect(obs).toEqual([
      { outcome: "non_replaceable", reason: "not_pending", job_id: a.jobId },
      { outcome: "non_replaceable", reason: "not_pending", job_id: e.jobId },
      { outcome: "non_replaceable", reason: "not_pending", job_id: r.jobId },
    ]);
  });

  test("window over, job not started: non_replaceable / window_elapsed_pending (no second job)", async () => {
    const q = t.queue();
    const key = fresh();
    const first = await q.enqueueWithResult("t", { v: 1 }, { debounce: { key, windowMs: WINDOW } });
    await age(first.jobId, WINDOW + 1_000);
    const before = await writes();
    const r = await q.enqueueWithResult("t", { v: 2 }, { debounce: { key, windowMs: WINDOW } });
    expect(r).toMatchObject({ jobId: first.jobId, outcome: "non_replaceable", reason: "window_elapsed_pending" });
    expect(reasonOf(r)).toBe("window_elapsed_pending");
    expect(await writes()).toEqual(before);
    expect((await job(first.jobId)).payload).toEqual({ v: 1 });
    // Cleanup keeps that binding while its job has not started, so the answer stays the same.
    await q.pruneExpiredBindings();
    expect(await q.enqueueWithResult("t", { v: 3 }, { debounce: { key, windowMs: WINDOW } })).toEqual(r);
    expect(await bindingOf(first.jobId)).toMatchObject({ job_id: first.jobId });
    const after = await writes();
    expect([after.jobs, after.events]).toEqual([before.jobs, before.events]);
    // Once the job has run, cleanup takes the binding and the next request is a new job.
    await t.sql("update workhorse.job set state = 'succeeded', attempt = 1, started_at = now() where id = $1", [
      first.jobId,
    ]);
    await q.pruneExpiredBindings();
    expect(await bindingOf(first.jobId)).toBeUndefined();
    const next = await q.enqueueWithResult("t", { v: 3 }, { debounce: { key, windowMs: WINDOW } });
    expect(next.outcome).toBe("accepted");
    expect(next.jobId).not.toBe(first.jobId);
  });

  test("window over and the job started or ended: a new job is accepted and takes the key", async () => {
    const q = t.queue();
    const key = fresh();
    const first = await q.enqueueWithResult("t", { v: 1 }, { debounce: { key, windowMs: WINDOW } });
    await q.cancel({ jobIds: [first.jobId] }, ctx);
    await age(first.jobId, WINDOW + 1_000);
    const r = await q.enqueueWithResult("t", { v: 2 }, { debounce: { key, windowMs: WINDOW, maxWaitMs: 90_000 } });
    expect(r.outcome).toBe("accepted");
    expect(r.jobId).not.toBe(first.jobId);
    const b = await bindingOf(r.jobId);
    expect(b).toMatchObject({ job_id: r.jobId, mode: "debounce", max_wait_ms: "90000" });
    const j = await job(r.jobId);
    expect(b!.created_at.getTime()).toBe(j.created_at.getTime());
    expect(ms(j.run_at, j.created_at)).toBe(WINDOW);
    expect((await job(first.jobId)).state).toBe("canceled");
  });

  test("a key held by idempotency or throttle: non_replaceable / incompatible_key_mode, nothing written", async () => {
    const q = t.queue();
    for (const held of [{ idempotency: { key: fresh() } }, { throttle: { key: fresh(), windowMs: WINDOW } }]) {
      const key = (held.idempotency ?? held.throttle)!.key;
      const owner = await q.enqueueWithResult("t", { v: 1 }, held as EnqueueOptions);
      const before = await writes();
      const r = await q.enqueueWithResult("t", { v: 1 }, { debounce: { key, windowMs: WINDOW } });
      expect(r).toMatchObject({ jobId: owner.jobId, outcome: "non_replaceable", reason: "incompatible_key_mode" });
      expect(await writes()).toEqual(before);
    }
  });

  test("40 concurrent debounce requests on one key: one job, one accepted, 39 replaced, every caller gets the id", async () => {
    const q = t.queue();
    const key = fresh("burst");
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        q.enqueueWithResult("search.reindex", { edit: i }, { debounce: { key, windowMs: WINDOW } }),
      ),
    );
    const ids = new Set(results.map((r) => r.jobId));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.outcome === "accepted")).toHaveLength(1);
    expect(results.filter((r) => r.outcome === "replaced")).toHaveLength(39);
    const [id] = [...ids] as [string];
    expect(await t.count("job", `key_hash = (select key_hash from workhorse.job where id = '${id}')`)).toBe(1);
    const evs = await events(id, "debounced");
    expect(evs).toHaveLength(39);
    // none is lost: the replacements chain from the first request's digest to the last one's
    for (let i = 1; i < evs.length; i++) {
      expect(evs[i]!.data.priorRequestDigest).toBe(evs[i - 1]!.data.requestDigest);
    }
    expect(evs[38]!.data.requestDigest).toBe((await job(id)).request_digest);
  });
});

describe("throttle", () => {
  test("first accepted; an equivalent request in the window is coalesced (nothing written); a different one conflicts; after the window a new job", async () => {
    const q = t.queue({ observations: { flushIntervalMs: 10 } });
    const key = fresh();
    const opts: EnqueueOptions = { throttle: { key, windowMs: WINDOW } };
    const first = await q.enqueueWithResult("order.shipped", { order: 7 }, opts);
    expect(first.outcome).toBe("accepted");
    const b = await bindingOf(first.jobId);
    expect(b).toMatchObject({ mode: "throttle", schedule: null, ttl_ms: "60000" });
    expect(ms(b!.expires_at, b!.created_at)).toBe(WINDOW);
    expect((await job(first.jobId)).state).toBe("ready");

    const before = await writes();
    expect(await q.enqueueWithResult("order.shipped", { order: 7 }, opts)).toMatchObject({
      jobId: first.jobId,
      outcome: "coalesced",
    });
    expect(await writes()).toEqual(before);

    const err = await q.enqueue("order.shipped", { order: 8 }, opts).catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err).toMatchObject({ existingJobId: first.jobId, conflictingFields: ["payload"], existingMode: "throttle" });
    expect(await writes()).toEqual(before);

    await q.flushObservations();
    const obs = await t.sql<{ outcome: string; reason: string | null }>(
      "select outcome, reason from workhorse.enqueue_observation where job_id = $1 order by id",
      [first.jobId],
    );
    expect(obs).toEqual([
      { outcome: "coalesced", reason: null },
      { outcome: "conflict", reason: null },
    ]);

    await age(first.jobId, WINDOW);
    const next = await q.enqueueWithResult("order.shipped", { order: 8 }, opts);
    expect(next.outcome).toBe("accepted");
    expect(next.jobId).not.toBe(first.jobId);
  });

  test("coalesced whatever the first job's state (succeeded, canceled)", async () => {
    const q = t.queue();
    const key = fresh();
    const opts: EnqueueOptions = { throttle: { key, windowMs: WINDOW } };
    const first = await q.enqueueWithResult("t", { v: 1 }, opts);
    await t.sql(
      "update workhorse.job set state = 'succeeded', attempt = 1, started_at = now(), finished_at = now() where id = $1",
      [first.jobId],
    );
    expect(await q.enqueueWithResult("t", { v: 1 }, opts)).toMatchObject({ jobId: first.jobId, outcome: "coalesced" });
  });

  test("runAt is allowed and fingerprinted", async () => {
    const q = t.queue();
    const key = fresh();
    const runAt = new Date(Date.now() + 3_600_000);
    const first = await q.enqueueWithResult("t", {}, { throttle: { key, windowMs: WINDOW }, runAt });
    expect((await job(first.jobId)).run_at.getTime()).toBe(runAt.getTime());
    expect(await q.enqueueWithResult("t", {}, { throttle: { key, windowMs: WINDOW }, runAt })).toMatchObject({
      jobId: first.jobId,
      outcome: "coalesced",
    });
    const err = await q
      .enqueue("t", {}, { throttle: { key, windowMs: WINDOW }, runAt: new Date(runAt.getTime() + 1) })
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err.conflictingFields).toEqual(["runAt"]);
  });
});

describe("one key holds one mode (3 x 3)", () => {
  const modes: KeyMode[] = ["idempotency", "debounce", "throttle"];
  const optionsFor = (mode: KeyMode, key: string): EnqueueOptions =>
    mode === "idempotency"
      ? { idempotency: { key, ttlMs: WINDOW } }
      : mode === "debounce"
        ? { debounce: { key, windowMs: WINDOW } }
        : { throttle: { key, windowMs: WINDOW } };
  const same: Record<KeyMode, string> = { idempotency: "replayed", debounce: "replaced", throttle: "coalesced" };
  for (const held of modes) {
    for (const asked of modes) {
      test(`${asked} on a key held by ${held}`, async () => {
        const q = t.queue();
        const key = fresh(`${held}-${asked}`);
        const owner = await q.enqueueWithResult("t", { v: 1 }, optionsFor(held, key));
        expect(owner.outcome).toBe("accepted");
        const before = await writes();
        const r = await q.enqueueWithResult("t", { v: 1 }, optionsFor(asked, key)).catch((e) => e);
        if (held === asked) {
          expect(r).toMatchObject({ jobId: owner.jobId, outcome: same[asked] });
        } else if (asked === "debounce") {
          expect(r).toMatchObject({ jobId: owner.jobId, outcome: "non_replaceable", reason: "incompatible_key_mode" });
          expect(await writes()).toEqual(before);
        } else {
          expect(r).toBeInstanceOf(EnqueueIdempotencyConflictError);
          expect(r.existingJobId).toBe(owner.jobId);
          expect(r.existingMode).toBe(held);
          expect(r.conflictingFields).toContain("mode");
          expect(await writes()).toEqual(before);
        }
        expect((await bindingOf(owner.jobId))?.mode).toBe(held);
      });
    }
  }
});

describe("batches follow the same rules request by request", () => {
  test("a second debounce request for a key in the same batch replaces the first one's job; throttle repeats coalesce", async () => {
    const q = t.queue();
    const [d, i, th] = [fresh("d"), fresh("i"), fresh("th")];
    const results = await q.enqueueManyWithResults([
      { type: "t", payload: { v: 1 }, options: { debounce: { key: d, windowMs: WINDOW } } },
      { type: "t", payload: { v: 1 }, options: { idempotency: { key: i } } },
      { type: "t", payload: { v: 2 }, options: { debounce: { key: d, windowMs: WINDOW } } },
      { type: "t", payload: { v: 1 }, options: { throttle: { key: th, windowMs: WINDOW } } },
      { type: "u", payload: { keyless: true }, options: { tags: ["x", "y"] } },
      { type: "t", payload: { v: 1 }, options: { throttle: { key: th, windowMs: WINDOW } } },
      { type: "t", payload: { v: 1 }, options: { idempotency: { key: i } } },
    ]);
    expect(results.map((r) => r.outcome)).toEqual([
      "accepted",
      "accepted",
      "replaced",
      "accepted",
      "accepted",
      "coalesced",
      "replayed",
    ]);
    expect(results[2]!.jobId).toBe(results[0]!.jobId);
    expect(results[5]!.jobId).toBe(results[3]!.jobId);
    expect(results[6]!.jobId).toBe(results[1]!.jobId);
    expect(new Set(results.map((r) => r.jobId)).size).toBe(4);
    expect((await job(results[0]!.jobId)).payload).toEqual({ v: 2 });
    expect((await job(results[4]!.jobId)).tags).toEqual(["x", "y"]);
    expect(await events(results[0]!.jobId, "debounced")).toHaveLength(1);

    // A later batch: replaced, non_replaceable (key held by idempotency) and coalesced, with reasons.
    const later = await q.enqueueManyWithResults([
      { type: "t", payload: { v: 3 }, options: { debounce: { key: d, windowMs: WINDOW } } },
      { type: "t", payload: { v: 1 }, options: { debounce: { key: i, windowMs: WINDOW } } },
      { type: "t", payload: { v: 1 }, options: { throttle: { key: th, windowMs: WINDOW } } },
    ]);
    expect(later).toMatchObject([
      { jobId: results[0]!.jobId, outcome: "replaced" },
      { jobId: results[1]!.jobId, outcome: "non_replaceable", reason: "incompatible_key_mode" },
      { jobId: results[3]!.jobId, outcome: "coalesced" },
    ]);
  });

  test("a throttle-only batch coalesces equivalent duplicates and reports a conflict by ordinal", async () => {
    const q = t.queue();
    const th = fresh("th");
    const results = await q.enqueueManyWithResults([
      { type: "t", payload: { v: 1 }, options: { throttle: { key: th, windowMs: WINDOW } } },
      { type: "t", payload: { v: 1 }, options: { throttle: { key: th, windowMs: WINDOW } } },
    ]);
    expect(results).toMatchObject([
      { jobId: results[0]!.jobId, outcome: "accepted" },
      { jobId: results[0]!.jobId, outcome: "coalesced" },
    ]);
    const before = await writes();
    const err = await q
      .enqueueMany([
        { type: "t", payload: {}, options: { throttle: { key: fresh(), windowMs: WINDOW } } },
        { type: "t", payload: { v: 9 }, options: { throttle: { key: th, windowMs: WINDOW } } },
      ])
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err).toMatchObject({ ordinal: 2, conflictingFields: ["payload"], existingJobId: results[0]!.jobId });
    expect(await writes()).toEqual(before);
  });

  test("a conflict in a batch holding debounce names its ordinal and rolls the whole batch back", async () => {
    const q = t.queue();
    const idem = fresh("i");
    const owner = await q.enqueue("t", { v: 1 }, { idempotency: { key: idem } });
    const before = await writes();
    const err = await q
      .enqueueMany([
        { type: "t", payload: {}, options: { debounce: { key: fresh("zz"), windowMs: WINDOW } } },
        { type: "t", payload: {}, options: { debounce: { key: fresh("aa"), windowMs: WINDOW } } },
        { type: "t", payload: { v: 2 }, options: { idempotency: { key: idem } } },
      ])
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err).toMatchObject({ ordinal: 3, existingJobId: owner, conflictingFields: ["payload"] });
    expect(await writes()).toEqual(before);
  });

  test("two requests of a batch holding debounce for one new key conflict: no job is named (it rolled back)", async () => {
    const q = t.queue();
    const idem = fresh("i");
    const before = await writes();
    const err = await q
      .enqueueMany([
        { type: "t", payload: { v: 1 }, options: { idempotency: { key: idem } } },
        { type: "t", payload: {}, options: { debounce: { key: fresh("d"), windowMs: WINDOW } } },
        { type: "t", payload: { v: 2 }, options: { idempotency: { key: idem } } },
      ])
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err).toMatchObject({ ordinal: 3, existingJobId: null, conflictingFields: ["payload"] });
    expect((err as Error).message).toContain("an earlier request of the same batch");
    expect((err as Error).message).not.toContain("bound to job");
    expect(await writes()).toEqual(before);
  });
});

describe("in the caller's transaction (withClient)", () => {
  test("accepted and replaced inside the transaction; a rollback leaves nothing, a commit keeps one job", async () => {
    const q = t.queue();
    const key = fresh("tx");
    const before = await writes();
    const client = await t.pool.connect();
    try {
      await client.query("begin");
      const tx = q.withClient(client);
      const a = await tx.enqueueWithResult("t", { v: 1 }, { debounce: { key, windowMs: WINDOW } });
      const b = await tx.enqueueWithResult("t", { v: 2 }, { debounce: { key, windowMs: WINDOW } });
      expect([a.outcome, b.outcome, b.jobId]).toEqual(["accepted", "replaced", a.jobId]);
      await client.query("rollback");
      expect(await writes()).toEqual(before);

      await client.query("begin");
      const c = await tx.enqueueWithResult("t", { v: 1 }, { debounce: { key, windowMs: WINDOW } });
      const d = await tx.enqueueWithResult("t", { v: 3 }, { debounce: { key, windowMs: WINDOW } });
      const th1 = await tx.enqueueWithResult("t", {}, { throttle: { key: `${key}-t`, windowMs: WINDOW } });
      const th2 = await tx.enqueueWithResult("t", {}, { throttle: { key: `${key}-t`, windowMs: WINDOW } });
      const many = await tx.enqueueManyWithResults([
        { type: "t", payload: { v: 4 }, options: { debounce: { key, windowMs: WINDOW } } },
        { type: "t", payload: {}, options: { throttle: { key: `${key}-t`, windowMs: WINDOW } } },
      ]);
      await client.query("commit");
      expect([c.outcome, d.outcome, d.jobId]).toEqual(["accepted", "replaced", c.jobId]);
      expect([th1.outcome, th2.outcome, th2.jobId]).toEqual(["accepted", "coalesced", th1.jobId]);
      expect(many).toMatchObject([
        { jobId: c.jobId, outcome: "replaced" },
        { jobId: th1.jobId, outcome: "coalesced" },
      ]);
      expect((await job(c.jobId)).payload).toEqual({ v: 4 });
      expect(await events(c.jobId, "debounced")).toHaveLength(2);
    } finally {
      client.release();
    }
  });
});

describe("validation: typed errors, nothing written", () => {
  const cases: Array<[string, EnqueueOptions, string]> = [
    ["windowMs 0", { debounce: { key: "k", windowMs: 0 } }, "options.debounce.windowMs"],
    ["windowMs over 365 days", { throttle: { key: "k", windowMs: 31_536_000_001 } }, "options.throttle.windowMs"],
    ["windowMs not an integer", { debounce: { key: "k", windowMs: 1.5 } }, "options.debounce.windowMs"],
    [
      "maxWaitMs below windowMs",
      { debounce: { key: "k", windowMs: 1000, maxWaitMs: 999 } },
      "options.debounce.maxWaitMs",
    ],
    [
      "maxWaitMs over 365 days",
      { debounce: { key: "k", windowMs: 1000, maxWaitMs: 31_536_000_001 } },
      "options.debounce.maxWaitMs",
    ],
    ["runAt with debounce", { debounce: { key: "k", windowMs: 1000 }, runAt: new Date() }, "options.runAt"],
    [
      "unknown schedule",
      { debounce: { key: "k", windowMs: 1000, schedule: "later" as "reset" } },
      "options.debounce.schedule",
    ],
    [
      "schedule on throttle",
      { throttle: { key: "k", windowMs: 1000, schedule: "reset" } as never },
      "options.throttle.schedule",
    ],
    [
      "debounce with throttle",
      { debounce: { key: "k", windowMs: 1000 }, throttle: { key: "k", windowMs: 1000 } },
      "options.throttle",
    ],
    [
      "idempotency with debounce",
      { idempotency: { key: "k" }, debounce: { key: "k", windowMs: 1000 } },
      "options.debounce",
    ],
    ["empty debounce key", { debounce: { key: "", windowMs: 1000 } }, "options.debounce.key"],
  ];
  test.each(cases)("%s is rejected", async (_name, options, option) => {
    const q = t.queue();
    const before = await writes();
    const err = await q.enqueueWithResult("t", {}, options).catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueValidationError);
    expect((err as EnqueueValidationError).option).toBe(option);
    const batchErr = await q.enqueueMany([{ type: "t", payload: {}, options }]).catch((e) => e);
    expect(batchErr).toBeInstanceOf(EnqueueValidationError);
    expect((batchErr as EnqueueValidationError).option).toBe(`requests[0].${option}`);
    expect(await writes()).toEqual(before);
  });

  test("maxWaitMs equal to windowMs is allowed", async () => {
    const q = t.queue();
    const r = await q.enqueueWithResult("t", {}, { debounce: { key: fresh(), windowMs: 1000, maxWaitMs: 1000 } });
    expect(r.outcome).toBe("accepted");
  });
});

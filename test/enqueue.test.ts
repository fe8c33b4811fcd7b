import { createHmac } from "node:crypto";
import { beforeAll, describe, expect, test } from "vitest";
import {
  EnqueueIdempotencyConflictError,
  EnqueueValidationError,
  JobNotFoundError,
  keyDigestOf,
  keyLengthOf,
  keyPreviewOf,
  PurgeNotAllowedError,
  WorkhorseDatabaseError,
} from "../lib/enqueue";
import { distributedTests } from "./citus";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
/** The installation secret that the first migrate() stored (tests may read it; operators back it up). */
let secret: Buffer;
beforeAll(async () => {
  await t.ready();
  secret = (await t.sql<{ key_secret: Buffer }>("select key_secret from workhorse.installation"))[0]!.key_secret;
});
/** The keyed hash of docs/enqueue.md written out independently of lib/enqueue: HMAC-SHA256(secret, UTF-8(scope) 0x1F UTF-8(key)). */
const keyHash = (scope: string, key: string) =>
  createHmac("sha256", secret).update(`${scope}\u001f${key}`, "utf8").digest();

let n = 0;
/** A fresh key per test, so tests in this file never share a binding. */
const fresh = (p = "k") => `${p}-${++n}-${Date.now()}`;

describe("keys are hashed, previewed and digested in the process", () => {
  test("the key hash is HMAC-SHA256(installation secret, scope 0x1F key) and the digest is its first 12 hex characters", async () => {
    expect(secret).toHaveLength(32);
    const expected = keyHash("invoice-capture", "capture:INV-42");
    const described = await t.queue().describeKey({ scope: "invoice-capture", key: "capture:INV-42" });
    expect(described.keyDigest).toBe(expected.toString("hex").slice(0, 12));
    expect(keyDigestOf(expected)).toBe(expected.toString("hex").slice(0, 12));
  });

  test("the preview shows min(8, floor(n/3)) leading code points and an ellipsis", () => {
    expect(keyPreviewOf("capture:INV-42")).toBe("capt…"); // n = 14 -> 4
    expect(keyPreviewOf("ab")).toBe("…");
    expect(keyPreviewOf("abc")).toBe("a…");
    expect(keyPreviewOf("a".repeat(100))).toBe("aaaaaaaa…");
    expect(keyPreviewOf("😀😀😀😀😀😀")).toBe("😀😀…"); // code points, not UTF-16 units
    expect(keyLengthOf("😀😀😀😀😀😀")).toBe(6);
  });

  test("a keyed result carries the key's preview, digest and length (as describeKey gives them); a keyless one none", async () => {
    const q = t.queue();
    const key = { scope: "result-key", key: "order:7781-result" };
    const described = await q.describeKey(key);
    const expected = {
      keyPreview: described.keyPreview,
      keyDigest: described.keyDigest,
      keyLength: described.keyLength,
    };
    const first = await q.enqueueWithResult("order.place", { n: 1 }, { idempotency: key });
    expect(first).toEqual({ jobId: expect.any(String), outcome: "accepted", ...expected });
    const again = await q.enqueueWithResult("order.place", { n: 1 }, { idempotency: key });
    expect(again).toEqual({ jobId: first.jobId, outcome: "replayed", ...expected });
    const [batched, keyless] = await q.enqueueManyWithResults([
      { type: "order.place", payload: { n: 1 }, options: { idempotency: key } },
      { type: "order.place", payload: { n: 2 } },
    ]);
    expect(batched).toEqual({ jobId: first.jobId, outcome: "replayed", ...expected });
    expect(keyless).toEqual({ jobId: expect.any(String), outcome: "accepted" });
  });
});

describe("accept, replay, conflict", () => {
  test("a first keyed request creates the job, binding and enqueued event with defaults filled in", async () => {
    const q = t.queue();
    const key = fresh("capture:INV");
    const r = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-42" }, { idempotency: { key } });
    expect(r.outcome).toBe("accepted");
    expect(r.jobId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const job = await q.getJob(r.jobId);
    expect(job).toMatchObject({
      id: r.jobId,
      queue: "default",
      type: "invoice.capture",
      payload: { invoiceId: "INV-42" },
      state: "ready",
      attempt: 0,
      maxAttempts: 25,
      tags: [],
      retryPolicy: null,
      deadline: null,
    });
    const binding = await q.findBinding({ key });
    expect(binding).toMatchObject({
      scope: "default",
      jobId: r.jobId,
      mode: "idempotency",
      keyPreview: keyPreviewOf(key),
      keyDigest: keyDigestOf(keyHash("default", key)),
      keyLength: key.length,
      ttlMs: 86_400_000,
      expired: false,
    });
    expect(binding!.expiresAt!.getTime() - binding!.createdAt.getTime()).toBe(86_400_000);
    const events = await t.sql<{ kind: string; data: Record<string, unknown> }>(
      "select kind, data from workhorse.job_timeline where job_id = $1",
      [r.jobId],
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.kind).toBe("enqueued");
    expect(events[0]!.data).toMatchObject({
      scope: "default",
      keyPreview: keyPreviewOf(key),
      keyDigest: keyDigestOf(keyHash("default", key)),
      keyLength: key.length,
      ttlMs: 86_400_000,
      requestDigest: binding!.requestDigest,
    });
    expect(JSON.stringify(events[0]!.data)).not.toContain(key);
  });

  test("a repeated request returns the original id and writes nothing", async () => {
    const q = t.queue();
    const opts = { queue: "billing", idempotency: { key: fresh(), scope: "invoice-capture", ttlMs: 60_000 } };
    const first = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-7", amount: 10 }, opts);
    const before = await t.sql(
      "select (select count(*) from workhorse.job) j, (select count(*) from workhorse.job_event) e",
    );
    const bindingBefore = await q.findBinding(opts.idempotency);
    const again = await q.enqueueWithResult("invoice.capture", { amount: 10, invoiceId: "INV-7" }, opts);
    expect(again).toMatchObject({ jobId: first.jobId, outcome: "replayed" });
    const after = await t.sql(
      "select (select count(*) from workhorse.job) j, (select count(*) from workhorse.job_event) e",
    );
    expect(after).toEqual(before);
    expect(await q.findBinding(opts.idempotency)).toEqual(bindingBefore);
  });

  test("a replay takes no row lock and writes nothing but its observation", async () => {
    const q = t.queue();
    const opts = { idempotency: { key: fresh() } };
    const id = await q.enqueue("t", { a: 1 }, opts);
    const client = await t.pool.connect();
    try {
      // The observation of the replay is written in the caller's transaction (it commits with it);
      // the binding and the job tuples keep xmax 0: nothing locked or updated them.
      await client.query("begin");
      expect(await q.withClient(client).enqueue("t", { a: 1 }, opts)).toBe(id);
      const [{ xid, locked }] = (
        await client.query(
          `select pg_current_xact_id_if_assigned()::text as xid,
                  (select count(*)::int from workhorse.key_binding b where b.job_id = $1 and b.xmax::text <> '0')
                + (select count(*)::int from workhorse.job j where j.id = $1 and j.xmax::text <> '0') as locked`,
          [id],
        )
      ).rows;
      expect(xid).not.toBeNull(); // the observation row
      expect(locked).toBe(0);
      await client.query("commit");
    } finally {
      client.release();
    }
  });

  test("the same key with different work is a typed conflict naming the fields and payload paths", async () => {
    const q = t.queue();
    const key = fresh("capture:INV");
    const opts = { queue: "billing", idempotency: { key, scope: "invoice-capture" } };
    const jobId = await q.enqueue("invoice.capture", { invoiceId: "INV-1", lines: [{ sku: "A", qty: 1 }] }, opts);
    const jobsBefore = await t.count("job");
    const err = await q
      .enqueue(
        "invoice.capture",
        { invoiceId: "INV-1", lines: [{ sku: "A", qty: 2 }], note: "x" },
        { ...opts, tags: ["urgent"], maxAttempts: 3 },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    const c = err as EnqueueIdempotencyConflictError;
    expect(c.existingJobId).toBe(jobId);
    expect(c.conflictingFields).toEqual(["maxAttempts", "payload", "tags"]);
    expect(c.payloadPaths).toEqual(["$.lines[0].qty", "$.note"]);
    expect(c.scope).toBe("invoice-capture");
    expect(c.keyPreview).toBe(keyPreviewOf(key));
    expect(c.keyDigest).toBe(keyDigestOf(keyHash("invoice-capture", key)));
    expect(c.keyLength).toBe(key.length);
    expect(c.ordinal).toBe(1);
    expect(c.storedRequestDigest).toBe((await q.findBinding({ key, scope: "invoice-capture" }))!.requestDigest);
    expect(c.rejectedRequestDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(c.rejectedRequestDigest).not.toBe(c.storedRequestDigest);
    expect(c.message).not.toContain(key);
    expect(JSON.stringify(c.toJSON())).not.toContain(key);
    expect(await t.count("job")).toBe(jobsBefore);
  });

  test("a conflict through the pool keeps the connection (no reconnect for an expected error)", async () => {
    const q = t.queue();
    const opts = { idempotency: { key: fresh() } };
    await q.enqueue("t", 1, opts);
    const pg = await import("pg");
    const pool = new pg.default.Pool({ connectionString: t.url, max: 1 });
    const { Queue } = await import("../lib/enqueue");
    const single = new Queue({ pool, maintenance: false });
    try {
      const c = await pool.connect();
      const pid = (await c.query("select pg_backend_pid() as p")).rows[0].p as number;
      c.release();
      for (let i = 0; i < 5; i++) {
        await expect(single.enqueue("t", 2, opts)).rejects.toBeInstanceOf(EnqueueIdempotencyConflictError);
      }
      const c2 = await pool.connect();
      expect((await c2.query("select pg_backend_pid() as p")).rows[0].p).toBe(pid);
      c2.release();
    } finally {
      await single.close();
      await pool.end();
    }
  });

  test("payload key order, whitespace and tag order/duplicates do not change the fingerprint", async () => {
    const q = t.queue();
    const key = fresh();
    const a = await q.enqueue("t", { b: 1, a: { y: [1, 2], x: "s" } }, { tags: ["b", "a"], idempotency: { key } });
    const b = await q.enqueueWithResult(
      "t",
      { a: { x: "s", y: [1, 2] }, b: 1 },
      { tags: ["a", "b", "a"], idempotency: { key } },
    );
    expect(b).toMatchObject({ jobId: a, outcome: "replayed" });
    expect((await q.getJob(a))!.tags).toEqual(["a", "b"]);
  });

  test("an omitted runAt stays omitted: retrying an immediate request later replays", async () => {
    const q = t.queue();
    const key = fresh();
    const id = await q.enqueue("t", {}, { idempotency: { key } });
    await new Promise((r) => setTimeout(r, 20));
    expect(await q.enqueueWithResult("t", {}, { idempotency: { key } })).toMatchObject({
      jobId: id,
      outcome: "replayed",
    });
    const err = await q
      .enqueue("t", {}, { runAt: new Date(Date.now() + 60_000), idempotency: { key } })
      .catch((e) => e);
    expect((err as EnqueueIdempotencyConflictError).conflictingFields).toEqual(["runAt"]);
  });

  test("a fixed retry policy and the equivalent exponential one are the same request", async () => {
    const q = t.queue();
    const key = fresh();
    const id = await q.enqueue("t", {}, { retryPolicy: { type: "fixed", delayMs: 500 }, idempotency: { key } });
    const r = await q.enqueueWithResult(
      "t",
      {},
      {
        retryPolicy: { type: "exponential", initialDelayMs: 500, multiplier: 1, maxDelayMs: 500 },
        idempotency: { key },
      },
    );
    expect(r).toMatchObject({ jobId: id, outcome: "replayed" });
    expect((await q.getJob(id))!.retryPolicy).toEqual({ initialDelayMs: 500, multiplier: 1, maxDelayMs: 500 });
  });

  test("scope and key choose the binding: the same key in two scopes makes two jobs", async () => {
    const q = t.queue();
    const key = fresh();
    const a = await q.enqueue("t", {}, { idempotency: { key, scope: "s1" } });
    const b = await q.enqueue("t", {}, { idempotency: { key, scope: "s2" } });
    expect(a).not.toBe(b);
  });

  test("requests without a keyed option always create a new job", async () => {
    const q = t.queue();
    const a = await q.enqueueWithResult("t", { same: true });
    const b = await q.enqueueWithResult("t", { same: true });
    expect(a.outcome).toBe("accepted");
    expect(b.outcome).toBe("accepted");
    expect(a.jobId).not.toBe(b.jobId);
  });

  test("a future runAt makes the job scheduled; deadline and timeouts are stored", async () => {
    const q = t.queue();
    const runAt = new Date(Date.now() + 3_600_000);
    const deadline = new Date(runAt.getTime() + 60_000);
    const id = await q.enqueue("t", null, { runAt, deadline, executionTimeoutMs: 5000, concurrencyKey: "c1" });
    const job = await q.getJob(id);
    expect(job).toMatchObject({ state: "scheduled", runAt, deadline, executionTimeoutMs: 5000, concurrencyKey: "c1" });
  });
});

describe("expiry", () => {
  test("after the TTL the key is free again; the old job is left untouched", async () => {
    const q = t.queue();
    const key = fresh();
    const x = await q.enqueue("t", { v: 1 }, { idempotency: { key, ttlMs: 300 } });
    await new Promise((r) => setTimeout(r, 400));
    expect((await q.findBinding({ key }))!.expired).toBe(true);
    const y = await q.enqueueWithResult("t", { v: 2 }, { idempotency: { key, ttlMs: 300 } });
    expect(y.outcome).toBe("accepted");
    expect(y.jobId).not.toBe(x);
    expect((await q.getJob(x))!.state).toBe("ready");
    expect((await q.findBinding({ key }))!.jobId).toBe(y.jobId);
  });

  test("pruneExpiredBindings deletes only expired bindings, oldest first, in bounded batches", async () => {
    const q = t.queue();
    await t.sql("delete from workhorse.key_binding");
    const live = fresh();
    await q.enqueue("t", {}, { idempotency: { key: live } });
    const keys = Array.from({ length: 25 }, () => fresh("exp"));
    await q.enqueueMany(keys.map((key) => ({ type: "t", payload: {}, options: { idempotency: { key } } })));
    await t.sql(
      "update workhorse.key_binding set expires_at = now() - interval '1 minute' where key_preview like 'exp%'",
    );
    expect(await q.pruneExpiredBindings({ limit: 10, maxBatches: 2 })).toBe(20);
    expect(await q.pruneExpiredBindings({ limit: 10 })).toBe(5);
    expect(await t.count("idempotency_binding")).toBe(1);
    expect((await q.findBinding({ key: live }))!.expired).toBe(false);
    await expect(q.pruneExpiredBindings({ limit: 0 })).rejects.toBeInstanceOf(EnqueueValidationError);
  });

  test("runMaintenance prunes and records the run", async () => {
    const q = t.queue();
    const key = fresh();
    await q.enqueue("t", {}, { idempotency: { key } });
    await t.sql("update workhorse.key_binding set expires_at = now() - interval '1 second'");
    await t.sql(
      `insert into workhorse.enqueue_observation (at, outcome, queue, type, scope, key_preview, key_digest, key_length)
       values (now() - interval '8 days', 'replayed', 'q', 't', 's', 'a…', 'abcdefabcdef', 3),
              (now(), 'replayed', 'q', 't', 's', 'a…', 'abcdefabcdef', 3)`,
    );
    const before = await t.count("enqueue_observation");
    const r = await q.runMaintenance();
    expect(r.expiredBindingsDeleted).toBeGreaterThanOrEqual(1);
    expect(r.observationsDeleted).toBe(1);
    expect(await t.count("enqueue_observation")).toBe(before - 1);
    const runs = await t.sql<{ task: string; removed: string }>(
      "select task, removed from workhorse.maintenance_run order by task",
    );
    expect(runs.map((x) => x.task)).toEqual([
      "prune_expired_bindings",
      "prune_finished_jobs",
      "prune_gone_workers",
      "prune_observations",
      "reap_expired_leases",
      "rollup_run_times",
    ]);
  });
});

describe("purge", () => {
  const ctx = { actor: "alice@ops", reason: "customer asked to cancel" };

  test("purging a ready job tombstones it, releases its binding and audits", async () => {
    const q = t.queue();
    const key = fresh();
    const id = await q.enqueue("order.place", { o: 1 }, { idempotency: { key } });
    expect(await q.purge({ jobId: id }, ctx)).toEqual({ purged: 1, releasedBindings: 1 });
    const job = await q.getJob(id);
    expect(job).toMatchObject({ state: "purged", purgedBy: "alice@ops", purgeReason: "customer asked to cancel" });
    expect(job!.purgedAt).toBeInstanceOf(Date);
    expect(await q.findBinding({ key })).toBeNull();
    const events = await t.sql<{ kind: string }>(
      "select kind from workhorse.job_timeline where job_id = $1 order by seq",
      [id],
    );
    expect(events.map((e) => e.kind)).toEqual(["enqueued", "purged"]);
    const audit = await t.sql<{ actor: string; action: string; target: string; result: unknown }>(
      "select actor, action, target, result from workhorse.operator_audit where target = $1",
      [`job:${id}`],
    );
    expect(audit).toEqual([
      {
        actor: "alice@ops",
        action: "purge_job",
        target: `job:${id}`,
        result: { status: "ok", purged: 1, releasedBindings: 1 },
      },
    ]);
    // The key is free: the same request makes a new job.
    const again = await q.enqueueWithResult("order.place", { o: 1 }, { idempotency: { key } });
    expect(again.outcome).toBe("accepted");
    expect(again.jobId).not.toBe(id);
  });

  test("active and terminal jobs are refused and nothing changes", async () => {
    const q = t.queue();
    for (const state of ["active", "succeeded", "failed", "canceled", "purged"]) {
      const key = fresh();
      const id = await q.enqueue("t", {}, { idempotency: { key } });
      await t.sql("update workhorse.job set state = $2 where id = $1", [id, state]);
      const err = await q.purge({ jobId: id }, ctx).catch((e) => e);
      expect(err).toBeInstanceOf(PurgeNotAllowedError);
      expect((err as PurgeNotAllowedError).state).toBe(state);
      expect((await q.getJob(id))!.state).toBe(state);
      expect((await q.findBinding({ key }))!.jobId).toBe(id);
    }
  });

  test("an unknown job id is JobNotFoundError; a malformed one a validation error", async () => {
    const q = t.queue();
    await expect(q.purge({ jobId: "01900000-0000-7000-8000-000000000000" }, ctx)).rejects.toBeInstanceOf(
      JobNotFoundError,
    );
    await expect(q.purge({ jobId: "nope" }, ctx)).rejects.toBeInstanceOf(EnqueueValidationError);
    await expect(
      q.purge({ jobId: "01900000-0000-7000-8000-000000000000" }, { actor: "a", reason: " " }),
    ).rejects.toThrow(/reason/);
  });

  test("purgeQueue purges the ready and scheduled jobs of one queue only", async () => {
    const q = t.queue();
    const ids = await q.enqueueMany([
      { type: "t", payload: 1, options: { queue: "purge-me", idempotency: { key: fresh() } } },
      { type: "t", payload: 2, options: { queue: "purge-me", runAt: new Date(Date.now() + 60_000) } },
      { type: "t", payload: 3, options: { queue: "purge-me" } },
      { type: "t", payload: 4, options: { queue: "keep-me", idempotency: { key: fresh() } } },
    ]);
    await t.sql("update workhorse.job set state = 'active' where id = $1", [ids[2]]);
    expect(await q.purgeQueue("purge-me", ctx)).toEqual({ purged: 2, releasedBindings: 1 });
    const states = await t.sql<{ id: string; state: string }>(
      "select id, state from workhorse.job where id = any($1)",
      [ids],
    );
    const byId = Object.fromEntries(states.map((s) => [s.id, s.state]));
    expect([byId[ids[0]!], byId[ids[1]!], byId[ids[2]!], byId[ids[3]!]]).toEqual([
      "purged",
      "purged",
      "active",
      "ready",
    ]);
  });

  test("a job row deleted by any path takes its binding with it", async () => {
    const q = t.queue();
    const k1 = fresh();
    const id = await q.enqueue("t", {}, { idempotency: { key: k1 } });
    await t.sql("delete from workhorse.job where id = $1", [id]);
    expect(await q.findBinding({ key: k1 })).toBeNull();
  });
});

describe("bad input writes nothing", () => {
  const cases: Array<[string, () => [unknown, unknown, unknown], string]> = [
    ["empty type", () => ["", {}, {}], "type"],
    ["long type", () => ["t".repeat(129), {}, {}], "type"],
    ["control character in queue", () => ["t", {}, { queue: "a\nb" }], "options.queue"],
    ["empty key", () => ["t", {}, { idempotency: { key: "" } }], "options.idempotency.key"],
    ["key over 512 bytes", () => ["t", {}, { idempotency: { key: "é".repeat(257) } }], "options.idempotency.key"],
    [
      "scope over 256 bytes",
      () => ["t", {}, { idempotency: { key: "k", scope: "s".repeat(257) } }],
      "options.idempotency.scope",
    ],
    ["ttl zero", () => ["t", {}, { idempotency: { key: "k", ttlMs: 0 } }], "options.idempotency.ttlMs"],
    ["ttl fraction", () => ["t", {}, { idempotency: { key: "k", ttlMs: 1.5 } }], "options.idempotency.ttlMs"],
    [
      "ttl over 365 days",
      () => ["t", {}, { idempotency: { key: "k", ttlMs: 31_536_000_001 } }],
      "options.idempotency.ttlMs",
    ],
    ["undefined payload", () => ["t", undefined, {}], "payload"],
    ["BigInt payload", () => ["t", { n: 1n }, {}], "payload"],
    ["NaN in payload", () => ["t", { n: Number.NaN }, {}], "payload"],
    ["NUL in payload", () => ["t", { s: "a\u0000b" }, {}], "payload"],
    ["lone surrogate in payload", () => ["t", { s: "\ud800" }, {}], "payload"],
    [
      "cyclic payload",
      () => {
        const o: Record<string, unknown> = {};
        o.self = o;
        return ["t", o, {}];
      },
      "payload",
    ],
    ["payload over 1 MiB", () => ["t", { s: "x".repeat(1024 * 1024) }, {}], "payload"],
    ["33 tags", () => ["t", {}, { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }], "options.tags"],
    ["empty tag", () => ["t", {}, { tags: [""] }], "options.tags[0]"],
    ["maxAttempts 0", () => ["t", {}, { maxAttempts: 0 }], "options.maxAttempts"],
    ["maxAttempts 1001", () => ["t", {}, { maxAttempts: 1001 }], "options.maxAttempts"],
    ["bad retry policy", () => ["t", {}, { retryPolicy: { type: "linear" } }], "options.retryPolicy.type"],
    ["negative delay", () => ["t", {}, { retryPolicy: { type: "fixed", delayMs: -1 } }], "options.retryPolicy.delayMs"],
    ["invalid runAt", () => ["t", {}, { runAt: new Date("nope") }], "options.runAt"],
    ["deadline before runAt", () => ["t", {}, { runAt: new Date(2000), deadline: new Date(1000) }], "options.deadline"],
    ["executionTimeoutMs 0", () => ["t", {}, { executionTimeoutMs: 0 }], "options.executionTimeoutMs"],
    ["unknown option", () => ["t", {}, { priority: 1 }], "options.priority"],
    ["unknown idempotency option", () => ["t", {}, { idempotency: { key: "k", ttl: 5 } }], "options.idempotency.ttl"],
    [
      "two keyed modes",
      () => ["t", {}, { idempotency: { key: "k" }, throttle: { key: "k", windowMs: 5 } }],
      "options.throttle",
    ],
    [
      "debounce with runAt",
      () => ["t", {}, { debounce: { key: "k", windowMs: 5 }, runAt: new Date() }],
      "options.runAt",
    ],
  ];
  test.each(cases)("%s is rejected with EnqueueValidationError naming the option", async (_name, make, option) => {
    const q = t.queue();
    const before = await t.count("job");
    const [type, payload, options] = make();
    const err = await q.enqueue(type as string, payload, options as never).catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueValidationError);
    expect((err as EnqueueValidationError).option).toBe(option);
    expect(await t.count("job")).toBe(before);
  });

  test("a batch over 1,000 requests, or with a bad member, is rejected whole", async () => {
    const q = t.queue();
    const before = await t.count("job");
    const tooMany = Array.from({ length: 1001 }, () => ({ type: "t", payload: {} }));
    await expect(q.enqueueMany(tooMany)).rejects.toMatchObject({ option: "requests" });
    const err = await q
      .enqueueMany([
        { type: "t", payload: {} },
        { type: "", payload: {} },
      ])
      .catch((e) => e);
    expect((err as EnqueueValidationError).option).toBe("requests[1].type");
    expect(await q.enqueueMany([])).toEqual([]);
    expect(await t.count("job")).toBe(before);
  });

  test("PostgreSQL re-checks stored bounds, so a buggy client cannot write an out-of-range row", async () => {
    await expect(
      t.sql(
        `insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts)
         values (gen_random_uuid(), 'q', 't', '{}', 'ready', now(), 0)`,
      ),
    ).rejects.toMatchObject({ code: "23514" });
    await expect(
      t.sql(
        `insert into workhorse.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
           request_digest, ttl_ms, expires_at)
         values ('s', '\\x00', gen_random_uuid(), 'idempotency', 'a…', 3, '\\x00', '\\x00', 0, now())`,
      ),
    ).rejects.toMatchObject({ code: "23514" });
  });

  test("lookups validate too: bad job ids and keys are validation errors", async () => {
    const q = t.queue();
    await expect(q.getJob("not-a-uuid")).rejects.toBeInstanceOf(EnqueueValidationError);
    await expect(q.findBinding({ key: "" })).rejects.toBeInstanceOf(EnqueueValidationError);
    expect(await q.getJob("01900000-0000-7000-8000-000000000000")).toBeNull();
    expect(await q.findBinding({ key: "never-seen" })).toBeNull();
  });
});

describe("caller transactions", () => {
  test("a rolled-back caller transaction leaves no job and no binding", async () => {
    const q = t.queue();
    const key = fresh();
    const client = await t.pool.connect();
    try {
      await client.query("begin");
      const id = await q.withClient(client).enqueue("t", {}, { idempotency: { key } });
      await client.query("rollback");
      expect(await q.getJob(id)).toBeNull();
      expect(await q.findBinding({ key })).toBeNull();
    } finally {
      client.release();
    }
  });

  test("a committed caller transaction keeps job and binding with the caller's own writes", async () => {
    const q = t.queue();
    const key = fresh();
    const client = await t.pool.connect();
    try {
      await client.query("begin");
      const id = await q.withClient(client).enqueue("t", {}, { idempotency: { key } });
      await client.query("commit");
      expect((await q.findBinding({ key }))!.jobId).toBe(id);
    } finally {
      client.release();
    }
  });

  test("under REPEATABLE READ a racing insert of the same key is a retryable 40001", async () => {
    const q = t.queue();
    const key = fresh();
    const c1 = await t.pool.connect();
    const c2 = await t.pool.connect();
    try {
      await c1.query("begin isolation level repeatable read");
      await c2.query("begin isolation level repeatable read");
      await c2.query("select 1"); // take c2's snapshot before c1 commits
      const first = await q.withClient(c1).enqueue("t", {}, { idempotency: { key } });
      await c1.query("commit");
      const err = await q
        .withClient(c2)
        .enqueue("t", {}, { idempotency: { key } })
        .catch((e) => e);
      if (distributedTests()) {
        // Citus has no cluster-wide snapshot: c2's snapshot on the worker that holds the key starts
        // with c2's first statement there, after c1 committed, so it sees the binding and replays.
        expect(err).toBe(first);
      } else {
        expect(err).toBeInstanceOf(WorkhorseDatabaseError);
        expect((err as WorkhorseDatabaseError).sqlState).toBe("40001");
        expect((err as WorkhorseDatabaseError).retryable).toBe(true);
      }
      await c2.query("rollback");
    } finally {
      c1.release();
      c2.release();
    }
  });
});

describe("batches", () => {
  test("results come in input order; a conflict anywhere rolls back the whole batch", async () => {
    const q = t.queue();
    const [k1, k2] = [fresh(), fresh()];
    const existing = await q.enqueue("t", { v: 1 }, { idempotency: { key: k1 } });
    const before = await t.count("job");
    const err = await q
      .enqueueMany([
        { type: "t", payload: { v: 9 }, options: { idempotency: { key: k2 } } },
        { type: "t", payload: {} },
        { type: "t", payload: { v: 2 }, options: { idempotency: { key: k1 } } },
      ])
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect((err as EnqueueIdempotencyConflictError).ordinal).toBe(3);
    expect((err as EnqueueIdempotencyConflictError).existingJobId).toBe(existing);
    expect((err as EnqueueIdempotencyConflictError).payloadPaths).toEqual(["$.v"]);
    expect(await t.count("job")).toBe(before);
    expect(await q.findBinding({ key: k2 })).toBeNull();
  });

  test("two different requests for one new key inside a batch conflict with the first", async () => {
    const q = t.queue();
    const key = fresh();
    const err = await q
      .enqueueMany([
        { type: "t", payload: { v: 1 }, options: { idempotency: { key } } },
        { type: "t", payload: { v: 2 }, options: { idempotency: { key } } },
      ])
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect((err as EnqueueIdempotencyConflictError).ordinal).toBe(2);
    expect((err as EnqueueIdempotencyConflictError).existingJobId).toBeNull();
    expect((err as EnqueueIdempotencyConflictError).conflictingFields).toEqual(["payload"]);
    expect((err as EnqueueIdempotencyConflictError).payloadPaths).toEqual(["$.v"]);
    expect(await q.findBinding({ key })).toBeNull();
  });
});

describe("observations", () => {
  test("replays and conflicts are logged outside the transaction, flushed by close", async () => {
    const q = t.queue({ source: "checkout-api" });
    const key = fresh("obs-key");
    const opts = { queue: "billing", idempotency: { key, scope: "obs" } };
    const id = await q.enqueue("invoice.capture", { a: 1 }, opts);
    await q.enqueue("invoice.capture", { a: 1 }, opts);
    await q.enqueue("invoice.capture", { a: 2 }, opts).catch(() => {});
    await q.close();
    expect(q.observationStats()).toMatchObject({ recorded: 2, written: 2, dropped: 0, buffered: 0 });
    const rows = await t.sql(
      `select outcome, queue, type, scope, key_preview, key_digest, key_length, job_id, conflicting_fields, payload_paths, source
         from workhorse.enqueue_observation where scope = 'obs' order by id`,
    );
    const ident = {
      queue: "billing",
      type: "invoice.capture",
      scope: "obs",
      key_preview: keyPreviewOf(key),
      key_digest: keyDigestOf(keyHash("obs", key)),
      key_length: key.length,
      job_id: id,
      source: "checkout-api",
    };
    expect(rows).toEqual([
      { outcome: "replayed", ...ident, conflicting_fields: null, payload_paths: null },
      { outcome: "conflict", ...ident, conflicting_fields: ["payload"], payload_paths: ["$.a"] },
    ]);
  });

  test("observations under steady load are written in full batches, not one INSERT per replay", async () => {
    const q = t.queue({ observations: { batchSize: 100, flushIntervalMs: 50 } });
    const opts = { idempotency: { key: fresh() } };
    await q.enqueue("t", {}, opts);
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 250; i++) await q.enqueue("t", {}, opts);
      }),
    );
    const during = q.observationStats();
    expect(during.recorded).toBe(1000);
    // At most one INSERT per full batch plus one per timer tick, however fast replays arrive.
    const ticks = Math.ceil((Date.now() - started) / 50);
    expect(during.batches).toBeLessThanOrEqual(1000 / 100 + ticks + 1);
    await q.close();
    expect(q.observationStats()).toMatchObject({ recorded: 1000, written: 1000, dropped: 0, buffered: 0 });
  });

  test("a full buffer drops and counts instead of blocking the enqueue", async () => {
    const q = t.queue({ observations: { maxBuffered: 2, flushIntervalMs: 60_000 } });
    const opts = { idempotency: { key: fresh() } };
    await q.enqueue("t", {}, opts);
    for (let i = 0; i < 5; i++) await q.enqueue("t", {}, opts);
    expect(q.observationStats()).toMatchObject({ recorded: 5, dropped: 3, buffered: 2 });
    await q.close();
    expect(q.observationStats()).toMatchObject({ recorded: 5, written: 2, dropped: 3, buffered: 0 });
  });

  test("a failing observation write is counted as dropped and never reaches the caller", async () => {
    const pg = await import("pg");
    const pool = new pg.default.Pool({ connectionString: t.url, max: 2 });
    const { Queue } = await import("../lib/enqueue");
    const q = new Queue({ pool, maintenance: false, observations: { flushIntervalMs: 60_000 } });
    const opts = { idempotency: { key: fresh() } };
    await q.enqueue("t", {}, opts);
    await q.enqueue("t", {}, opts);
    await pool.query("alter table workhorse.enqueue_observation rename to enqueue_observation_away");
    try {
      await q.close();
      expect(q.observationStats()).toMatchObject({ recorded: 1, written: 0, dropped: 1 });
    } finally {
      await pool.query("alter table workhorse.enqueue_observation_away rename to enqueue_observation");
      await pool.end();
    }
  });
});

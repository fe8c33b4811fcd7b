/**
 * Migration 006 (storage for speed) carries data made by the earlier shape over: keys bound through
 * the old SQL functions still replay, conflict, expire and get released by purge after the upgrade,
 * and no duplicate job is ever created for them.
 */
import { createHmac, randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { EnqueueIdempotencyConflictError, migrate, Queue } from "../lib/enqueue";
import { migrateBefore } from "../lib/enqueue/migrate-before";
import { migrations } from "../lib/enqueue/migrations.generated";
import { dropDatabase, setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const adminUrl = inject("adminUrl");
const name = `workhorse_test_storage_${process.pid}_${randomBytes(4).toString("hex")}`;
let pool: pg.Pool;
const queues: Queue[] = [];

beforeAll(async () => {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  pool = new pg.Pool({ connectionString: url.toString(), max: 5 });
});

afterAll(async () => {
  for (const q of queues) await q.close();
  await pool?.end();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await dropDatabase(admin, name);
  await admin.end();
});

/**
 * The old-format (hex text) fingerprint digests, all fields but the payload, of a default
 * `invoice.capture` request with this TTL: read back through the `idempotency_binding` view from a
 * binding the current core made in the scratch database (so this test does not restate the rules).
 */
async function oldFieldDigests(ttlMs: number): Promise<string[]> {
  const q = t.queue();
  const jobId = await q.enqueue(
    "invoice.capture",
    {},
    {
      queue: "billing",
      idempotency: { key: randomBytes(6).toString("hex"), ttlMs },
    },
  );
  const [row] = await t.sql<{ field_digests: string[] }>(
    "select field_digests from workhorse.idempotency_binding where job_id = $1",
    [jobId],
  );
  const d = row!.field_digests;
  expect(d).toHaveLength(11);
  return [...d.slice(0, 4), ...d.slice(5)];
}

test("keys bound by the old shape replay, conflict, expire and are released by purge after 006; no duplicates", async () => {
  await migrateBefore(pool, 6);
  const { rows: inst } = await pool.query<{ key_secret: Buffer }>("select key_secret from workhorse.installation");
  const secret = inst[0]!.key_secret;
  const scope = "invoice-capture";
  const hmac = (key: string) => createHmac("sha256", secret).update(`${scope}\u001f${key}`, "utf8").digest();

  const oldOne = async (key: string | null, ttlMs: number, payload: unknown) =>
    (
      await pool.query<{ job_id: string }>(
        `select job_id from workhorse.enqueue_one(gen_random_uuid(), 'billing', 'invoice.capture', $1::jsonb, null, 25,
            null, null, null, null, '{}'::text[], $2, $3, $4::bytea, $5, $6, $7, $8::text[], false)`,
        [
          JSON.stringify(payload),
          key === null ? null : "idempotency",
          key === null ? null : scope,
          key === null ? null : hmac(key),
          key === null ? null : "capt…",
          key === null ? null : [...key].length,
          key === null ? null : ttlMs,
          key === null ? null : await oldFieldDigests(ttlMs),
        ],
      )
    ).rows[0]!.job_id;
  const longJob = await oldOne("capture:INV-1", 3_600_000, { invoiceId: "INV-1", amountCents: 500 });
  const shortJob = await oldOne("capture:INV-2", 3_600_000, { invoiceId: "INV-2" });
  const purgeJob = await oldOne("capture:INV-3", 3_600_000, { invoiceId: "INV-3" });
  const keyless = await oldOne(null, 0, { note: "no key" });
  // Its payload digest was taken by PostgreSQL; the process now takes it from the jsonb text it writes
  // (payload-text.ts): numbers with exponents, keys in jsonb's order, escapes and non-ASCII must agree.
  const tricky = { zz: -0, é: [1e21, 1.5e-7, "x\n\u0001"], a: { "\u{1F600}": null, b: [true, {}] } };
  const trickyJob = await oldOne("capture:INV-5", 3_600_000, tricky);
  // One more through the old batch function (jsonb wire format).
  const batchDigests = await oldFieldDigests(3_600_000);
  const { rows: batchRows } = await pool.query<{ job_id: string }>(
    "select job_id from workhorse.enqueue($1::jsonb, false)",
    [
      JSON.stringify([
        {
          ordinal: 1,
          id: "01900000-0000-7000-8000-0000000000b1",
          queue: "billing",
          type: "invoice.capture",
          payload: { invoiceId: "INV-4" },
          max_attempts: 25,
          tags: [],
          mode: "idempotency",
          scope,
          key_hash: hmac("capture:INV-4").toString("hex"),
          key_preview: "capt…",
          key_length: 13,
          ttl_ms: 3_600_000,
          field_digests: batchDigests,
        },
      ]),
    ],
  );
  const batchJob = batchRows[0]!.job_id;
  const { rows: before } = await pool.query<{ job_id: string; expires_at: Date }>(
    "select job_id, expires_at from workhorse.idempotency_binding order by job_id",
  );
  expect(before).toHaveLength(5);

  const m = await migrate(pool);
  expect(m.applied).toEqual(migrations.filter((x) => x.version >= 6).map((x) => x.version)); // 006 and later
  const jobs = async () => Number((await pool.query("select count(*) as n from workhorse.job")).rows[0].n);
  expect(await jobs()).toBe(6);

  // Every binding came over with its owner and expiry.
  const { rows: after } = await pool.query<{ job_id: string; expires_at: Date }>(
    "select job_id, expires_at from workhorse.key_binding order by job_id",
  );
  expect(after).toEqual(before);

  const q = new Queue({ pool, maintenance: false });
  queues.push(q);
  const opts = (key: string, ttlMs = 3_600_000) => ({ queue: "billing", idempotency: { key, scope, ttlMs } });

  // Replay through the single path, the batch path and a caller's transaction.
  expect(
    await q.enqueueWithResult("invoice.capture", { amountCents: 500, invoiceId: "INV-1" }, opts("capture:INV-1")),
  ).toMatchObject({ jobId: longJob, outcome: "replayed" });
  expect(
    await q.enqueueManyWithResults([
      { type: "invoice.capture", payload: { invoiceId: "INV-4" }, options: opts("capture:INV-4") },
      { type: "invoice.capture", payload: { invoiceId: "INV-1", amountCents: 500 }, options: opts("capture:INV-1") },
    ]),
  ).toMatchObject([
    { jobId: batchJob, outcome: "replayed" },
    { jobId: longJob, outcome: "replayed" },
  ]);
  const client = await pool.connect();
  try {
    await client.query("begin");
    expect(
      await q.withClient(client).enqueueWithResult("invoice.capture", { invoiceId: "INV-4" }, opts("capture:INV-4")),
    ).toMatchObject({ jobId: batchJob, outcome: "replayed" });
    await client.query("commit");
  } finally {
    client.release();
  }
  expect(
    await q.enqueueWithResult(
      "invoice.capture",
      { a: { b: [true, {}], "\u{1F600}": null }, é: [1e21, 1.5e-7, "x\n\u0001"], zz: 0 },
      opts("capture:INV-5"),
    ),
  ).toMatchObject({ jobId: trickyJob, outcome: "replayed" });
  expect(await jobs()).toBe(6);

  // Different work under an old key is a conflict that names the old job and the differing fields.
  const err = await q
    .enqueue("invoice.capture", { invoiceId: "INV-1", amountCents: 501 }, opts("capture:INV-1"))
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
  const conflict = err as EnqueueIdempotencyConflictError;
  expect(conflict.existingJobId).toBe(longJob);
  expect(conflict.conflictingFields).toEqual(["payload"]);
  expect(conflict.payloadPaths).toEqual(["$.amountCents"]);
  const err2 = await q
    .enqueue("invoice.capture", { invoiceId: "INV-1", amountCents: 500 }, { ...opts("capture:INV-1"), maxAttempts: 3 })
    .catch((e: unknown) => e);
  expect((err2 as EnqueueIdempotencyConflictError).conflictingFields).toEqual(["maxAttempts"]);

  // findBinding keeps its shape.
  const found = (await q.findBinding({ key: "capture:INV-1", scope }))!;
  expect(found).toMatchObject({ jobId: longJob, mode: "idempotency", ttlMs: 3_600_000, expired: false, keyLength: 13 });
  expect(found.requestDigest).toMatch(/^[0-9a-f]{64}$/);

  // The old job's timeline shows its enqueued entry once (its event row, not a second inline one).
  const timeline = await pool.query<{ kind: string }>(
    "select kind from workhorse.job_timeline where job_id = $1 order by seq",
    [longJob],
  );
  expect(timeline.rows.map((r) => r.kind)).toEqual(["enqueued"]);
  const keylessTimeline = await pool.query<{ kind: string }>(
    "select kind from workhorse.job_timeline where job_id = $1",
    [keyless],
  );
  expect(keylessTimeline.rows.map((r) => r.kind)).toEqual(["enqueued"]);

  // Purge of an old job releases the binding it owns (found through the key columns 006 filled in).
  expect(await q.purge({ jobId: purgeJob }, { actor: "test", reason: "upgrade check" })).toEqual({
    purged: 1,
    releasedBindings: 1,
  });
  const renewed = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-3" }, opts("capture:INV-3"));
  expect(renewed.outcome).toBe("accepted");
  expect(renewed.jobId).not.toBe(purgeJob);

  // An old binding replays until it expires (its expiry came over unchanged, above); once expired,
  // the key is taken by a new job. The expiry is moved into the past rather than waited for, so the
  // test does not depend on how long the steps before it took.
  expect(await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-2" }, opts("capture:INV-2"))).toMatchObject({
    jobId: shortJob,
    outcome: "replayed",
  });
  await pool.query("update workhorse.key_binding set expires_at = now() - interval '1 millisecond' where job_id = $1", [
    shortJob,
  ]);
  const next = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-2" }, opts("capture:INV-2"));
  expect(next.outcome).toBe("accepted");
  expect(next.jobId).not.toBe(shortJob);
  expect(await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-2" }, opts("capture:INV-2"))).toMatchObject({
    jobId: next.jobId,
    outcome: "replayed",
  });
  expect(await jobs()).toBe(8); // 6 old + the renewed INV-3 + the new INV-2: no duplicate anywhere
});

test("a typed-array batch stores each request's own tags, payload, run time and policy, and each job's enqueued entry", async () => {
  const q = t.queue();
  const runAt = new Date(Date.now() + 3_600_000);
  const key = `batch-columns-${randomBytes(4).toString("hex")}`;
  const results = await q.enqueueManyWithResults([
    { type: "a", payload: { n: 1 }, options: { tags: ["x", "y", "z"] } },
    { type: "b", payload: null, options: { queue: "other" } },
    { type: "c", payload: [3], options: { tags: ["solo"], runAt, idempotency: { key, ttlMs: 60_000 } } },
    {
      type: "d",
      payload: "four",
      options: { tags: ["q", "p"], retryPolicy: { type: "fixed", delayMs: 5 }, maxAttempts: 3 },
    },
  ]);
  expect(results.map((r) => r.outcome)).toEqual(["accepted", "accepted", "accepted", "accepted"]);
  const jobs = await Promise.all(results.map((r) => q.getJob(r.jobId)));
  expect(jobs.map((j) => [j!.type, j!.queue, j!.payload, j!.tags, j!.maxAttempts])).toEqual([
    ["a", "default", { n: 1 }, ["x", "y", "z"], 25],
    ["b", "other", null, [], 25],
    ["c", "default", [3], ["solo"], 25],
    ["d", "default", "four", ["p", "q"], 3],
  ]);
  expect(jobs[2]!.runAt.getTime()).toBe(runAt.getTime());
  expect(jobs[2]!.state).toBe("scheduled");
  expect(jobs[3]!.retryPolicy).toEqual({ initialDelayMs: 5, multiplier: 1, maxDelayMs: 5 });

  const entries = await t.sql<{ job_id: string; seq: string; data: Record<string, unknown> }>(
    "select job_id, seq, data from workhorse.job_timeline where job_id = any($1::uuid[]) and kind = 'enqueued'",
    [results.map((r) => r.jobId)],
  );
  expect(entries).toHaveLength(4);
  const byId = new Map(entries.map((e) => [e.job_id, e]));
  const keyed = byId.get(results[2]!.jobId)!;
  const binding = (await q.findBinding({ key }))!;
  expect(keyed.seq).toBe("0");
  expect(keyed.data).toEqual({
    queue: "default",
    runAt: expect.any(String),
    mode: "idempotency",
    scope: "default",
    keyPreview: binding.keyPreview,
    keyDigest: binding.keyDigest,
    keyLength: binding.keyLength,
    ttlMs: 60_000,
    expiresAt: expect.any(String),
    requestDigest: binding.requestDigest,
  });
  expect(new Date(keyed.data.runAt as string).getTime()).toBe(runAt.getTime());
  expect(new Date(keyed.data.expiresAt as string).getTime()).toBe(binding.expiresAt!.getTime());
  expect(Object.keys(byId.get(results[0]!.jobId)!.data).sort()).toEqual(["queue", "runAt"]);
});

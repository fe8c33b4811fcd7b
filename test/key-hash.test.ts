/**
 * The keyed hash (docs/enqueue.md, keys are never stored): HMAC-SHA256 under a per-installation secret, and the upgrade from the
 * plain SHA-256 hashes of earlier versions (a key bound before the upgrade still replays).
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { inspect } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { EnqueueIdempotencyConflictError, EnqueueValidationError, migrate, Queue } from "../lib/enqueue";
import { KeyRing } from "../lib/enqueue/keys";
import { migrateBefore } from "../lib/enqueue/migrate-before";
import { dropDatabase, setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const adminUrl = inject("adminUrl");
const made: { name: string; pool: pg.Pool; queues: Queue[] }[] = [];

/** A brand-new, empty database (not a clone of the migrated template): a separate installation. */
async function freshDatabase() {
  const name = `workhorse_test_keys_${process.pid}_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const entry = { name, pool: new pg.Pool({ connectionString: url.toString(), max: 5 }), queues: [] as Queue[] };
  made.push(entry);
  return {
    pool: entry.pool,
    queue(opts: { keySecret?: string } = {}) {
      const q = new Queue({ pool: entry.pool, maintenance: false, ...opts });
      entry.queues.push(q);
      return q;
    },
  };
}

afterAll(async () => {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  for (const m of made) {
    for (const q of m.queues) await q.close();
    await m.pool.end();
    await dropDatabase(admin, m.name);
  }
  await admin.end();
});

const sha256 = (scope: string, key: string) => createHash("sha256").update(`${scope}\u001f${key}`, "utf8").digest();
const hmac = (secret: Buffer, scope: string, key: string) =>
  createHmac("sha256", secret).update(`${scope}\u001f${key}`, "utf8").digest();
const secretOf = async (pool: pg.Pool) =>
  (await pool.query<{ key_secret: Buffer }>("select key_secret from workhorse.installation")).rows[0]!.key_secret;

describe("each installation has its own secret", () => {
  test("two installations give different digests for one key, and neither is the plain SHA-256", async () => {
    const a = await freshDatabase();
    const b = await freshDatabase();
    await migrate(a.pool);
    await migrate(b.pool);
    const [sa, sb] = [await secretOf(a.pool), await secretOf(b.pool)];
    expect(sa).toHaveLength(32);
    expect(sb).toHaveLength(32);
    expect(sa.equals(sb)).toBe(false);
    const key = "capture:INV-000001";
    const qa = a.queue();
    const qb = b.queue();
    const ja = await qa.enqueue("invoice.capture", {}, { idempotency: { key, scope: "invoice-capture" } });
    const jb = await qb.enqueue("invoice.capture", {}, { idempotency: { key, scope: "invoice-capture" } });
    const da = (await qa.findBinding({ key, scope: "invoice-capture" }))!;
    const db = (await qb.findBinding({ key, scope: "invoice-capture" }))!;
    expect(da.jobId).toBe(ja);
    expect(db.jobId).toBe(jb);
    expect(da.keyDigest).toBe(hmac(sa, "invoice-capture", key).toString("hex", 0, 6));
    expect(db.keyDigest).toBe(hmac(sb, "invoice-capture", key).toString("hex", 0, 6));
    expect(da.keyDigest).not.toBe(db.keyDigest);
    expect(da.keyDigest).not.toBe(sha256("invoice-capture", key).toString("hex", 0, 6));
    // Stored hash = the HMAC, byte for byte.
    const { rows } = await a.pool.query<{ key_hash: Buffer }>("select key_hash from workhorse.idempotency_binding");
    expect(rows.map((r) => r.key_hash.toString("hex"))).toEqual([hmac(sa, "invoice-capture", key).toString("hex")]);
    // A second migrate() keeps the secret: keys keep replaying.
    await migrate(a.pool);
    expect((await secretOf(a.pool)).equals(sa)).toBe(true);
    expect(
      await a.queue().enqueueWithResult("invoice.capture", {}, { idempotency: { key, scope: "invoice-capture" } }),
    ).toMatchObject({ jobId: ja, outcome: "replayed" });
  });

  test("a secret supplied from outside (keySecret / WORKHORSE_KEY_SECRET) replaces the stored one", async () => {
    const outside = randomBytes(32);
    const q = t.queue({ keySecret: outside.toString("hex") });
    const key = `outside-${randomBytes(4).toString("hex")}`;
    const jobId = await q.enqueue("t", {}, { idempotency: { key } });
    const binding = (await q.findBinding({ key }))!;
    expect(binding.jobId).toBe(jobId);
    expect(binding.keyDigest).toBe(hmac(outside, "default", key).toString("hex", 0, 6));
    expect((await q.describeKey({ key })).keyDigest).toBe(binding.keyDigest);

    const previous = process.env.WORKHORSE_KEY_SECRET;
    process.env.WORKHORSE_KEY_SECRET = outside.toString("hex").toUpperCase();
    try {
      const fromEnv = t.queue();
      expect(await fromEnv.enqueueWithResult("t", {}, { idempotency: { key } })).toMatchObject({
        jobId,
        outcome: "replayed",
      });
    } finally {
      if (previous === undefined) delete process.env.WORKHORSE_KEY_SECRET;
      else process.env.WORKHORSE_KEY_SECRET = previous;
    }
    // The stored secret gives another hash, so this queue does not see that binding.
    expect(await t.queue().findBinding({ key })).toBeNull();
  });

  test("a malformed outside secret is refused without repeating it", () => {
    const bad = "not-a-secret-0123456789";
    let err: unknown;
    try {
      t.queue({ keySecret: bad });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(EnqueueValidationError);
    expect((err as Error).message).toMatch(/keySecret: must be 64 hexadecimal characters/);
    expect((err as Error).message).not.toContain(bad);
  });

  test("the secret never shows in the queue's inspection, errors, events, observations or results", async () => {
    const secret = await secretOf(t.pool);
    const hex = secret.toString("hex");
    const q = t.queue();
    const key = `secret-check-${randomBytes(4).toString("hex")}`;
    const first = await q.enqueueWithResult("t", { a: 1 }, { idempotency: { key } });
    const err = await q.enqueue("t", { a: 2 }, { idempotency: { key } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    await q.flushObservations();
    const seen = [
      inspect(q, { depth: 20, showHidden: true }),
      inspect(err, { depth: 20, showHidden: true }),
      JSON.stringify(err),
      JSON.stringify(first),
      JSON.stringify(await q.findBinding({ key })),
      JSON.stringify(await q.describeKey({ key })),
      JSON.stringify(await t.sql("select * from workhorse.job_timeline")),
      JSON.stringify(await t.sql("select * from workhorse.enqueue_observation")),
    ].join("\n");
    expect(seen).not.toContain(hex);
    expect(seen).not.toContain(secret.toString("base64"));
  });
});

/**
 * The fingerprint digests (all fields but the payload) that the core computes for a default
 * `invoice.capture` request with this TTL, read back from a binding it made (then removed) in a
 * database at the current version, so this test does not restate the fingerprint rules.
 */
async function fieldDigests(pool: pg.Pool, scratchScope: string, ttlMs: number): Promise<string[]> {
  const q = new Queue({ pool, maintenance: false, keySecret: randomBytes(32) });
  try {
    const jobId = await q.enqueue(
      "invoice.capture",
      {},
      { idempotency: { key: "scratch", scope: scratchScope, ttlMs } },
    );
    const { rows } = await pool.query<{ field_digests: string[] }>(
      "select field_digests from workhorse.idempotency_binding where job_id = $1",
      [jobId],
    );
    await pool.query("delete from workhorse.job where id = $1", [jobId]);
    const d = rows[0]!.field_digests;
    return [...d.slice(0, 4), ...d.slice(5)];
  } finally {
    await q.close();
  }
}

describe("upgrading from plain SHA-256 key hashes", () => {
  test("a key bound before the upgrade replays (no duplicate job) until it expires, then binds under the HMAC", async () => {
    const db = await freshDatabase();
    await migrateBefore(db.pool, 4);
    const scratch = await freshDatabase();
    await migrate(scratch.pool);
    const digestsFor = (ttlMs: number) => fieldDigests(scratch.pool, "digests", ttlMs);

    const scope = "invoice-capture";
    const longKey = "capture:INV-000042";
    const shortKey = "capture:INV-000043";
    const call = async (key: string, ttlMs: number) =>
      (
        await db.pool.query<{ job_id: string }>(
          `select job_id from workhorse.enqueue_one(gen_random_uuid(), 'default', 'invoice.capture', '{}'::jsonb, null, 25,
              null, null, null, null, '{}'::text[], 'idempotency', $1, $2::bytea, 'capt…', $3, $4, $5::text[], false)`,
          [scope, sha256(scope, key), [...key].length, ttlMs, await digestsFor(ttlMs)],
        )
      ).rows[0]!.job_id;
    const oldJob = await call(longKey, 3_600_000);
    const shortJob = await call(shortKey, 2_500);

    const m = await migrate(db.pool);
    expect(m.applied).toContain(4);
    const { rows: inst } = await db.pool.query<{ until: Date }>(
      "select legacy_key_hashes_until as until from workhorse.installation",
    );
    expect(inst[0]!.until.getTime()).toBeGreaterThan(Date.now() + 3_500_000);

    const q = db.queue();
    const opts = (key: string, ttlMs: number) => ({ idempotency: { key, scope, ttlMs } });
    const jobs = async () => Number((await db.pool.query("select count(*) as n from workhorse.job")).rows[0].n);
    expect(await jobs()).toBe(2);

    // Single path, batch path and a caller's transaction all replay the old binding.
    expect(await q.enqueueWithResult("invoice.capture", {}, opts(longKey, 3_600_000))).toMatchObject({
      jobId: oldJob,
      outcome: "replayed",
    });
    expect(
      await q.enqueueManyWithResults([
        { type: "invoice.capture", payload: {}, options: opts(longKey, 3_600_000) },
        { type: "invoice.capture", payload: {}, options: opts("capture:INV-NEW", 3_600_000) },
      ]),
    ).toMatchObject([{ jobId: oldJob, outcome: "replayed" }, { outcome: "accepted" }]);
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      expect(
        await q.withClient(client).enqueueWithResult("invoice.capture", {}, opts(longKey, 3_600_000)),
      ).toMatchObject({
        jobId: oldJob,
        outcome: "replayed",
      });
      await client.query("commit");
    } finally {
      client.release();
    }
    expect(await jobs()).toBe(3); // the two old jobs + INV-NEW: no duplicate for the old key

    // Different work for the old key is a conflict naming the old job.
    const err = await q
      .enqueue("invoice.capture", { amountCents: 1 }, opts(longKey, 3_600_000))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect((err as EnqueueIdempotencyConflictError).existingJobId).toBe(oldJob);
    expect((err as EnqueueIdempotencyConflictError).conflictingFields).toEqual(["payload"]);

    // Debounce and throttle see the old binding too (single call, with its own statement text, and
    // a batch): the key is held by idempotency, so no second job.
    const debounce = { debounce: { key: longKey, scope, windowMs: 60_000 } };
    expect(await q.enqueueWithResult("invoice.capture", {}, debounce)).toMatchObject({
      jobId: oldJob,
      outcome: "non_replaceable",
      reason: "incompatible_key_mode",
    });
    expect(
      await q.enqueueManyWithResults([
        { type: "invoice.capture", payload: {}, options: debounce },
        {
          type: "invoice.capture",
          payload: {},
          options: { throttle: { key: "capture:INV-T", scope, windowMs: 1000 } },
        },
      ]),
    ).toMatchObject([
      { jobId: oldJob, outcome: "non_replaceable", reason: "incompatible_key_mode" },
      { outcome: "accepted" },
    ]);
    const throttled = await q
      .enqueue("invoice.capture", {}, { throttle: { key: longKey, scope, windowMs: 60_000 } })
      .catch((e: unknown) => e);
    expect((throttled as EnqueueIdempotencyConflictError).existingJobId).toBe(oldJob);
    expect((throttled as EnqueueIdempotencyConflictError).conflictingFields).toContain("mode");
    expect(await jobs()).toBe(4); // + INV-T only

    // findBinding (and so the console's find-by-key) finds the old binding by the raw key.
    const found = (await q.findBinding({ key: longKey, scope }))!;
    expect(found.jobId).toBe(oldJob);
    expect(found.keyDigest).toBe(sha256(scope, longKey).toString("hex", 0, 6));
    expect((await q.describeKey({ key: longKey, scope })).legacyKeyDigest).toBe(found.keyDigest);

    // The short binding replays while live, and after it expires the key binds anew under the HMAC.
    expect(await q.enqueueWithResult("invoice.capture", {}, opts(shortKey, 2_500))).toMatchObject({
      jobId: shortJob,
      outcome: "replayed",
    });
    await new Promise((r) => setTimeout(r, 2_700));
    const renewed = await q.enqueueWithResult("invoice.capture", {}, opts(shortKey, 2_500));
    expect(renewed.outcome).toBe("accepted");
    expect(renewed.jobId).not.toBe(shortJob);
    const secret = await secretOf(db.pool);
    const { rows: bound } = await db.pool.query<{ key_hash: Buffer }>(
      "select key_hash from workhorse.idempotency_binding where job_id = $1",
      [renewed.jobId],
    );
    expect(bound[0]!.key_hash.equals(hmac(secret, scope, shortKey))).toBe(true);
    expect(await q.enqueueWithResult("invoice.capture", {}, opts(shortKey, 2_500))).toMatchObject({
      jobId: renewed.jobId,
      outcome: "replayed",
    });
  });

  test("a new installation has no legacy window", async () => {
    const db = await freshDatabase();
    await migrate(db.pool);
    const { rows } = await db.pool.query("select legacy_key_hashes_until from workhorse.installation");
    expect(rows).toEqual([{ legacy_key_hashes_until: null }]);
  });

  test("the legacy hash is computed only while the window is open, then never again", async () => {
    const secret = randomBytes(32);
    const ring = new KeyRing(null);
    expect(() => ring.identify("s", "k")).toThrow(/not loaded/);
    await ring.load(async () => ({ key_secret: secret, legacy_ms: 300 }));
    // Open window (300 ms + the 5 s margin).
    expect(ring.identify("s", "k").legacyKeyHash?.equals(sha256("s", "k"))).toBe(true);
    expect(ring.identify("s", "k").keyHash.equals(hmac(secret, "s", "k"))).toBe(true);
    expect(ring.legacyWindowOpen(Date.now() + 5_200)).toBe(true);
    expect(ring.legacyWindowOpen(Date.now() + 5_400)).toBe(false);
    // No window: no legacy hash at all (the enqueue statements are the ones without the probe).
    const fresh = new KeyRing(null);
    await fresh.load(async () => ({ key_secret: secret, legacy_ms: 0 }));
    expect(fresh.identify("s", "k").legacyKeyHash).toBeNull();
    expect(fresh.legacyWindowOpen()).toBe(false);
  });
});

// Console read models (lib/console/*) and access helpers against the real test database.

import pg from "pg";
import { v7 as uuidv7 } from "uuid";
import { beforeAll, describe, expect, test, vi } from "vitest";
import { distributedTests } from "./citus";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { listJobs, jobDetail, jobPayload, PAYLOAD_PREVIEW_CHARS } = await import("@/lib/console/reads/jobs");
const { resolveJobId, jobPathMissing } = await import("@/lib/console/reads/open-job");
const { listBindings } = await import("@/lib/console/reads/bindings");
const { listAudit } = await import("@/lib/console/reads/audit");
const { overview, invalidateCounts } = await import("@/lib/console/reads/overview");
const { parseJobFilters, parseBindingFilters, parseAuditFilters, parseObservationFilters } = await import(
  "@/lib/console/reads/filters"
);
const { consoleConfig, hashPassword, passwordMatches, isLoopbackHost } = await import("@/lib/console/databases/config");
const { uuidv7Floor } = await import("@/lib/console/reads/read-queries");

const t = setupQueueTests();
beforeAll(() => t.ready());

describe("jobs", () => {
  test("keyset pages walk newest first without gaps or overlaps, both ways", async () => {
    const q = t.queue();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await q.enqueue("page.test", { i }, { queue: "paging" }));
    const newestFirst = [...ids].reverse();
    const p1 = await listJobs(t.pool, { queue: "paging" }, 3);
    expect(p1.rows.map((r) => r.id)).toEqual(newestFirst.slice(0, 3));
    expect(p1.prev).toBeNull();
    const p2 = await listJobs(t.pool, { queue: "paging", after: p1.next ?? "" }, 3);
    expect(p2.rows.map((r) => r.id)).toEqual(newestFirst.slice(3, 6));
    const p3 = await listJobs(t.pool, { queue: "paging", after: p2.next ?? "" }, 3);
    expect(p3.rows.map((r) => r.id)).toEqual(newestFirst.slice(6));
    expect(p3.next).toBeNull();
    const back = await listJobs(t.pool, { queue: "paging", before: p3.prev ?? "" }, 3);
    expect(back.rows.map((r) => r.id)).toEqual(newestFirst.slice(3, 6));
    const first = await listJobs(t.pool, { queue: "paging", before: back.prev ?? "" }, 3);
    expect(first.rows.map((r) => r.id)).toEqual(newestFirst.slice(0, 3));
    expect(first.prev).toBeNull();
  });

  test("filters by queue, type, state and tag", async () => {
    const q = t.queue();
    const a = await q.enqueue("f.one", {}, { queue: "filters", tags: ["red", "blue"] });
    const b = await q.enqueue("f.two", {}, { queue: "filters", tags: ["blue"], runAt: new Date(Date.now() + 60_000) });
    const ids = async (f: Parameters<typeof listJobs>[1]) => (await listJobs(t.pool, f)).rows.map((r) => r.id);
    expect(await ids({ queue: "filters" })).toEqual([b, a]);
    expect(await ids({ queue: "filters", type: "f.one" })).toEqual([a]);
    expect(await ids({ queue: "filters", state: "scheduled" })).toEqual([b]);
    expect(await ids({ queue: "filters", tag: "red" })).toEqual([a]);
    expect(await ids({ queue: "filters", tag: "green" })).toEqual([]);
  });

  test("a queue filter on a rare state tab reads only the matching queues' entries, prefix kept, both ways", async () => {
    const q = t.queue();
    const a = await q.enqueue("rare.t", {}, { queue: "rareq" });
    const b = await q.enqueue("rare.t", {}, { queue: "rareq-eu" });
    const c = await q.enqueue("rare.t", {}, { queue: "rareq" });
    const d = await q.enqueue("rare.t", {}, { queue: "rareq" });
    await t.sql("update workhorse.job set state = 'failed', finished_at = now() where id = any($1::uuid[])", [
      [a, b, c],
    ]);
    // Newer failed jobs of another queue: a walk by id passes all of them before reaching ours.
    // Ids made here (uuidv7() in SQL is PostgreSQL 18's only), newer than ours; on Citus the row also
    // carries its bucket (the distribution column), read from its id.
    const others = Array.from({ length: 3000 }, () => uuidv7());
    const bucket = distributedTests() ? ["bucket, ", "workhorse.id_bucket(x), "] : ["", ""];
    await t.sql(
      `insert into workhorse.job (${bucket[0]}id, queue, type, payload, state, run_at, max_attempts, finished_at)
       select ${bucket[1]}x, 'rare-other', 'rare.t', '{}', 'failed', now(), 1, now() from unnest($1::uuid[]) x`,
      [others],
    );
    await t.sql("vacuum analyze workhorse.job");
    const statements: { text: string; values: unknown[] }[] = [];
    const db = {
      query: <R extends import("pg").QueryResultRow>(text: string, values: unknown[] = []) => {
        statements.push({ text, values });
        return t.pool.query<R>(text, values);
      },
    };
    const ids = async (f: Parameters<typeof listJobs>[1], limit?: number) =>
      (await listJobs(db, f, limit)).rows.map((r) => r.id);
    expect(await ids({ queue: "rareq", state: "failed" })).toEqual([c, b, a]);
    expect(await ids({ queue: "rareq", state: "failed", after: c }, 1)).toEqual([b]);
    expect(await ids({ queue: "rareq", state: "failed", before: a }, 1)).toEqual([b]);
    expect(await ids({ queue: "rareq-", state: "failed" })).toEqual([b]);
    expect(await ids({ queue: "rareq", state: "canceled" })).toEqual([]);
    expect(await ids({ queue: "rareq", state: "ready" })).toEqual([d]);
    // Every statement of the failed-tab reads: rows of workhorse.job read (kept or filtered) stay
    // near the page size, not the 3,000 of the other queue.
    const rowsRead = (node: Record<string, unknown>): number => {
      const own =
        node["Relation Name"] === "job"
          ? ((node["Actual Rows"] as number) + ((node["Rows Removed by Filter"] as number) ?? 0)) *
            (node["Actual Loops"] as number)
          : 0;
      return own + ((node.Plans as Record<string, unknown>[] | undefined) ?? []).reduce((s, p) => s + rowsRead(p), 0);
    };
    for (const s of statements.filter(
      (s) => s.text.includes("workhorse.job") && (s.values.includes("failed") || s.text.includes("'failed'")),
    )) {
      const { rows } = await t.pool.query(`explain (analyze, format json) ${s.text}`, s.values);
      expect(rowsRead(rows[0]["QUERY PLAN"][0].Plan), s.text).toBeLessThan(100);
    }
  });

  test("job detail carries payload, binding and the enqueued event; unknown ids are null", async () => {
    const q = t.queue();
    const id = await q.enqueue(
      "d.one",
      { html: "<script>x</script>" },
      { idempotency: { key: "detail-key-123", scope: "d" } },
    );
    const d = await jobDetail(t.pool, id);
    expect(await jobPayload(t.pool, id)).toEqual({
      preview: JSON.stringify({ html: "<script>x</script>" }, null, 2),
      truncated: false,
      bytes: Buffer.byteLength(JSON.stringify({ html: "<script>x</script>" }, null, 2)),
    });
    expect(d?.binding).toMatchObject({ scope: "d", keyPreview: "deta…", jobId: id, expired: false });
    expect(d?.events.map((e) => e.kind)).toEqual(["enqueued"]);
    expect(JSON.stringify(d)).not.toContain("detail-key-123");
    expect(await jobDetail(t.pool, "00000000-0000-7000-8000-000000000000")).toBeNull();
    expect(await jobPayload(t.pool, "00000000-0000-7000-8000-000000000000")).toBeNull();
  });

  test("a large payload: the live detail carries none of it, the page a bounded preview with the full size", async () => {
    const q = t.queue();
    const blob = "y".repeat(1_000_000);
    const id = await q.enqueue("d.big", { blob, orderId: "ORD-1" });
    const live = await jobDetail(t.pool, id);
    expect(live?.type).toBe("d.big");
    const wire = JSON.stringify(live);
    expect(wire.includes("yyyy")).toBe(false);
    expect(wire.length).toBeLessThan(5_000);
    const p = await jobPayload(t.pool, id);
    const full = JSON.stringify({ blob, orderId: "ORD-1" }, null, 2);
    expect(p?.truncated).toBe(true);
    expect(p?.bytes).toBe(Buffer.byteLength(full));
    expect(p?.preview === full.slice(0, PAYLOAD_PREVIEW_CHARS)).toBe(true);
  });
});

test("bindings: live soonest-expiring first, expired separately, keyset pages", async () => {
  const q = t.queue();
  for (let i = 0; i < 5; i++) {
    await q.enqueue(
      "b",
      { i },
      // Hours, not minutes: a binding of this test expiring while a later test of the file counts live
      // bindings (the overview's) would change that count under it (seen once on Citus under load).
      { idempotency: { key: `bind-key-${i}-xyz`, scope: "bindings", ttlMs: 3_600_000 * (5 - i) } },
    );
  }
  await q.enqueue("b", {}, { idempotency: { key: "bind-expired-1", scope: "bindings", ttlMs: 1 } });
  await new Promise((r) => setTimeout(r, 10));
  const p1 = await listBindings(t.pool, { status: "live", scope: "bindings" }, 2);
  const p2 = await listBindings(
    t.pool,
    parseBindingFilters({ status: "live", scope: "bindings", after: p1.next ?? "" }),
    2,
  );
  const p3 = await listBindings(
    t.pool,
    parseBindingFilters({ status: "live", scope: "bindings", after: p2.next ?? "" }),
    2,
  );
  const ttls = [...p1.rows, ...p2.rows, ...p3.rows].map((b) => b.ttlMs);
  expect(ttls).toEqual([3_600_000, 7_200_000, 10_800_000, 14_400_000, 18_000_000]);
  expect(p3.next).toBeNull();
  const expired = await listBindings(t.pool, { status: "expired", scope: "bindings" });
  expect(expired.rows.map((b) => [b.ttlMs, b.expired])).toEqual([[1, true]]);
});

test("the bindings list walks the expiry index for a page, live and expired, first page and after a cursor", async () => {
  // 3,000 bindings in a scope of their own: a plan that sorts the table instead of walking
  // key_binding_expires_idx reads them all. (The list's ORDER BY once named the select list's
  // `nullif(expires_at, 'infinity')` alias instead of the column, and no index could order it.)
  await t.sql(
    `insert into workhorse.key_binding (${distributedTests() ? "bucket, " : ""}scope, key_hash, job_id, mode,
                                        key_preview, key_length, field_digests, request_digest, ttl_ms, created_at,
                                        expires_at)
     select ${distributedTests() ? "workhorse.key_bucket('plan-walk', sha256(('plan-walk-' || g)::bytea)), " : ""}
            'plan-walk', sha256(('plan-walk-' || g)::bytea), gen_random_uuid(), 'idempotency', 'p…', 12,
            decode(repeat('ab', 88), 'hex'), sha256(g::text::bytea), 60000, now(),
            now() + (case when g % 2 = 0 then 1 else -1 end) * g * interval '1 second'
       from generate_series(1, 3000) g`,
  );
  await t.sql("analyze workhorse.key_binding");
  const statements: { text: string; values: unknown[] }[] = [];
  const db = {
    query: <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => {
      statements.push({ text, values });
      return t.pool.query<R>(text, values);
    },
  };
  const first = await listBindings(db, { status: "live" }, 20);
  await listBindings(db, parseBindingFilters({ status: "live", after: first.next ?? "" }), 20);
  await listBindings(db, { status: "expired" }, 20);
  expect(statements.length).toBe(3);
  for (const s of statements) {
    const { rows } = await t.pool.query(`explain (analyze, format json) ${s.text}`, s.values);
    const plan = JSON.stringify(rows[0]["QUERY PLAN"]);
    // On Citus the plan holds a shard's remote plan, its index named with the shard's suffix.
    expect(plan, s.text).toContain('"Index Name":"key_binding_expires_idx');
    expect(plan, s.text).not.toContain('"Seq Scan"');
  }
});

test("audit pages do not skip or repeat rows written in the same millisecond", async () => {
  const q = t.queue();
  await t.sql(
    `insert into workhorse.operator_audit (at, actor, action, target, result)
     select now(), 'same-ms', 'enqueue_test', 'job:' || g, '{}'::jsonb from generate_series(1, 5) g`,
  );
  const seen: string[] = [];
  let after: string | null = null;
  do {
    const page = await listAudit(t.pool, parseAuditFilters({ actor: "same-ms", ...(after ? { after } : {}) }), 2);
    seen.push(...page.rows.map((r) => r.target));
    after = page.next;
  } while (after);
  expect(seen.sort()).toEqual(["job:1", "job:2", "job:3", "job:4", "job:5"]);
  await q.close();
});

test("overview counts states per queue and live bindings", async () => {
  const q = t.queue();
  invalidateCounts(t.pool);
  const before = await overview(t.pool);
  await q.enqueue("o", {}, { queue: "ov", idempotency: { key: "ov-key-1", scope: "ov" } });
  await q.enqueue("o", {}, { queue: "ov", idempotency: { key: "ov-key-1", scope: "ov" } });
  await q.enqueue("o", {}, { queue: "ov", runAt: new Date(Date.now() + 60_000) });
  await q.flushObservations();
  invalidateCounts(t.pool);
  const o = await overview(t.pool);
  expect(o.byQueue.find((x) => x.queue === "ov")).toEqual({
    queue: "ov",
    counts: { ready: 1, scheduled: 1 },
    total: 2,
  });
  expect(o.liveBindings.value - before.liveBindings.value).toBe(1);
});

test("filters drop malformed values instead of passing them to SQL", () => {
  expect(parseJobFilters({ state: "bogus", after: "zzz", queue: ["a", "b"], tag: "" })).toEqual({
    queue: "a",
    type: undefined,
    state: undefined,
    tag: undefined,
    after: undefined,
    before: undefined,
  });
  expect(parseBindingFilters({ status: "dead", after: "1_2" })).toMatchObject({ status: "live", after: undefined });
  expect(parseObservationFilters({ since: "forever", after: "1; drop" })).toMatchObject({
    since: undefined,
    after: undefined,
  });
  // A filter the operator asked for but that cannot be read is named, not silently dropped.
  expect(
    parseObservationFilters({ from: "garbage", to: "2026-12-01T02:30", digest: "xyz", outcome: "replayed" }),
  ).toMatchObject({ from: undefined, digest: undefined, outcome: "replayed", invalid: ["digest", "from"] });
  expect(parseObservationFilters({ outcome: "replayed" }).invalid).toEqual([]);
  expect(uuidv7Floor(0x0123456789ab)).toBe("01234567-89ab-0000-0000-000000000000");
});

describe("access", () => {
  test("passwords: plain or scrypt hash, compared in constant time", () => {
    const plain = consoleConfig({ WORKHORSE_CONSOLE_PASSWORD: "hunter2" });
    expect(plain.password && passwordMatches(plain.password, "hunter2")).toBe(true);
    expect(plain.password && passwordMatches(plain.password, "hunter3")).toBe(false);
    const hashed = consoleConfig({ WORKHORSE_CONSOLE_PASSWORD_HASH: hashPassword("s3cret") });
    expect(hashed.password && passwordMatches(hashed.password, "s3cret")).toBe(true);
    expect(hashed.password && passwordMatches(hashed.password, "s3cre")).toBe(false);
    expect(consoleConfig({}).password).toBeNull();
    expect(consoleConfig({ WORKHORSE_CONSOLE_READONLY: "1" }).readOnly).toBe(true);
  });

  test("loopback hosts", () => {
    for (const h of ["127.0.0.1", "127.0.0.1:3000", "localhost:3000", "[::1]:3000", "::1", "127.8.9.10"]) {
      expect(isLoopbackHost(h), h).toBe(true);
    }
    for (const h of ["0.0.0.0", "10.0.0.1:3000", "example.com", "", null])
      expect(isLoopbackHost(h), String(h)).toBe(false);
  });
});

describe("find by key digest at volume", () => {
  test("the observation search is an index scan on the digest, not a table scan", async () => {
    const { OBSERVATIONS_BY_DIGEST_SQL } = await import("@/lib/console/reads/digest");
    // 200,000 observations over 50,000 digests: a plan that reads the table would show here.
    await t.sql(
      `insert into workhorse.enqueue_observation (at, outcome, queue, type, scope, key_preview, key_digest, key_length)
       select now() - (g || ' seconds')::interval, 'replayed', 'obs-volume', 't', 's', 'k…',
              substr(md5((g % 50000)::text), 1, 12), 10
         from generate_series(1, 200000) g`,
    );
    await t.sql("analyze workhorse.enqueue_observation");
    const digest = (await t.sql<{ d: string }>("select substr(md5('4242'), 1, 12) as d"))[0]?.d;
    const [row] = await t.sql<{ "QUERY PLAN": unknown }>(
      `explain (analyze, format json) ${OBSERVATIONS_BY_DIGEST_SQL}`,
      [digest],
    );
    await t.sql("delete from workhorse.enqueue_observation where queue = 'obs-volume'");
    const plan = JSON.stringify(row?.["QUERY PLAN"]);
    expect(plan).not.toContain('"Seq Scan"');
    // An index scan, or a bitmap of one (the planner's pick for a handful of rows), on the digest index.
    expect(plan).toMatch(/"Node Type":"(Bitmap Index Scan|Index Scan|Index Only Scan)"/);
    expect(plan).toContain('"Index Name":"enqueue_observation_key_digest_idx"');
    expect(plan).toContain('"Actual Rows":4');
  });
});

describe("find by key digest: purged jobs", () => {
  const bucket = () => (distributedTests() ? ["bucket, ", "workhorse.id_bucket(x.id), "] : ["", ""]);
  /** Jobs with chosen key hashes (hex), states and purge times (seconds ago). */
  async function insertJobs(rows: { hash: string; state: string; purgedAgoS?: number }[]) {
    const [col, val] = bucket();
    const ids = rows.map(() => uuidv7());
    await t.sql(
      `insert into workhorse.job (${col}id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash, purged_at)
       select ${val}x.id, 'digest-purged', 'd.t', '{}', x.state, now(), 1, 'digest-purged-scope', decode(x.hash, 'hex'),
              case when x.state = 'purged' then now() - x.ago * interval '1 second' end
         from unnest($1::uuid[], $2::text[], $3::text[], $4::int[]) as x(id, hash, state, ago)`,
      [ids, rows.map((r) => r.hash), rows.map((r) => r.state), rows.map((r) => r.purgedAgoS ?? 0)],
    );
    return ids;
  }
  /** A 32-byte key hash (hex) starting with `prefix` (hex). */
  const hashUnder = (prefix: string, tail: number) => prefix + tail.toString(16).padStart(64 - prefix.length, "0");

  test("every statement of the digest read probes an index, the purged jobs' through their digest index", async () => {
    const { lookupDigest } = await import("@/lib/console/reads/digest");
    // 3,000 purged jobs with other digests: a plan that walks the purged jobs reads them all.
    await t.sql(
      `insert into workhorse.job (${bucket()[0]}id, queue, type, payload, state, run_at, max_attempts, key_scope, key_hash,
                                  purged_at)
       select ${bucket()[1]}x.id, 'digest-volume', 'd.t', '{}', 'purged', now(), 1, 'digest-volume', sha256(x.g::text::bytea),
              now() - x.g * interval '1 second'
         from (select g, gen_random_uuid() as id from generate_series(1, 3000) g) x`,
    );
    // Seven purged jobs under one digest: the read stops after the newest five.
    const digest = "d16e57000001";
    await insertJobs(
      Array.from({ length: 7 }, (_, i) => ({ hash: hashUnder(digest, i), state: "purged", purgedAgoS: i })),
    );
    await t.sql("vacuum analyze workhorse.job");
    // Every statement lookupDigest sends, whichever client of the pool sends it.
    const sent: { text: string; values: unknown[] }[] = [];
    class RecordingClient extends pg.Client {
      override query(...args: unknown[]): never {
        // query(text, values) or query({ name, text, values }) (a named statement).
        const [first, second] = args;
        const config =
          typeof first === "object" && first !== null ? (first as { text?: unknown; values?: unknown }) : null;
        const text = config ? config.text : first;
        const values = config ? config.values : second;
        if (typeof text === "string" && /^\s*(select|with)\b/i.test(text)) {
          sent.push({ text, values: Array.isArray(values) ? values : [] });
        }
        return (super.query as (...a: unknown[]) => never)(...args);
      }
    }
    const recording = new pg.Pool({ connectionString: t.url, max: 3, Client: RecordingClient });
    try {
      // Its time: a loaded machine (Citus on two cores) can take longer than the page's 500 ms.
      const found = await lookupDigest(recording, digest, { timeoutMs: 30_000 });
      expect(found.released.map((r) => r.purgedAt)).toHaveLength(5);
      expect(found.releasedComplete).toBe(true);
    } finally {
      await recording.end();
    }
    const plans = new Map<string, string>();
    for (const s of sent) {
      if (/workhorse\.shard_bucket/.test(s.text)) continue; // the layout probe (lib/store/layout.ts)
      const [row] = await t.sql<{ "QUERY PLAN": unknown }>(`explain (analyze, format json) ${s.text}`, s.values);
      plans.set(s.text, JSON.stringify(row?.["QUERY PLAN"]));
    }
    await t.sql("delete from workhorse.job where queue in ('digest-volume', 'digest-purged')");
    const planOf = (table: RegExp) => [...plans].filter(([text]) => table.test(text)).map(([, plan]) => plan);
    // On Citus a plan holds a shard's remote plan, its index named with the shard's suffix.
    const [purged] = planOf(/state = 'purged'/);
    expect(purged).toContain('"Index Name":"job_purged_key_digest_idx');
    expect(purged).not.toContain('"Seq Scan"');
    expect(purged).toContain('"Actual Rows":5');
    const [observations] = planOf(/from workhorse\.enqueue_observation/);
    expect(observations).toContain('"Index Name":"enqueue_observation_key_digest_idx');
    expect(observations).not.toContain('"Seq Scan"');
    // The bindings: on one node a skip scan over the binding primary key. (On Citus each shard scans
    // its bindings for the hash range: lib/store/console/reads.ts, bindingsByDigestDistributed.)
    const [bindings] = planOf(/from workhorse\.key_binding/);
    if (!distributedTests()) {
      expect(bindings).toContain('"Index Name":"key_binding_pkey"');
      expect(bindings).not.toContain('"Seq Scan"');
    }
    expect(plans.size).toBe(3);
  });

  test("the purged jobs under a digest are the ones the statement before migration 029 found", async () => {
    const { lookupDigest } = await import("@/lib/console/reads/digest");
    const { purgedJobsUnderDigest } = await import("@/lib/store/console/keys");
    const digest = "d16e57000002";
    const [older, newer] = await insertJobs([
      { hash: hashUnder(digest, 1), state: "purged", purgedAgoS: 3600 },
      { hash: hashUnder(digest, 2), state: "purged", purgedAgoS: 600 }, // another key, same digest
    ]);
    await insertJobs([
      { hash: hashUnder(digest, 3), state: "failed" }, // not purged: its key is not released
      { hash: hashUnder(digest, 4), state: "succeeded" },
      { hash: hashUnder("d16e57000003", 1), state: "purged", purgedAgoS: 60 }, // the sixth byte differs
      { hash: hashUnder("d16e570000", 5), state: "purged", purgedAgoS: 60 }, // five bytes alike only
    ]);
    const found = await lookupDigest(t.pool, digest, { timeoutMs: 30_000 });
    expect(found.released).toEqual([
      { jobId: newer, scope: "digest-purged-scope", purgedAt: expect.any(String) },
      { jobId: older, scope: "digest-purged-scope", purgedAt: expect.any(String) },
    ]);
    expect((await lookupDigest(t.pool, "d16e57000004")).released).toEqual([]);
    // The statement before migration 029 (hex-encoding every purged job's key hash) finds the same jobs.
    const before = `select j.id as job_id, j.key_scope as scope, j.purged_at from workhorse.job j
      where j.state = 'purged' and j.key_hash is not null and left(encode(j.key_hash, 'hex'), 12) = $1
      order by j.purged_at desc limit 5`;
    const client = await t.pool.connect();
    try {
      for (const d of [digest, "d16e57000003", "d16e57000004", "d16e57000005"]) {
        const now = await purgedJobsUnderDigest(client, Buffer.from(d, "hex"));
        expect(now, d).toEqual((await client.query(before, [d])).rows);
      }
    } finally {
      client.release();
    }
    await t.sql("delete from workhorse.job where queue = 'digest-purged'");
  });

  test("a digest that is not 12 hex characters is the page's error, and the read refuses it before any SQL", async () => {
    const { digestParam, lookupDigest, NotAKeyDigestError } = await import("@/lib/console/reads/digest");
    expect(digestParam(" D16E57000001\n")).toEqual({ raw: "d16e57000001", digest: "d16e57000001" });
    expect(digestParam(["d16e57000001", "ffffffffffff"])).toEqual({ raw: "d16e57000001", digest: "d16e57000001" });
    // Twelve characters, not all hex: the page says "That is not a key digest" and reads nothing.
    expect(digestParam("0123456789ag")).toEqual({ raw: "0123456789ag", digest: null });
    expect(digestParam(undefined)).toEqual({ raw: "", digest: null });
    // A binding whose hash starts with the five bytes before the "g": hex decoding stops at the "g",
    // and a five-byte prefix would list it under a digest it does not have.
    await t.sql(
      `insert into workhorse.key_binding (${distributedTests() ? "bucket, " : ""}scope, key_hash, job_id, mode,
                                          key_preview, key_length, field_digests, request_digest, ttl_ms, created_at,
                                          expires_at)
       select ${distributedTests() ? "workhorse.key_bucket('not-hex', decode($1, 'hex')), " : ""}'not-hex', decode($1, 'hex'),
              gen_random_uuid(), 'idempotency', 'n…', 12, decode(repeat('ab', 88), 'hex'), sha256('n'::bytea), 60000,
              now(), now() + interval '1 hour'`,
      [hashUnder("0123456789", 1)],
    );
    await expect(lookupDigest(t.pool, "0123456789ag")).rejects.toBeInstanceOf(NotAKeyDigestError);
    await expect(lookupDigest(t.pool, "0123456789AB")).rejects.toThrow("A key digest is 12 hex characters (0-9, a-f).");
    await t.sql("delete from workhorse.key_binding where scope = 'not-hex'");
  });
});

describe("digest lookup rate limit", () => {
  test("a session gets a clear 'wait N s' answer past its lookups per minute; other sessions are not affected", async () => {
    const { lookupDigestLimited, DIGEST_LOOKUPS_PER_MINUTE } = await import("@/lib/console/reads/digest");
    const { RequestLimiter } = await import("@/lib/console/auth/rate-limit");
    const limiter = new RequestLimiter({ perKey: DIGEST_LOOKUPS_PER_MINUTE, windowMs: 60_000 });
    const now = 1_000_000;
    for (let i = 0; i < DIGEST_LOOKUPS_PER_MINUTE; i++) {
      const r = await lookupDigestLimited(t.pool, "0123456789ab", "session-a", limiter, now + i * 100);
      expect(r.status).toBe("ok");
    }
    const refused = await lookupDigestLimited(t.pool, "0123456789ab", "session-a", limiter, now + 30_000);
    expect(refused).toEqual({
      status: "limited",
      retryInSeconds: 30,
      message: `Too many digest lookups from this session (${DIGEST_LOOKUPS_PER_MINUTE} a minute): wait 30 s and try again.`,
    });
    expect((await lookupDigestLimited(t.pool, "0123456789ab", "session-b", limiter, now + 30_000)).status).toBe("ok");
    // The window slides: once the first lookup is a minute old, one more is allowed.
    expect((await lookupDigestLimited(t.pool, "0123456789ab", "session-a", limiter, now + 60_000)).status).toBe("ok");
  });
});

describe("open a job by a short id", () => {
  test("an unambiguous prefix or suffix opens the job; ambiguity and non-ids are said", async () => {
    const q = t.queue();
    const id = await q.enqueue("short.id", {});
    const hex = id.replace(/-/g, "");
    expect(await resolveJobId(t.pool, id.toUpperCase())).toEqual({ kind: "found", id });
    expect(await resolveJobId(t.pool, `…${id.slice(-8)}`)).toEqual({ kind: "found", id });
    expect(await resolveJobId(t.pool, `...${id.slice(-12)}`)).toEqual({ kind: "found", id });
    expect(await resolveJobId(t.pool, ` ${hex.slice(0, 12)} `)).toEqual({ kind: "found", id });
    expect(await resolveJobId(t.pool, id.slice(0, 13))).toEqual({ kind: "found", id });
    expect(await resolveJobId(t.pool, hex)).toEqual({ kind: "found", id });

    // Two jobs sharing a prefix (the first hex digits of a UUIDv7 are its millisecond clock).
    const a = "01900000-0000-7000-8000-00000000aaa1";
    const b = "01900000-0000-7000-8000-00000000aaa2";
    // On Citus the job row also carries its bucket (the distribution column), read from its id.
    const bucket = distributedTests() ? ["bucket, ", "workhorse.id_bucket(x::uuid), "] : ["", ""];
    await t.sql(
      `insert into workhorse.job (${bucket[0]}id, queue, type, payload, state, run_at, max_attempts)
       select ${bucket[1]}x::uuid, 'default', 'short.id', '{}', 'ready', now(), 1 from unnest($1::text[]) x`,
      [[a, b]],
    );
    expect(await resolveJobId(t.pool, "019000000000")).toEqual({ kind: "ambiguous", ids: [a, b], more: false });
    expect(await resolveJobId(t.pool, "00000000aaa2")).toEqual({ kind: "found", id: b });
    expect(await resolveJobId(t.pool, "ffffffffffff")).toEqual({ kind: "none" });
    expect(await resolveJobId(t.pool, "not-an-id")).toEqual({ kind: "invalid" });
    expect(await resolveJobId(t.pool, "abc")).toEqual({ kind: "invalid" });
  });

  test("a job page path that names no job is known before the page streams (so it can answer 404)", async () => {
    const id = await t.queue().enqueue("path.id", {});
    expect(await jobPathMissing(t.pool, `/jobs/${id}`)).toBe(false);
    expect(await jobPathMissing(t.pool, `/jobs/${id.toUpperCase()}?x=1`)).toBe(false);
    expect(await jobPathMissing(t.pool, "/jobs/01900000-0000-7000-8000-00000000dead")).toBe(true);
    expect(await jobPathMissing(t.pool, "/jobs/not-a-job-id")).toBe(true);
    expect(await jobPathMissing(t.pool, "/jobs")).toBe(false);
    expect(await jobPathMissing(t.pool, "/jobs?id=abc")).toBe(false);
    expect(await jobPathMissing(t.pool, "/queues/x")).toBe(false);
  });
});

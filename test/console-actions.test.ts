// The console's server-action logic (lib/console/actions/mutations) against the real test database.
import { beforeAll, describe, expect, test, vi } from "vitest";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { enqueueTestJob, purgeJob, purgeQueue, runMaintenanceNow, parseRunAt } = await import(
  "@/lib/console/actions/mutations"
);
const { findByKey } = await import("@/lib/console/reads/find-key");
const { listAudit } = await import("@/lib/console/reads/audit");
const { jobDetail } = await import("@/lib/console/reads/jobs");
const { listObservations } = await import("@/lib/console/reads/observation-reads");

const t = setupQueueTests();
beforeAll(() => t.ready());

function form(values: Record<string, string>): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(values)) f.set(k, v);
  return f;
}

const KEY = "checkout:cart-8812-secret-suffix";
const order = (amount: number) => JSON.stringify({ orderId: "ORD-1", amount });

describe("enqueueTestJob", () => {
  test("the same form twice is accepted then replayed with the same id, audited under the actor", async () => {
    const q = t.queue();
    const values = {
      type: "order.place",
      queue: "orders",
      payload: order(10),
      key: KEY,
      scope: "order-form",
      tags: "web, checkout",
    };
    const a = await enqueueTestJob(q, "alice", form(values));
    const b = await enqueueTestJob(q, "alice", form(values));
    expect(a.status).toBe("done");
    expect(b.status).toBe("done");
    if (a.status !== "done" || b.status !== "done") return;
    expect(a.outcome).toBe("accepted");
    expect(b.outcome).toBe("replayed");
    expect(b.jobId).toBe(a.jobId);
    expect(a.keyed).toMatchObject({ scope: "order-form", keyPreview: "checkout…", keyLength: KEY.length });
    expect(JSON.stringify([a, b])).not.toContain(KEY);

    const job = await q.getJob(a.jobId);
    expect(job?.tags).toEqual(["checkout", "web"]);
    const audit = await listAudit(t.pool, { actor: "alice" });
    expect(audit.rows.map((r) => [r.action, r.target, r.result.outcome])).toEqual([
      ["enqueue_test", `job:${a.jobId}`, "replayed"],
      ["enqueue_test", `job:${a.jobId}`, "accepted"],
    ]);
    expect(JSON.stringify(audit)).not.toContain(KEY);
  });

  test("a key reused for different work returns the conflict with its fields, paths and the existing job", async () => {
    const q = t.queue();
    const key = "conflict-key-0001-abcdef";
    const first = await enqueueTestJob(q, "bob", form({ type: "order.place", payload: order(10), key, scope: "s1" }));
    const second = await enqueueTestJob(q, "bob", form({ type: "order.place", payload: order(11), key, scope: "s1" }));
    expect(first.status).toBe("done");
    expect(second.status).toBe("conflict");
    if (first.status !== "done" || second.status !== "conflict") return;
    expect(second.conflict.conflictingFields).toEqual(["payload"]);
    expect(second.conflict.payloadPaths).toEqual(["$.amount"]);
    // One field differs: "payload differs" (the verb agrees with the list).
    expect(second.conflict.message).toContain("with a different request: payload differs. Use a new key");

    expect(second.conflict.existingJobId).toBe(first.jobId);
    expect(JSON.stringify(second)).not.toContain(key);

    const obs = await listObservations(t.pool, { scope: "s1", outcome: "conflict" });
    expect(obs.rows).toHaveLength(1);
    expect(obs.rows[0]).toMatchObject({
      jobId: first.jobId,
      conflictingFields: ["payload"],
      payloadPaths: ["$.amount"],
    });
    const audit = await listAudit(t.pool, { actor: "bob" });
    expect(audit.rows[0]?.result).toMatchObject({ status: "conflict", conflictingFields: ["payload"] });
    // Two fields: "payload and type differ".
    await enqueueTestJob(q, "bob", form({ type: "order.place", payload: order(10), key, scope: "t2" }));
    const third = await enqueueTestJob(q, "bob", form({ type: "order.refund", payload: order(12), key, scope: "t2" }));
    expect(third.status === "conflict" && third.conflict.message).toContain(
      "with a different request: payload and type differ. Use a new key",
    );
  });

  test("invalid JSON and out-of-range numbers are field errors; nothing is written", async () => {
    const q = t.queue();
    const before = await t.count("job");
    const r = await enqueueTestJob(
      q,
      "carol",
      form({ type: "x", payload: "{oops", key: "k-123", ttlMs: "0", maxAttempts: "5000" }),
    );
    expect(r.status).toBe("error");
    if (r.status !== "error") return;
    expect(Object.keys(r.fieldErrors).sort()).toEqual(["maxAttempts", "payload", "ttlMs"]);
    expect(r.fieldErrors.payload).toMatch(/^Payload is not valid JSON/);
    expect(await t.count("job")).toBe(before);

    const core = await enqueueTestJob(q, "carol", form({ type: "x", key: "k".repeat(600) }));
    expect(core.status).toBe("error");
    if (core.status === "error") expect(core.fieldErrors.key).toBe("Idempotency key must be 1..512 UTF-8 bytes");
    const missing = await enqueueTestJob(q, "carol", form({ payload: "{}" }));
    expect(missing.status === "error" && missing.fieldErrors.type).toBe("Type is required");
  });

  test("debounce and throttle from the form: outcomes, reasons and field errors in the mode's words", async () => {
    const q = t.queue();
    const key = "search-index:doc-77-secret";
    const debounce = { type: "search.reindex", payload: "{}", key, mode: "debounce", windowMs: "60000" };
    const a = await enqueueTestJob(q, "dana", form({ ...debounce, maxWaitMs: "120000", schedule: "preserve" }));
    const b = await enqueueTestJob(q, "dana", form({ ...debounce, payload: '{"v":2}' }));
    expect(a).toMatchObject({ status: "done", outcome: "accepted", reason: null, mode: "debounce" });
    expect(b).toMatchObject({ status: "done", outcome: "replaced", reason: null, mode: "debounce" });
    if (a.status !== "done" || b.status !== "done") return;
    expect(b.jobId).toBe(a.jobId);
    const binding = await q.findBinding({ key });
    expect(binding).toMatchObject({ mode: "debounce", schedule: "reset", maxWaitMs: 120_000, ttlMs: 60_000 });
    // The job page: binding card fields and the replacement in the timeline (digests only).
    const detail = await jobDetail(t.pool, a.jobId);
    expect(detail?.binding).toMatchObject({ mode: "debounce", schedule: "reset", maxWaitMs: 120_000, ttlMs: 60_000 });
    expect(Date.parse(detail?.binding?.maxWaitUntil ?? "")).toBe(
      Date.parse(detail?.binding?.createdAt ?? "") + 120_000,
    );
    expect(detail?.binding?.createdAt).toBe(detail?.createdAt);
    const replaced = detail?.events.filter((e) => e.kind === "debounced") ?? [];
    expect(replaced).toHaveLength(1);
    expect(Object.keys(replaced[0]?.data as object).sort()).toEqual([
      "expiresAt",
      "maxWaitUntil",
      "priorRequestDigest",
      "requestDigest",
      "runAt",
      "schedule",
      "windowMs",
    ]);
    // The history agrees with itself: the enqueued entry names the original request, the one the
    // first replacement names as prior (not the latest request).
    const first = replaced[0]?.data as { priorRequestDigest: string; requestDigest: string };
    const enqueued = detail?.events.find((e) => e.kind === "enqueued")?.data as { requestDigest: string };
    expect(first.priorRequestDigest).not.toBe(first.requestDigest);
    expect(enqueued.requestDigest).toBe(first.priorRequestDigest);

    const idemKey = "held-by-idempotency-01";
    await enqueueTestJob(q, "dana", form({ type: "x", payload: "{}", key: idemKey }));
    const c = await enqueueTestJob(
      q,
      "dana",
      form({ type: "x", payload: "{}", key: idemKey, mode: "debounce", windowMs: "1000" }),
    );
    // The result names the mode the key is held in (idempotency), not only the one asked (debounce).
    expect(c).toMatchObject({
      status: "done",
      outcome: "non_replaceable",
      reason: "incompatible_key_mode",
      mode: "debounce",
      heldMode: "idempotency",
    });
    expect(a).toMatchObject({ heldMode: null });

    const throttle = {
      type: "order.shipped",
      payload: "{}",
      key: "shipped:ORD-9",
      mode: "throttle",
      windowMs: "60000",
    };
    const t1 = await enqueueTestJob(q, "dana", form(throttle));
    const t2 = await enqueueTestJob(q, "dana", form(throttle));
    expect(t1).toMatchObject({ status: "done", outcome: "accepted", mode: "throttle" });
    expect(t2).toMatchObject({ status: "done", outcome: "coalesced", reason: null });
    expect(JSON.stringify([a, b, c, t1, t2])).not.toContain(key);

    const before = await t.count("job");
    const noWindow = await enqueueTestJob(q, "dana", form({ type: "x", key: "k-1", mode: "throttle" }));
    expect(noWindow.status === "error" && noWindow.fieldErrors.windowMs).toBe(
      "Window is required for throttle (milliseconds)",
    );
    const noKey = await enqueueTestJob(q, "dana", form({ type: "x", mode: "debounce", windowMs: "5" }));
    expect(noKey.status === "error" && noKey.fieldErrors.key).toBe("Debounce key is required: debounce works on a key");
    const shortWait = await enqueueTestJob(
      q,
      "dana",
      form({ type: "x", key: "k-2", mode: "debounce", windowMs: "5000", maxWaitMs: "10" }),
    );
    expect(shortWait.status === "error" && shortWait.fieldErrors.maxWaitMs).toBe(
      "Max wait must be at least windowMs (5000)",
    );
    const withRunAt = await enqueueTestJob(
      q,
      "dana",
      form({ type: "x", key: "k-3", mode: "debounce", windowMs: "5000", runAt: "2030-01-01T00:00:00Z" }),
    );
    expect(withRunAt.status === "error" && withRunAt.fieldErrors.runAt).toMatch(
      /^Run at cannot be combined with debounce/,
    );
    const scheduleOnThrottle = await enqueueTestJob(
      q,
      "dana",
      form({ type: "x", key: "k-4", mode: "throttle", windowMs: "5000", schedule: "reset" }),
    );
    expect(scheduleOnThrottle.status === "error" && scheduleOnThrottle.fieldErrors.schedule).toMatch(/debounce only/);
    expect(await t.count("job")).toBe(before);
  });

  test("a key lifetime from the form holds the key until its job finishes; refused for throttle and without a key", async () => {
    const q = t.queue();
    const key = "report:nightly-2026-secret";
    const values = { type: "report.nightly", payload: "{}", key, scope: "reports", holdUntil: "finished" };
    const a = await enqueueTestJob(q, "erin", form(values));
    expect(a).toMatchObject({ status: "done", outcome: "accepted" });
    expect(await q.findBinding({ key, scope: "reports" })).toMatchObject({ holdUntil: "finished" });
    // The same request again, still held: a replay; a different lifetime is a conflict naming it.
    expect(await enqueueTestJob(q, "erin", form(values))).toMatchObject({ status: "done", outcome: "replayed" });
    const other = await enqueueTestJob(q, "erin", form({ ...values, holdUntil: "started" }));
    expect(other).toMatchObject({ status: "conflict" });
    expect(JSON.stringify(other)).toContain("holdUntil");
    const throttled = await enqueueTestJob(
      q,
      "erin",
      form({ type: "x", payload: "{}", key: "t-1", mode: "throttle", windowMs: "1000", holdUntil: "finished" }),
    );
    expect(throttled).toMatchObject({
      status: "error",
      fieldErrors: { holdUntil: expect.stringContaining("throttle") },
    });
    const keyless = await enqueueTestJob(q, "erin", form({ type: "x", payload: "{}", holdUntil: "started" }));
    expect(keyless).toMatchObject({
      status: "error",
      fieldErrors: { holdUntil: expect.stringContaining("enter a key") },
    });
    const bad = await enqueueTestJob(q, "erin", form({ type: "x", payload: "{}", key: "k", holdUntil: "forever" }));
    expect(bad).toMatchObject({
      status: "error",
      fieldErrors: { holdUntil: expect.stringContaining("finished or started") },
    });
  });

  test("run at is read as the browser's local time", () => {
    expect(parseRunAt("2026-12-01T09:00", -60)?.toISOString()).toBe("2026-12-01T08:00:00.000Z");
    expect(parseRunAt("2026-12-01T09:00:30Z", undefined)?.toISOString()).toBe("2026-12-01T09:00:30.000Z");
    expect(parseRunAt("tomorrow", 0)).toBeNull();
  });
});

describe("findByKey", () => {
  test("a live key answers with its job and binding; after purge it says the key was released", async () => {
    const q = t.queue();
    const key = "support-lookup-key-42-zz";
    const { jobId } = await q.enqueueWithResult("order.place", { o: 1 }, { idempotency: { key, scope: "support" } });
    const found = await findByKey(q, t.pool, form({ scope: "support", key }));
    expect(found.status).toBe("found");
    if (found.status !== "found") return;
    expect(found.binding).toMatchObject({ jobId, scope: "support", expired: false, mode: "idempotency" });
    expect(found.job?.id).toBe(jobId);
    expect(JSON.stringify(found)).not.toContain(key);

    const purged = await purgeJob(q, "dave", form({ jobId, reason: "customer asked" }));
    expect(purged).toEqual({ status: "done", purged: 1, releasedBindings: 1, target: `job ${jobId}` });
    const after = await findByKey(q, t.pool, form({ scope: "support", key }));
    expect(after.status).toBe("none");
    if (after.status !== "none") return;
    expect(after.history).toMatchObject({ kind: "released", jobId });
    expect(JSON.stringify(after)).not.toContain(key);
  });

  test("an expired binding says when it expired; an unknown key was never seen", async () => {
    const q = t.queue();
    const key = "short-lived-key-000111";
    await q.enqueueWithResult("email.digest", {}, { idempotency: { key, scope: "digest", ttlMs: 1 } });
    await new Promise((r) => setTimeout(r, 20));
    const expired = await findByKey(q, t.pool, form({ scope: "digest", key }));
    expect(expired.status === "found" && expired.binding.expired).toBe(true);

    const unknown = await findByKey(q, t.pool, form({ scope: "digest", key: "never-used-key-9999" }));
    expect(unknown.status === "none" && unknown.history.kind).toBe("never_seen");
    const empty = await findByKey(q, t.pool, form({ scope: "digest", key: "" }));
    expect(empty.status === "error" && empty.fieldErrors.key).toBe("Key is required");
  });

  test("nearly right: surrounding whitespace is flagged and the trimmed key found; the scopes holding the key are offered", async () => {
    const q = t.queue();
    const key = "ORD-near-miss-5521";
    const { jobId } = await q.enqueueWithResult("order.place", {}, { idempotency: { key, scope: "billing" } });
    const { jobId: other } = await q.enqueueWithResult("order.ship", {}, { idempotency: { key, scope: "shipping" } });

    const wrongScope = await findByKey(q, t.pool, form({ scope: "support", key }));
    expect(wrongScope.status).toBe("none");
    if (wrongScope.status !== "none") return;
    expect(wrongScope.whitespace).toBeNull();
    expect(wrongScope.elsewhere).toEqual({
      trimmed: false,
      matches: [
        { scope: "billing", jobId, expired: false },
        { scope: "shipping", jobId: other, expired: false },
      ],
      scopesSearched: expect.any(Number),
      searchedAll: true,
    });
    expect(JSON.stringify(wrongScope)).not.toContain(key);

    const spaced = await findByKey(q, t.pool, form({ scope: "billing", key: `  ${key}\t` }));
    expect(spaced.status).toBe("none");
    if (spaced.status !== "none") return;
    expect(spaced.whitespace).toEqual({ leading: 2, trailing: 1 });
    expect(spaced.elsewhere?.trimmed).toBe(true);
    expect(spaced.elsewhere?.matches).toEqual([
      { scope: "billing", jobId, expired: false },
      { scope: "shipping", jobId: other, expired: false },
    ]);

    // Found as typed: no whitespace note, nothing else searched.
    const exact = await findByKey(q, t.pool, form({ scope: "billing", key }));
    expect(exact.status).toBe("found");
  });
});

describe("purge", () => {
  test("refuses a reasonless, repeated or unknown purge with a message; per-queue purge counts jobs and bindings", async () => {
    const q = t.queue();
    const { jobId } = await q.enqueueWithResult("a", {}, { queue: "pq" });
    const noReason = await purgeJob(q, "erin", form({ jobId, reason: "  " }));
    expect(noReason.status).toBe("error");
    await purgeJob(q, "erin", form({ jobId, reason: "test" }));
    const again = await purgeJob(q, "erin", form({ jobId, reason: "test" }));
    expect(again).toEqual({
      status: "refused",
      message: `Job ${jobId} is purged; only ready and scheduled jobs can be purged.`,
    });
    const unknown = await purgeJob(q, "erin", form({ jobId: "00000000-0000-7000-8000-000000000000", reason: "x" }));
    expect(unknown.status).toBe("refused");
    const garbage = await purgeJob(q, "erin", form({ jobId: "nope", reason: "x" }));
    expect(garbage.status).toBe("error");

    await q.enqueue("b", {}, { queue: "pq2", idempotency: { key: "pq2-key-1" } });
    await q.enqueue("b", {}, { queue: "pq2", idempotency: { key: "pq2-key-2" } });
    await q.enqueue("b", {}, { queue: "pq2", runAt: new Date(Date.now() + 3_600_000) });
    const all = await purgeQueue(q, "erin", form({ queue: "pq2", reason: "drain" }));
    expect(all).toEqual({ status: "done", purged: 3, releasedBindings: 2, target: "queue pq2" });
  });
});

test("manual maintenance removes expired bindings and is audited", async () => {
  const q = t.queue();
  await q.enqueue("m", {}, { idempotency: { key: "maint-key-1", scope: "maint", ttlMs: 1 } });
  await new Promise((r) => setTimeout(r, 20));
  const r = await runMaintenanceNow(q, "frank");
  expect(r.status === "done" && r.expiredBindingsDeleted).toBeGreaterThanOrEqual(1);
  const audit = await listAudit(t.pool, { action: "run_maintenance" });
  expect(audit.rows[0]?.actor).toBe("frank");
});

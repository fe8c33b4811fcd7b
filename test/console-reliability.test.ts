// Console defects found under restarts and bad input (issue 8): a NUL byte in a filter, a test
// enqueue whose audit row could be lost, operator text PostgreSQL cannot store.
import { beforeAll, describe, expect, test, vi } from "vitest";
import { EnqueueValidationError } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { enqueueTestJob } = await import("@/lib/console/mutations");
const { parseAuditFilters, parseBindingFilters, parseJobFilters, parseObservationFilters } = await import(
  "@/lib/console/filters"
);
const { listJobs } = await import("@/lib/console/jobs");

const t = setupQueueTests();
beforeAll(() => t.ready());

describe("filters holding characters PostgreSQL text cannot store are dropped", () => {
  for (const bad of ["%00", "billing%00", "%01x"]) {
    test(`value ${bad}`, () => {
      const p = (q: string) => new URLSearchParams(q);
      expect(parseJobFilters(p(`queue=${bad}&type=${bad}&tag=${bad}`))).toEqual({
        queue: undefined,
        type: undefined,
        state: undefined,
        tag: undefined,
        after: undefined,
        before: undefined,
      });
      expect(parseBindingFilters(p(`scope=${bad}`)).scope).toBeUndefined();
      expect(parseObservationFilters(p(`scope=${bad}&queue=${bad}`))).toMatchObject({
        scope: undefined,
        queue: undefined,
      });
      expect(parseAuditFilters(p(`actor=${bad}`)).actor).toBeUndefined();
    });
  }

  test("the jobs read model answers a NUL filter instead of failing", async () => {
    const q = t.queue();
    await q.enqueue("nul.check", {}, { queue: "nul-filter" });
    const page = await listJobs(t.pool, parseJobFilters(new URLSearchParams("queue=%00")));
    expect(page.rows.length).toBeGreaterThan(0);
  });
});

test("a test enqueue and its audit row commit together: when the audit write fails, no job is left behind", async () => {
  const q = t.queue();
  await t.sql(`create function pg_temp_fail_audit() returns trigger language plpgsql as $$
                begin raise exception 'audit storage unavailable'; end $$`);
  await t.sql(`create trigger fail_audit before insert on workhorse.operator_audit
                for each row when (new.action = 'enqueue_test') execute function pg_temp_fail_audit()`);
  try {
    const form = new FormData();
    form.set("type", "atomic.check");
    form.set("payload", "{}");
    const err = await enqueueTestJob(q, "alice", form).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/audit storage unavailable/);
    expect(await t.count("job", "type = 'atomic.check'")).toBe(0);
    expect(await t.count("job_event", "job_id not in (select id from workhorse.job)")).toBe(0);
  } finally {
    await t.sql("drop trigger fail_audit on workhorse.operator_audit");
    await t.sql("drop function pg_temp_fail_audit()");
  }
  const form = new FormData();
  form.set("type", "atomic.check");
  form.set("payload", "{}");
  const ok = await enqueueTestJob(q, "alice", form);
  expect(ok.status).toBe("done");
  expect(await t.count("job", "type = 'atomic.check'")).toBe(1);
  expect(await t.count("operator_audit", "action = 'enqueue_test' and actor = 'alice'")).toBeGreaterThanOrEqual(1);
});

describe("operator text PostgreSQL cannot store is a validation error, nothing written", () => {
  test("purge with a NUL in the actor or reason", async () => {
    const q = t.queue();
    const id = await q.enqueue("t", {}, { queue: "nul-purge" });
    const before = await t.count("operator_audit");
    for (const ctx of [
      { actor: "eve\u0000", reason: "x" },
      { actor: "eve", reason: "why\u0000" },
      { actor: "eve", reason: "\ud800" },
    ]) {
      const err = await q.purge({ jobId: id }, ctx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EnqueueValidationError);
      expect((err as EnqueueValidationError).rule).toBe("must be well-formed Unicode without NUL characters");
    }
    expect(await t.count("operator_audit")).toBe(before);
    expect((await q.getJob(id))?.state).toBe("ready");
  });

  test("recordOperatorAction with a NUL in target, reason or result", async () => {
    const q = t.queue();
    const before = await t.count("operator_audit");
    const base = { actor: "eve", action: "enqueue_test", target: "job:x", result: {} };
    for (const [entry, option] of [
      [{ ...base, target: "job:\u0000" }, "target"],
      [{ ...base, reason: "r\u0000" }, "reason"],
      [{ ...base, result: { note: "\u0000" } }, "result"],
    ] as const) {
      const err = await q.recordOperatorAction(entry).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EnqueueValidationError);
      expect((err as EnqueueValidationError).option).toBe(option);
    }
    expect(await t.count("operator_audit")).toBe(before);
  });
});

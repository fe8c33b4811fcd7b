// The console's operator actions (lib/console/actions/operator-action-forms, operator-reads) against the real test database.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, test, vi } from "vitest";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { cancelJobs, purgeSelected, runJobsNow, redriveJobs, redriveSummary, setQueuePaused } = await import(
  "@/lib/console/actions/operator-action-forms"
);
const { countMatchingJobs, deadLetterGroups, pausedQueues, pendingQueueNames } = await import(
  "@/lib/console/reads/operator-reads"
);

const t = setupQueueTests();
beforeAll(() => t.ready());

function form(values: Record<string, string>): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(values)) f.set(k, v);
  return f;
}

async function fail(ids: string[], name = "TypeError", message = "boom") {
  await t.sql(
    `update workhorse.job set state = 'failed', attempt = 1, finished_at = now(), updated_at = now(),
            last_error = jsonb_build_object('name', $2::text, 'message', $3::text) where id = any($1::uuid[])`,
    [ids, name, message],
  );
}

describe("bulk cancel and run now", () => {
  test("all jobs matching a filter: the count first, then how many changed and why not the rest", async () => {
    const q = t.queue();
    const later = new Date(Date.now() + 3_600_000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await q.enqueue("bulk", {}, { queue: "bulk-a", runAt: later }));
    const done = await q.enqueue("bulk", {}, { queue: "bulk-a" });
    await t.sql("update workhorse.job set state = 'succeeded', finished_at = now() where id = $1", [done]);
    await q.enqueue("bulk", {}, { queue: "bulk-b", runAt: later }); // another queue: not matched

    expect(await countMatchingJobs(t.pool, { queue: "bulk-a" })).toEqual({ value: 4, capped: false });
    const ran = await runJobsNow(q, "alice", form({ all: "1", queue: "bulk-a", reason: "backlog" }), t.pool);
    expect(ran).toMatchObject({
      status: "done",
      summary: "3 scheduled jobs now ready to run. Not changed (only scheduled jobs can run now): 1 already succeeded.",
      counts: { updated: 3, "unchanged.succeeded": 1 },
    });
    const canceled = await cancelJobs(q, "alice", form({ all: "1", queue: "bulk-a", reason: "bad deploy" }), t.pool);
    expect(canceled).toMatchObject({
      status: "done",
      summary: "Canceled 3 jobs. Not changed: 1 already succeeded.",
      counts: { canceled: 3, cancelRequested: 0, "unchanged.succeeded": 1 },
    });
    expect(await t.count("job", "queue = 'bulk-b' and state = 'scheduled'")).toBe(1);
    expect(await purgeSelected(q, "alice", form({ all: "1", queue: "bulk-b", reason: "drop" }), t.pool)).toMatchObject({
      status: "done",
      summary: "Purged 1 job; released 0 bindings.",
    });
    const [audit] = await t.sql<{ actor: string; result: Record<string, unknown> }>(
      "select actor, result from workhorse.operator_audit where action = 'cancel' and target = 'jobs:4' order by at desc limit 1",
    );
    expect(audit).toEqual({
      actor: "alice",
      result: { requested: 4, canceled: 3, cancelRequested: 0, unchanged: { succeeded: 1 } },
    });
  });

  test("a selection of ids; a missing reason or no selection is a field error and changes nothing", async () => {
    const q = t.queue();
    const a = await q.enqueue("sel", {}, { queue: "sel" });
    const before = await t.count("operator_audit");
    expect(await cancelJobs(q, "alice", form({ jobIds: a, reason: " " }))).toMatchObject({
      status: "error",
      fieldErrors: { reason: "Give a reason: it is kept in the job's timeline and in the audit log" },
    });
    expect(await cancelJobs(q, "alice", form({ jobIds: "", reason: "x" }))).toMatchObject({
      status: "error",
      fieldErrors: { jobIds: "Select at least one job" },
    });
    expect(await t.count("operator_audit")).toBe(before);
    expect(await cancelJobs(q, "alice", form({ jobIds: `${a},${randomUUID()}`, reason: "x" }))).toMatchObject({
      status: "done",
      summary: "Canceled 1 job. Not changed: 1 no longer exist.",
    });
  });
});

describe("dead letters", () => {
  test("a redrive's summary: one count per outcome, verbs agreeing with it, the redriven jobs said once", () => {
    expect(redriveSummary({ redriven: 26 }, false)).toBe("26 jobs redriven.");
    expect(redriveSummary({ redriven: 1 }, false)).toBe("1 job redriven.");
    expect(redriveSummary({ already_redriven: 1 }, false)).toBe(
      "0 jobs redriven; 1 was redriven before and is left alone (redrive again to run it once more).",
    );
    expect(redriveSummary({ redriven: 3, not_found: 1, not_failed: 2 }, false)).toBe(
      "3 jobs redriven; 1 no longer exists, 2 are not failed.",
    );
    expect(redriveSummary({ eligible: 1, already_redriven: 3, not_found: 2, not_failed: 1 }, true)).toBe(
      "Dry run, nothing changed: 1 would be redriven, 3 were redriven before and are left alone (redrive again to run them once more), 2 no longer exist, 1 is not failed.",
    );
  });

  test("groups are made from the newest failed jobs only; past the bound the counts say they are lower bounds", async () => {
    const q = t.queue();
    const older: string[] = [];
    const newer: string[] = [];
    for (let i = 0; i < 3; i++) older.push(await q.enqueue("dlb.pay", { i }, { queue: "dlb-old" }));
    for (let i = 0; i < 3; i++) newer.push(await q.enqueue("dlb.pay", { i }, { queue: "dlb-new" }));
    await fail([...older, ...newer], "TypeError", "bound");
    // The newest failures of the database: these six, the newer queue's last.
    await t.sql(
      `update workhorse.job set finished_at = now() + interval '1 day' + (case when queue = 'dlb-new' then 1 else 0 end) * interval '1 hour'
        where id = any($1::uuid[])`,
      [[...older, ...newer]],
    );
    const bounded = await deadLetterGroups(t.pool, 4);
    expect(bounded.bounded).toEqual({ scanned: 4 });
    expect(bounded.groups.map((g) => [g.queue, g.count])).toEqual([
      ["dlb-new", 3],
      ["dlb-old", 1],
    ]);
    const whole = await deadLetterGroups(t.pool);
    expect(whole.bounded).toBeNull();
    expect(whole.groups.filter((g) => g.queue.startsWith("dlb-")).map((g) => [g.queue, g.count])).toEqual([
      ["dlb-new", 3],
      ["dlb-old", 3],
    ]);
    // The group's own dry run counts the whole group, whatever the bound of the list.
    const dry = await redriveJobs(
      q,
      "bob",
      form({
        group: "1",
        groupQueue: "dlb-old",
        groupType: "dlb.pay",
        groupErrorName: "TypeError",
        requestId: randomUUID(),
        reason: "bound",
        mode: "dry-run",
      }),
    );
    expect(dry).toMatchObject({ status: "done", dryRun: true, counts: { eligible: 3 } });
  });

  test("groups by queue, type and error with counts and the newest message; a group redrive after a dry run", async () => {
    const q = t.queue();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await q.enqueue("dl.pay", { i }, { queue: "dl-q" }));
    const other = await q.enqueue("dl.pay", {}, { queue: "dl-q" });
    await fail(ids, "TypeError", "old message");
    await fail([ids[2] as string], "TypeError", "newest message");
    await fail([other], "RangeError", "out of range");
    const groups = (await deadLetterGroups(t.pool)).groups.filter((g) => g.queue === "dl-q");
    expect(groups.map((g) => [g.type, g.errorName, g.count, g.newestMessage])).toEqual([
      ["dl.pay", "TypeError", 3, "newest message"],
      ["dl.pay", "RangeError", 1, "out of range"],
    ]);

    // One job of the group redriven alone first (a selection): it leaves the group's count, and the
    // group's dry run and redrive leave it alone, naming the job its redrive made.
    const one = ids[0] as string;
    const single = await redriveJobs(
      q,
      "bob",
      form({ jobIds: one, requestId: randomUUID(), reason: "one first", mode: "redrive" }),
    );
    expect(single).toMatchObject({ status: "done", summary: "1 job redriven." });
    const oneTo = single.status === "done" ? single.results[0]?.jobId : null;
    expect(
      (await deadLetterGroups(t.pool)).groups.filter((g) => g.queue === "dl-q").map((g) => [g.errorName, g.count]),
    ).toEqual([
      ["TypeError", 2],
      ["RangeError", 1],
    ]);

    const requestId = randomUUID();
    const group = { group: "1", groupQueue: "dl-q", groupType: "dl.pay", groupErrorName: "TypeError" };
    const dry = await redriveJobs(q, "bob", form({ ...group, requestId, reason: "fixed", mode: "dry-run" }));
    expect(dry).toMatchObject({
      status: "done",
      dryRun: true,
      summary:
        "Dry run, nothing changed: 2 would be redriven, 1 was redriven before and is left alone (redrive again to run it once more).",
      counts: { eligible: 2, already_redriven: 1 },
    });
    expect(dry.status === "done" && dry.results.find((r) => r.sourceJobId === one)).toEqual({
      sourceJobId: one,
      status: "already_redriven",
      jobId: oneTo,
    });
    expect(await t.count("job", "redriven_from is not null")).toBe(1);
    const done = await redriveJobs(q, "bob", form({ ...group, requestId, reason: "fixed", mode: "redrive" }));
    expect(done).toMatchObject({
      status: "done",
      dryRun: false,
      counts: { redriven: 2, already_redriven: 1 },
      summary: "2 jobs redriven; 1 was redriven before and is left alone (redrive again to run it once more).",
    });
    expect(await t.count("job", "redriven_from is not null and state = 'ready'")).toBe(3);
    expect((await deadLetterGroups(t.pool)).groups.filter((g) => g.queue === "dl-q").map((g) => g.errorName)).toEqual([
      "RangeError",
    ]);
    // A double submit of the same dialog replays.
    const again = await redriveJobs(q, "bob", form({ ...group, requestId, reason: "fixed", mode: "redrive" }));
    expect(again).toMatchObject({
      counts: { replayed: 2, already_redriven: 1 },
      summary:
        "2 jobs redriven (2 already by this request); 1 was redriven before and is left alone (redrive again to run it once more).",
    });
    expect(await t.count("job", "redriven_from is not null")).toBe(3);
    // Asked for explicitly (the job page's "Redrive again"), a redriven job is redriven once more.
    const twice = await redriveJobs(
      q,
      "bob",
      form({ jobIds: one, requestId: randomUUID(), reason: "copy lost", mode: "redrive", again: "1" }),
    );
    expect(twice).toMatchObject({ status: "done", counts: { redriven: 1 } });
    expect(await t.count("job", `redriven_from = '${one}'`)).toBe(2);
    // The same request id with another reason is refused.
    expect(await redriveJobs(q, "bob", form({ ...group, requestId, reason: "other", mode: "redrive" }))).toMatchObject({
      status: "refused",
    });
  });
});

describe("queue pause", () => {
  test("pause and resume with who, when and why; fresh queue names", async () => {
    const q = t.queue();
    await q.enqueue("p", {}, { queue: "pz-1" });
    expect(await pendingQueueNames(t.pool)).toContain("pz-1");
    expect(
      await setQueuePaused(q, "carol", form({ queue: "pz-1", action: "pause", reason: "db upgrade" })),
    ).toMatchObject({
      status: "done",
      summary: "Paused queue pz-1: workers claim nothing from it until it is resumed.",
    });
    expect((await pausedQueues(t.pool)).map((p) => [p.queue, p.pausedBy, p.reason])).toEqual([
      ["pz-1", "carol", "db upgrade"],
    ]);
    expect(await setQueuePaused(q, "carol", form({ queue: "pz-1", action: "resume", reason: "done" }))).toMatchObject({
      status: "done",
      summary: "Resumed queue pz-1.",
    });
    expect(await pausedQueues(t.pool)).toEqual([]);
  });
});

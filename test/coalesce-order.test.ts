// Calls on one key are decided in the order they were made, whatever the coalescing settings
// (lib/enqueue/coalesce.ts): a call waits while an earlier call on its key is in a statement in
// flight or still waiting, and a rolled-back statement's calls wait again ahead of later ones.
import { beforeAll, describe, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError, type EnqueueOptions, type QueueOptions } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

let run = 0;
const SETTINGS: [string, QueueOptions["coalesce"]][] = [
  ["maxStatements: 1", { maxStatements: 1 }],
  ["maxStatements: 2", { maxStatements: 2 }],
  ["the default", undefined],
];

/** What a call got: its outcome, or the typed conflict. */
async function outcomeOf(p: Promise<{ outcome: string }>): Promise<string> {
  try {
    return (await p).outcome;
  } catch (err) {
    if (err instanceof EnqueueIdempotencyConflictError) return `conflict(${err.conflictingFields.join(",")})`;
    throw err;
  }
}

/**
 * The jobs a scope's bindings hold, by key preview. Two statements, not a join: on Citus the
 * bindings and the jobs are distributed on different columns, and a join between them would need
 * repartitioning.
 */
async function boundJobs(scope: string): Promise<{ key: string; payload: unknown }[]> {
  const bindings = await t.sql<{ key: string; job_id: string }>(
    "select key_preview as key, job_id from workhorse.key_binding where scope = $1 order by key_preview",
    [scope],
  );
  const jobs = await t.sql<{ id: string; payload: unknown }>(
    "select id, payload from workhorse.job where id = any($1::uuid[])",
    [bindings.map((b) => b.job_id)],
  );
  const payloadOf = new Map(jobs.map((j) => [j.id, j.payload]));
  return bindings.map((b) => ({ key: b.key, payload: payloadOf.get(b.job_id) }));
}

describe.each(SETTINGS)("coalesce %s", (_label, coalesce) => {
  const queue = () => t.queue(coalesce === undefined ? {} : { coalesce });

  test("a conflict rolling a shared statement back does not let a later debounce on a key go first (20 runs)", async () => {
    const q = queue();
    for (let i = 0; i < 20; i++) {
      const ns = `order-${++run}`;
      const throttle = { queue: "order", throttle: { key: "C", scope: `${ns}-t`, windowMs: 60_000 } };
      const debounce = { queue: "order", debounce: { key: "D", scope: `${ns}-d`, windowMs: 60_000 } };
      await q.enqueue("t", { p: 1 }, throttle);
      const calls = [
        outcomeOf(q.enqueueWithResult("t", { keyless: 1 }, { queue: "order" })),
        outcomeOf(q.enqueueWithResult("t", { keyless: 2 }, { queue: "order" })),
        outcomeOf(q.enqueueWithResult("t", { p: 2 }, throttle)),
        outcomeOf(q.enqueueWithResult("t", { v: "a" }, debounce)),
        outcomeOf(q.enqueueWithResult("t", { v: "b" }, debounce)),
      ];
      expect(await Promise.all(calls)).toEqual(["accepted", "accepted", "conflict(payload)", "accepted", "replaced"]);
      expect((await boundJobs(`${ns}-d`)).map((j) => j.payload)).toEqual([{ v: "b" }]);
    }
  });

  test("the same with throttle: the first call on a new key is accepted, the later different one conflicts (20 runs)", async () => {
    const q = queue();
    for (let i = 0; i < 20; i++) {
      const ns = `order-${++run}`;
      const throttle = (key: string) => ({ queue: "order", throttle: { key, scope: `${ns}-t`, windowMs: 60_000 } });
      await q.enqueue("t", { p: 1 }, throttle("C"));
      const calls = [
        outcomeOf(q.enqueueWithResult("t", { keyless: 1 }, { queue: "order" })),
        outcomeOf(q.enqueueWithResult("t", { keyless: 2 }, { queue: "order" })),
        outcomeOf(q.enqueueWithResult("t", { p: 2 }, throttle("C"))),
        outcomeOf(q.enqueueWithResult("t", { x: "a" }, throttle("F"))),
        outcomeOf(q.enqueueWithResult("t", { x: "b" }, throttle("F"))),
      ];
      expect(await Promise.all(calls)).toEqual([
        "accepted",
        "accepted",
        "conflict(payload)",
        "accepted",
        "conflict(payload)",
      ]);
    }
  });

  test("200 concurrent calls over 20 keys are decided as the same calls made one by one with coalesce: false", async () => {
    const ns = `mix-${++run}`;
    // A fixed mix: each key keeps one mode; payloads repeat (replays, coalesces) or change
    // (conflicts, replacements).
    const mix = Array.from({ length: 200 }, (_, i) => {
      const k = (i * 7) % 20;
      const mode = (["idempotency", "throttle", "debounce"] as const)[k % 3] as "idempotency" | "throttle" | "debounce";
      const payload = { v: (i * 13) % 3 };
      // The key's first characters are its preview (keys of 16 code points show 5): unique per key.
      const key = `${String(k).padStart(2, "0")}-mixed-call-key`;
      const keyed =
        mode === "idempotency" ? { idempotency: { key, scope: "" } } : { [mode]: { key, scope: "", windowMs: 60_000 } };
      return { payload, keyed: keyed as Record<string, { scope: string }> };
    });
    const withScope = (c: (typeof mix)[number], scope: string): EnqueueOptions => {
      const [mode, o] = Object.entries(c.keyed)[0] as [string, { scope: string }];
      return { queue: "mix", [mode]: { ...o, scope } };
    };
    const alone = t.queue({ coalesce: false });
    const expected: string[] = [];
    for (const c of mix)
      expected.push(await outcomeOf(alone.enqueueWithResult("t", c.payload, withScope(c, `${ns}-alone`))));
    const q = queue();
    const got = await Promise.all(
      mix.map((c) => outcomeOf(q.enqueueWithResult("t", c.payload, withScope(c, `${ns}-shared`)))),
    );
    expect(got).toEqual(expected);
    expect(await boundJobs(`${ns}-shared`)).toEqual(await boundJobs(`${ns}-alone`));
  });
});

// One issue per option: a value that breaks several of an option's rules (out of range and not a
// safe integer, say) is reported once, with the rule Python and Go report for it.
import { beforeAll, describe, expect, test } from "vitest";
import { EnqueueValidationError } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const issuesOf = async (options: object) => {
  const err = await t
    .queue()
    .enqueue("t", {}, options as never)
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(EnqueueValidationError);
  return (err as EnqueueValidationError).issues;
};

describe("one issue per option and rule", () => {
  test.each([
    ["maxAttempts 2^63-1", { maxAttempts: 2 ** 63 - 1 }, "options.maxAttempts", "must be at most 1000"],
    ["maxAttempts -2^63", { maxAttempts: -(2 ** 63) }, "options.maxAttempts", "must be at least 1"],
    ["maxAttempts 2.5", { maxAttempts: 2.5 }, "options.maxAttempts", "must be an integer 1..1000"],
    [
      "multiplier 1e300",
      { retryPolicy: { type: "exponential", initialDelayMs: 10, multiplier: 1e300, maxDelayMs: 100 } },
      "options.retryPolicy.multiplier",
      "must be at most 100",
    ],
    [
      "windowMs 1e300",
      { debounce: { key: "k", windowMs: 1e300 } },
      "options.debounce.windowMs",
      "must be at most 31536000000 ms (365 days)",
    ],
    [
      "delayMs -1e300",
      { retryPolicy: { type: "fixed", delayMs: -1e300 } },
      "options.retryPolicy.delayMs",
      "must be at least 0 ms",
    ],
  ])("%s", async (_label, options, option, rule) => {
    expect(await issuesOf(options)).toEqual([{ option, rule }]);
  });

  test("several options each keep their own issue, in input order", async () => {
    const issues = await issuesOf({ maxAttempts: 2 ** 63 - 1, queue: "", tags: [1, 2] });
    expect(issues.map((i) => i.option)).toEqual([
      "options.queue",
      "options.maxAttempts",
      "options.tags[0]",
      "options.tags[1]",
    ]);
  });
});

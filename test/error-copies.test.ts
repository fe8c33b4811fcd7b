// A bundler can load lib/enqueue twice in one process (Next.js builds route handlers, pages and
// server actions as separate layers, each with its own copy of the module). An error thrown by a
// Queue made in one copy must still be recognised by `instanceof` in code that imported the other:
// the console's forms turned a refused input into an error page when a route handler had made the
// console's Queue first (docs/enqueue.md, typed errors).
import { expect, test } from "vitest";
import * as one from "../lib/enqueue/errors";

test("typed errors are recognised across two copies of the module, by class and never by a sibling class", async () => {
  // A query string makes the module loader evaluate the file again: a second copy, as a bundler makes.
  // @ts-expect-error TypeScript resolves no module by a path with a query string.
  const other = (await import("../lib/enqueue/errors?second-copy")) as typeof one;
  expect(other.EnqueueValidationError).not.toBe(one.EnqueueValidationError); // really two copies

  const validation = new other.EnqueueValidationError([
    { option: "options.idempotency.key", rule: "must be 1..512 UTF-8 bytes" },
  ]);
  expect(validation instanceof one.EnqueueValidationError).toBe(true);
  expect(validation instanceof one.WorkhorseError).toBe(true);
  expect(validation instanceof Error).toBe(true);
  expect(validation instanceof one.JobNotFoundError).toBe(false);
  expect(validation instanceof one.EnqueueIdempotencyConflictError).toBe(false);

  const notFound = new other.JobNotFoundError("01a23387-0000-7000-8000-000000000000");
  expect(notFound instanceof one.JobNotFoundError).toBe(true);
  expect(notFound instanceof one.EnqueueValidationError).toBe(false);
  const database = new other.WorkhorseDatabaseError("boom", new Error("cause"));
  expect(database instanceof one.WorkhorseDatabaseError).toBe(true);
  expect(database instanceof one.WorkhorseError).toBe(true);

  // Plain errors and look-alikes are not taken for ours.
  expect(new Error("x") instanceof one.WorkhorseError).toBe(false);
  expect({ code: "ENQUEUE_VALIDATION", name: "EnqueueValidationError" } instanceof one.EnqueueValidationError).toBe(
    false,
  );
  // The same copy keeps plain prototype semantics.
  expect(new one.EnqueueValidationError([]) instanceof one.EnqueueValidationError).toBe(true);
});

// The enqueue form's explanation of an outcome names what it knows: a debounce request refused
// because its key is held in another mode says which mode holds it.
import { describe, expect, it } from "vitest";
import { explainOutcome } from "../lib/console/wire/outcome-text";

describe("explainOutcome", () => {
  it("names the mode that holds the key when it is known", () => {
    expect(explainOutcome("non_replaceable", "incompatible_key_mode", "idempotency").meaning).toBe(
      "The key is held by an idempotency request, so a debounce request cannot change its job. Nothing was written.",
    );
    expect(explainOutcome("non_replaceable", "incompatible_key_mode", "throttle").meaning).toBe(
      "The key is held by a throttle request, so a debounce request cannot change its job. Nothing was written.",
    );
  });

  it("says both modes when the holder is not known (the observation log keeps no held mode)", () => {
    expect(explainOutcome("non_replaceable", "incompatible_key_mode").meaning).toBe(
      "The key is held by an idempotency or throttle request, so a debounce request cannot change its job. Nothing was written.",
    );
    expect(explainOutcome("non_replaceable", "incompatible_key_mode", null).meaning).toContain(
      "idempotency or throttle",
    );
  });

  it("keeps other outcomes and reasons as they are", () => {
    expect(explainOutcome("replayed", null, "idempotency")).toEqual(explainOutcome("replayed"));
    expect(explainOutcome("non_replaceable", "not_pending", "idempotency")).toEqual(
      explainOutcome("non_replaceable", "not_pending"),
    );
  });
});

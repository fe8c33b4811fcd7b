// The cross-language conformance file (sdk/conformance/enqueue.json) is what scripts/conformance.ts
// computes from the core today: a change to the core's canonical forms must regenerate it.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";

describe("sdk/conformance/enqueue.json", () => {
  it("is current (scripts/conformance.ts --check)", () => {
    let output = "";
    let status = 0;
    try {
      output = execFileSync("npx", ["tsx", "scripts/conformance.ts", "--check"], { encoding: "utf8" });
    } catch (err) {
      status = (err as { status: number }).status;
      output = String((err as { stderr: unknown }).stderr);
    }
    expect(output).toContain("is current");
    expect(status).toBe(0);
  }, 60_000);
});

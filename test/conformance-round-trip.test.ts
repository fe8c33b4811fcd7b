// The conformance file's round-trip payloads (sdk/conformance/enqueue.json, `roundTrip`): each one,
// enqueued with a key and read back as PostgreSQL's jsonb text (payload::text), is the file's
// payloadJsonbText, and that text, parsed and enqueued again with the same key, replays. The Python
// and Go clients run the same check (test_conformance_round_trip.py, TestConformanceRoundTrip).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { beforeAll, expect, test } from "vitest";
import { jsonbText } from "../lib/enqueue/payload-text";
import { setupQueueTests } from "./helpers";

interface RoundTrip {
  name: string;
  payloadText: string;
  payloadJsonbText: string;
  payloadCanonical: string;
  payloadDigest: string;
}
const file = JSON.parse(readFileSync(new URL("../sdk/conformance/enqueue.json", import.meta.url), "utf8")) as {
  roundTrip: RoundTrip[];
};

const t = setupQueueTests();
beforeAll(() => t.ready());

test("the file has round-trip payloads", () => {
  expect(file.roundTrip.length).toBeGreaterThan(3);
});

test.each(file.roundTrip.map((c, i) => [c.name, c, i] as const))(
  "a payload read back from PostgreSQL replays: %s",
  async (_name, c, i) => {
    const q = t.queue();
    const key = { idempotency: { key: `round-trip-${i}`, scope: "conformance-round-trip" } };
    const first = await q.enqueueWithResult("t", JSON.parse(c.payloadText), key);
    expect(first.outcome).toBe("accepted");
    const [row] = await t.sql<{ text: string }>("select payload::text as text from workhorse.job where id = $1", [
      first.jobId,
    ]);
    const stored = row?.text as string;
    expect(stored).toBe(c.payloadJsonbText);
    expect(jsonbText(JSON.parse(stored))).toBe(c.payloadJsonbText);
    expect(createHash("sha256").update(stored).digest().subarray(0, 8).toString("hex")).toBe(c.payloadDigest);
    const again = await q.enqueueWithResult("t", JSON.parse(stored), key);
    expect(again).toMatchObject({ outcome: "replayed", jobId: first.jobId });
  },
);

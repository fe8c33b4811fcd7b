// Runs only on a Citus coordinator (WORKHORSE_DISTRIBUTED=1): workhorse.key_bucket(), which routes a
// keyed job to its shard, gives every bucket of the conformance file (sdk/conformance/enqueue.json),
// the buckets the TypeScript, Python and Go clients compute and check in their own tests.
import { readFileSync } from "node:fs";
import { beforeAll, expect, test } from "vitest";
import { setupQueueTests } from "../helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const file = JSON.parse(readFileSync(new URL("../../sdk/conformance/enqueue.json", import.meta.url), "utf8")) as {
  buckets: { scope: string; keyHashHex: string; bucket: number; bucketedJobId: string }[];
};

test("workhorse.key_bucket and id_bucket give the conformance file's buckets", async () => {
  expect(file.buckets.length).toBeGreaterThan(0);
  for (const b of file.buckets) {
    const [row] = await t.sql<{ bucket: number; from_id: number }>(
      "select workhorse.key_bucket($1, decode($2, 'hex')) as bucket, workhorse.id_bucket($3::uuid) as from_id",
      [b.scope, b.keyHashHex, b.bucketedJobId],
    );
    expect({ scope: b.scope, ...row }).toEqual({ scope: b.scope, bucket: b.bucket, from_id: b.bucket });
  }
});

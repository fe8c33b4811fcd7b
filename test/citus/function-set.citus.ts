// Runs only on a Citus coordinator (WORKHORSE_DISTRIBUTED=1): the distributed installation records the
// Citus function set, and an installation that meets a new set (an upgrade) gets the Citus variants
// again, with the same definitions and enqueue_one_at still delegated to the key's node.
import { afterAll, expect, test } from "vitest";
import { migrate, Queue } from "../../lib/enqueue";
import { distributedFunctionSet } from "../../lib/enqueue/migrations.generated";
import { setupQueueTests } from "../helpers";

const t = setupQueueTests();
const queues: Queue[] = [];
afterAll(async () => {
  for (const q of queues) await q.close();
});

async function state() {
  const defs = await t.sql<{ sig: string; def: string }>(
    `select p.oid::regprocedure::text as sig, pg_get_functiondef(p.oid) as def
       from pg_proc p where p.pronamespace = 'workhorse'::regnamespace order by 1`,
  );
  const delegated = await t.sql<{ sig: string; arg: number; colocated: boolean }>(
    `select objid::regprocedure::text as sig, distribution_argument_index as arg, colocationid is not null as colocated
       from pg_catalog.pg_dist_object
      where classid = 'pg_proc'::regclass and distribution_argument_index is not null order by 1`,
  );
  return { defs, delegated };
}

test("the Citus set is recorded, and a new digest re-applies it with the same definitions and delegation", async () => {
  await t.ready();
  expect(await t.sql("select digest, layout from workhorse.function_set")).toEqual([
    { digest: distributedFunctionSet.digest, layout: "distributed" },
  ]);
  const before = await state();
  expect(before.delegated.map((d) => d.sig)).toEqual([expect.stringMatching(/^workhorse\.enqueue_one_at\(/)]);
  // The body of the Citus variant, not the single-node one, is what the coordinator holds.
  expect(before.defs.find((d) => d.sig.startsWith("workhorse.claim_jobs("))?.def).toContain("claim_shard");
  // A variant scripts/build-sql.mjs generated from the marks in sql/functions/save_checkpoint.sql: its
  // Citus text, with the bucket; no Citus variant, hand-written or generated, holds a mark.
  expect(before.defs.find((d) => d.sig.startsWith("workhorse.save_checkpoint("))?.def).toContain(
    "where j.bucket = workhorse.id_bucket(p_id) and j.id = p_id",
  );
  const variants = distributedFunctionSet.files.filter((f) => f.name.startsWith("citus/")).map((f) => f.name.slice(6));
  expect(variants).toEqual(expect.arrayContaining(["save_checkpoint", "enqueue_one_at", "claim_jobs"]));
  const ofVariants = before.defs.filter((d) => variants.includes(/^workhorse\.([a-z0-9_]+)\(/.exec(d.sig)?.[1] ?? ""));
  expect(ofVariants.length).toBeGreaterThanOrEqual(variants.length);
  expect(ofVariants.filter((d) => d.def.includes("--@")).map((d) => d.sig)).toEqual([]);

  // As an installation made by an older deploy: only another digest recorded.
  await t.pool.query("delete from workhorse.function_set");
  await t.pool.query("insert into workhorse.function_set (digest, layout) values ('older', 'distributed')");
  expect(await migrate(t.pool)).toMatchObject({ applied: [], distributed: true });
  expect(
    (await t.sql<{ digest: string }>("select digest from workhorse.function_set order by id")).map((r) => r.digest),
  ).toEqual(["older", distributedFunctionSet.digest]);
  expect(await state()).toEqual(before);
  const q = new Queue({ pool: t.pool, maintenance: false });
  queues.push(q);
  const first = await q.enqueueWithResult("t", {}, { idempotency: { key: "after-reapply" } });
  expect(await q.enqueueWithResult("t", {}, { idempotency: { key: "after-reapply" } })).toMatchObject({
    jobId: first.jobId,
    outcome: "replayed",
  });
});

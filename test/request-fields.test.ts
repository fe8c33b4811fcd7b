// The request's field table (lib/enqueue/store/enqueue.ts) against the enqueue functions' signatures
// in pg_proc: a parameter added, removed, renamed or retyped on one side only fails here.
import { beforeAll, expect, test } from "vitest";
import { ENQUEUE_BATCH_PARAMS, ENQUEUE_ONE_PARAMS } from "../lib/enqueue/store/enqueue";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

/** Input parameters of workhorse.<fn>: name and type, in order. */
async function signature(fn: string): Promise<{ name: string; type: string }[]> {
  const rows = await t.sql<{ name: string; type: string }>(
    `select a.name, format_type(a.type, null) as type
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace,
            unnest(p.proargnames[1:p.pronargs], p.proargtypes::oid[]) with ordinality as a(name, type, ord)
      where n.nspname = 'workhorse' and p.proname = $1
      order by a.ord`,
    [fn],
  );
  return rows;
}

const normal = (params: readonly { name: string; type: string }[]) =>
  params.map((p) => ({
    name: p.name,
    type: p.type.replace(/^timestamptz/, "timestamp with time zone").replace(/^(\w+)\[\]$/, "$1[]"),
  }));

test("enqueue_one takes exactly the field table's parameters, in order, with its types", async () => {
  expect(await signature("enqueue_one")).toEqual(normal(ENQUEUE_ONE_PARAMS));
});

test("enqueue_batch takes exactly the field table's arrays, in order, with their types", async () => {
  expect(await signature("enqueue_batch")).toEqual(normal(ENQUEUE_BATCH_PARAMS));
});

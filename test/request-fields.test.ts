// The request's field table (lib/enqueue/store/enqueue.ts) against the enqueue functions' signatures
// in pg_proc: a parameter added, removed, renamed or retyped on one side only fails here.
import { beforeAll, expect, test } from "vitest";
import { ENQUEUE_BATCH_PARAMS, ENQUEUE_ONE_PARAMS, ENQUEUE_TRACE_PARAM } from "../lib/enqueue/store/enqueue";
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

test("enqueue_one takes exactly the field table's parameters, in order, with its types, then the trace context", async () => {
  expect(await signature("enqueue_one")).toEqual(normal([...ENQUEUE_ONE_PARAMS, ENQUEUE_TRACE_PARAM]));
});

test("enqueue_batch takes exactly the field table's arrays, in order, with their types, then the trace context", async () => {
  expect(await signature("enqueue_batch")).toEqual(normal([...ENQUEUE_BATCH_PARAMS, ENQUEUE_TRACE_PARAM]));
});

test("the trace context is optional (defaulted), so clients that do not trace omit it", async () => {
  const rows = await t.sql<{ proname: string; defaults: number }>(
    `select p.proname, p.pronargdefaults as defaults
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'workhorse' and p.proname in ('enqueue_one', 'enqueue_batch') order by p.proname`,
  );
  // enqueue_one: p_schedule, p_max_wait_ms, p_retry, p_trace_context; enqueue_batch: p_schedules,
  // p_max_waits, p_retry, p_trace_context.
  expect(rows).toEqual([
    { proname: "enqueue_batch", defaults: 4 },
    { proname: "enqueue_one", defaults: 4 },
  ]);
});

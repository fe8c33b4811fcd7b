// The request's field table (lib/store/core/enqueue.ts) and the worker's calls (store/worker/calls.ts) against the functions' signatures
// in pg_proc: a parameter added, removed, renamed or retyped on one side only fails here.
import { beforeAll, expect, test } from "vitest";
import {
  ENQUEUE_BATCH_PARAMS,
  ENQUEUE_HOLD_PARAM,
  ENQUEUE_ONE_PARAMS,
  ENQUEUE_TRACE_PARAM,
} from "../lib/store/core/enqueue";
import { WORKER_FUNCTIONS } from "../lib/store/worker/calls";
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

test("enqueue_one takes exactly the field table's parameters, in order, with its types, then the trace context and the key lifetime", async () => {
  expect(await signature("enqueue_one")).toEqual(
    normal([...ENQUEUE_ONE_PARAMS, ENQUEUE_TRACE_PARAM, ENQUEUE_HOLD_PARAM]),
  );
});

test("enqueue_batch takes exactly the field table's arrays, in order, with their types, then the trace context and the key lifetimes", async () => {
  expect(await signature("enqueue_batch")).toEqual(
    normal([...ENQUEUE_BATCH_PARAMS, ENQUEUE_TRACE_PARAM, { name: "p_hold_untils", type: "text[]" }]),
  );
});

test("the trace context and the key lifetime are optional (defaulted), so clients that use neither omit them", async () => {
  const rows = await t.sql<{ proname: string; defaults: number }>(
    `select p.proname, p.pronargdefaults as defaults
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'workhorse' and p.proname in ('enqueue_one', 'enqueue_batch') order by p.proname`,
  );
  // enqueue_one: p_schedule, p_max_wait_ms, p_retry, p_trace_context, p_hold_until; enqueue_batch:
  // p_schedules, p_max_waits, p_retry, p_trace_context, p_hold_untils.
  expect(rows).toEqual([
    { proname: "enqueue_batch", defaults: 5 },
    { proname: "enqueue_one", defaults: 5 },
  ]);
});

test("the worker's calls (lib/store/worker/calls.ts, carried to every client) are the worker functions' signatures", async () => {
  const rows = await t.sql<{ fn: string; args: string[]; columns: { name: string; type: string }[] }>(
    `select p.proname as fn,
            array(select format_type(a.t, null) from unnest(p.proargtypes::oid[]) with ordinality as a(t, o)
                   order by a.o) as args,
            (select coalesce(json_agg(json_build_object('name', c.n, 'type', format_type(c.t, null)) order by c.o), '[]')
               from unnest(p.proargnames, p.proallargtypes, p.proargmodes) with ordinality as c(n, t, m, o)
              where c.m in ('o', 't')) as columns
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'workhorse' and p.proname = any ($1::text[])
      order by p.proname`,
    [Object.keys(WORKER_FUNCTIONS)],
  );
  const fromTable = Object.entries(WORKER_FUNCTIONS)
    .map(([fn, f]) => ({ fn, args: [...f.args], columns: f.columns.map((c) => ({ ...c })) }))
    .sort((a, b) => (a.fn < b.fn ? -1 : 1));
  expect(rows).toEqual(fromTable);
});

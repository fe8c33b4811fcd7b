// The word lists of lib/enqueue/vocabulary.ts against what PostgreSQL stores: the domains and CHECK
// constraints the migrations create, and the tasks one maintenance run records. A state, mode or
// outcome added on one side only fails here.
import { beforeAll, expect, test } from "vitest";
import { JOB_STATES, KEY_MODES, MAINTENANCE_TASKS, OBSERVATION_OUTCOMES } from "../lib/enqueue";
import { FINGERPRINT_FIELDS } from "../lib/enqueue/vocabulary";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

/** The quoted values of a CHECK (value in ('a', 'b')) or (col = ANY (ARRAY['a'::text, …])) definition. */
function quoted(definition: string): string[] {
  return [...definition.matchAll(/'([^']+)'/g)].map((m) => m[1] as string).sort();
}

async function domainValues(domain: string): Promise<string[]> {
  const rows = await t.sql<{ def: string }>(
    `select pg_get_constraintdef(c.oid) as def
       from pg_constraint c join pg_type ty on ty.oid = c.contypid
       join pg_namespace n on n.oid = ty.typnamespace
      where n.nspname = 'workhorse' and ty.typname = $1`,
    [domain],
  );
  expect(rows).toHaveLength(1);
  return quoted(rows[0]?.def ?? "");
}

test("job states: the job_state domain holds exactly JOB_STATES", async () => {
  expect(await domainValues("job_state")).toEqual([...JOB_STATES].sort());
});

test("key modes: the key_mode domain holds exactly KEY_MODES", async () => {
  expect(await domainValues("key_mode")).toEqual([...KEY_MODES].sort());
});

test("observation outcomes: the enqueue_observation outcome check holds exactly OBSERVATION_OUTCOMES", async () => {
  const rows = await t.sql<{ def: string }>(
    `select pg_get_constraintdef(c.oid) as def from pg_constraint c
      where c.conrelid = 'workhorse.enqueue_observation'::regclass and c.contype = 'c'
        and pg_get_constraintdef(c.oid) like '%outcome%'`,
  );
  expect(rows).toHaveLength(1);
  expect(quoted(rows[0]?.def ?? "")).toEqual([...OBSERVATION_OUTCOMES].sort());
});

test("maintenance tasks: one runMaintenance() records exactly MAINTENANCE_TASKS", async () => {
  await t.queue().runMaintenance({ trigger: "manual" });
  const rows = await t.sql<{ task: string }>("select distinct task from workhorse.maintenance_run order by task");
  expect(rows.map((r) => r.task)).toEqual([...MAINTENANCE_TASKS].sort());
});

test("fingerprint fields: workhorse.fingerprint_fields() lists FINGERPRINT_FIELDS in the same order", async () => {
  const [row] = await t.sql<{ f: string[] }>("select workhorse.fingerprint_fields() as f");
  expect(row?.f).toEqual([...FINGERPRINT_FIELDS]);
});

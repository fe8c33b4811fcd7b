// migrate() and the function files (sql/functions): an installation upgraded from any older version
// ends with exactly the functions a fresh one has, and the set is applied once per digest.
import pg from "pg";
import { afterAll, describe, expect, inject, test } from "vitest";
import { migrate } from "../lib/enqueue";
import { migrateBefore } from "../lib/enqueue/migrate-before";
import { functionSet } from "../lib/enqueue/migrations.generated";
import { dropDatabase } from "./helpers";

const adminUrl = inject("adminUrl");
// The single-node layout, also in a run on Citus (these databases have no citus extension).
const single = { distributed: false };
const pools: pg.Pool[] = [];
const names: string[] = [];

async function freshDatabase(): Promise<pg.Pool> {
  const name = `workhorse_test_fnset_${process.pid}_${names.length}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  names.push(name);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  pools.push(pool);
  return pool;
}

afterAll(async () => {
  for (const p of pools) await p.end();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  for (const n of names) await dropDatabase(admin, n);
  await admin.end();
});

/** Every function of schema workhorse: signature -> its definition as PostgreSQL prints it. */
async function definitions(pool: pg.Pool): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ sig: string; def: string }>(
    `select p.oid::regprocedure::text as sig, pg_get_functiondef(p.oid) as def
       from pg_proc p where p.pronamespace = 'workhorse'::regnamespace order by 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.sig, r.def]));
}

describe("the function set", () => {
  test("an installation of any older version, upgraded, holds exactly the functions of a fresh one", async () => {
    const fresh = await freshDatabase();
    await migrate(fresh, single);
    const expected = await definitions(fresh);
    expect(Object.keys(expected).length).toBeGreaterThanOrEqual(34);
    // Versions with a different set of function signatures: before the worker (2), before the
    // storage change dropped enqueue(jsonb) and a signature of enqueue_one (6), before heartbeat_jobs
    // changed its result (7), before debounce (9), and the last version whose migrations held the
    // functions (16: everything up to 015 applied).
    for (const before of [2, 6, 7, 9, 16]) {
      const old = await freshDatabase();
      await migrateBefore(old, before);
      const { rows } = await old.query<{ n: string }>(
        "select count(*) as n from pg_proc where pronamespace = 'workhorse'::regnamespace",
      );
      expect(Number(rows[0]!.n), `functions at version ${before - 1}`).toBeGreaterThan(0);
      await migrate(old, single);
      expect(await definitions(old), `upgraded from version ${before - 1}`).toEqual(expected);
    }
  });

  test("applied once per digest; a changed digest re-applies it; an older deploy's set is refused", async () => {
    const pool = await freshDatabase();
    await migrate(pool, single);
    const recorded = async () =>
      (await pool.query<{ digest: string }>("select digest from workhorse.function_set order by id")).rows.map(
        (r) => r.digest,
      );
    expect(await recorded()).toEqual([functionSet.digest]);
    const body = async () =>
      (
        await pool.query<{ src: string }>(
          "select prosrc as src from pg_proc where oid = 'workhorse.retry_delay_ms(jsonb, integer)'::regprocedure",
        )
      ).rows[0]!.src;
    const original = await body();

    // Same digest: nothing is applied (a hand-made change stays).
    await pool.query(
      "create or replace function workhorse.retry_delay_ms(p_policy jsonb, p_attempt integer) returns bigint language sql immutable as $$ select 0::bigint $$",
    );
    await migrate(pool, single);
    expect(await body()).toContain("select 0::bigint");
    expect(await recorded()).toEqual([functionSet.digest]);

    // Another set recorded since (a deploy that applied other files): this code's set is older.
    await pool.query("insert into workhorse.function_set (digest, layout) values ('newer', 'single')");
    await expect(migrate(pool, single)).rejects.toThrow(/replaced after this code's set/);

    // A digest this database never had (this code is newer): applied, every file, and recorded.
    await pool.query("delete from workhorse.function_set");
    await pool.query("insert into workhorse.function_set (digest, layout) values ('older', 'single')");
    expect(await migrate(pool, single)).toMatchObject({ applied: [] });
    expect(await body()).toBe(original);
    expect(await recorded()).toEqual(["older", functionSet.digest]);
  });
});

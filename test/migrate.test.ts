import pg from "pg";
import { expect, inject, test } from "vitest";
import { migrate } from "../lib/enqueue";
import { functionSet, migrations } from "../lib/enqueue/migrations.generated";
import { dropDatabase } from "./helpers";

test("migrate is idempotent and safe when several processes start at once", async () => {
  const adminUrl = inject("adminUrl");
  const name = `workhorse_test_migrate_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: url.toString(), max: 1 }));
  try {
    const results = await Promise.all(pools.map((p) => migrate(p)));
    const newest = Math.max(...migrations.map((m) => m.version));
    expect(results.map((r) => r.version)).toEqual(Array(6).fill(newest));
    expect(results.filter((r) => r.applied.length > 0)).toHaveLength(1);
    expect(results.flatMap((r) => r.applied)).toEqual(migrations.map((m) => m.version));
    expect(await migrate(pools[0]!)).toEqual({ applied: [], version: newest, distributed: false });
    const { rows } = await pools[0]!.query("select version from workhorse.migration order by version");
    expect(rows.map((r) => r.version)).toEqual(migrations.map((m) => m.version));
    // The function set (sql/functions) was applied once, by the first process, and recorded.
    const { rows: sets } = await pools[0]!.query("select digest, layout from workhorse.function_set");
    expect(sets).toEqual([{ digest: functionSet.digest, layout: "single" }]);
    // A database newer than the code is refused, not silently used.
    await pools[0]!.query("insert into workhorse.migration (version, name) values (999, 'future')");
    await expect(migrate(pools[0]!)).rejects.toThrow(/newer than this code/);
  } finally {
    for (const p of pools) await p.end();
    await dropDatabase(admin, name);
    await admin.end();
  }
});

test("the generated migrations module matches sql/migrations, sql/functions and sql/distributed", async () => {
  const { execFileSync } = await import("node:child_process");
  expect(() => execFileSync("node", ["scripts/build-sql.mjs", "--check"], { stdio: "pipe" })).not.toThrow();
});

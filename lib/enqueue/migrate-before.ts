/**
 * Older schemas, for upgrade tests and benchmarks only: not reached from the package's entries, so
 * the frozen migration texts (legacy-migrations.generated.ts) do not ship.
 */
import type pg from "pg";
import { withPoolClient } from "../store/pool-client";
import { legacyMigrations } from "./legacy-migrations.generated";
import { createMissingTriggerFunctions } from "./migrate";
import { functionSet, migrations } from "./migrations.generated";

/**
 * The schema as an earlier version of this code left it: every migration below `version`, recorded
 * in `workhorse.migration` as `migrate()` records them, on an empty database. For upgrade tests and
 * benchmarks (a later `migrate()` applies the rest). Not part of the public surface.
 */
export async function migrateBefore(pool: pg.Pool, version: number): Promise<void> {
  // Versions up to 15 shipped their functions inside the migrations: their text as released builds
  // the schema together with the function bodies of that version. A version after those is built
  // from the current migrations plus the current function set (not recorded, so migrate() applies
  // it again); the function bodies of later versions live in git history only.
  const legacy = new Map(legacyMigrations.map((m) => [m.version, m]));
  await withPoolClient(pool, async (c) => {
    await c.query("create schema workhorse");
    await c.query(
      "create table workhorse.migration (version integer primary key, name text not null, applied_at timestamptz not null default now())",
    );
    let current = false;
    for (const m of migrations.filter((m) => m.version < version)) {
      const old = legacy.get(m.version);
      if (!old) {
        if (!current) await createMissingTriggerFunctions(c, functionSet);
        current = true;
      }
      await c.query((old ?? m).sql);
      await c.query("insert into workhorse.migration (version, name) values ($1, $2)", [m.version, m.name]);
    }
    if (current) for (const f of functionSet.files) await c.query(f.sql);
  });
}

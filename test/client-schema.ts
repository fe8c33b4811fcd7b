// The schema for the Python and Go clients' tests (sdk/python/tests/ts/migrate.ts,
// sdk/go/testdata/migrate.ts): the TypeScript core's migrate() on DATABASE_URL. With
// WORKHORSE_DISTRIBUTED=1 the database is first made a Citus database (created on the coordinator
// named by WORKHORSE_ADMIN_URL when missing) and gets the distributed layout.
import pg from "pg";
import { type MigrateResult, migrate } from "../lib/enqueue";
import { ensureCitusDatabase } from "./citus";

export async function migrateClientTestDatabase(): Promise<MigrateResult> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("DATABASE_URL names the database to migrate");
  const distributed = process.env.WORKHORSE_DISTRIBUTED === "1";
  if (distributed) {
    const adminUrl = process.env.WORKHORSE_ADMIN_URL;
    if (!adminUrl) throw new Error("WORKHORSE_DISTRIBUTED=1 needs WORKHORSE_ADMIN_URL (the coordinator's admin URL)");
    await ensureCitusDatabase(adminUrl, url);
  }
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    return await migrate(pool, { distributed });
  } finally {
    await pool.end();
  }
}

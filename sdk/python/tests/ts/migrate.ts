// Migrates DATABASE_URL with the TypeScript core (which owns the schema) and prints the result.
// With WORKHORSE_DISTRIBUTED=1 the database is first made a Citus database (created on the
// coordinator named by WORKHORSE_ADMIN_URL when missing) and gets the distributed layout.
import pg from "pg";
import { migrate } from "../../../../lib/enqueue";
import { prepareCitusDatabase } from "../../../../test/citus";

const url = process.env.DATABASE_URL as string;
const distributed = process.env.WORKHORSE_DISTRIBUTED === "1";
if (distributed) {
  const adminUrl = process.env.WORKHORSE_ADMIN_URL;
  if (!adminUrl) throw new Error("WORKHORSE_DISTRIBUTED=1 needs WORKHORSE_ADMIN_URL (the coordinator's admin URL)");
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const name = new URL(url).pathname.slice(1);
  const { rowCount } = await admin.query("select 1 from pg_database where datname = $1", [name]);
  if (!rowCount) await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  await admin.end();
  await prepareCitusDatabase(adminUrl, url);
}
const pool = new pg.Pool({ connectionString: url });
try {
  console.log(JSON.stringify(await migrate(pool, { distributed })));
} finally {
  await pool.end();
}

// Migrates the database at DATABASE_URL with the TypeScript core's migrate() (the Go tests' schema).
import pg from "pg";
import { migrate } from "../../../lib/enqueue/index";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
try {
  await migrate(pool);
} finally {
  await pool.end();
}

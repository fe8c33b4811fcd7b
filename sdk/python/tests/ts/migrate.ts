// Migrates DATABASE_URL with the TypeScript core (which owns the schema) and prints the result.
import pg from "pg";
import { migrate } from "../../../../lib/enqueue";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
try {
  console.log(JSON.stringify(await migrate(pool)));
} finally {
  await pool.end();
}

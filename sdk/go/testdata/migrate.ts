// Migrates the database at DATABASE_URL with the TypeScript core's migrate() (the Go tests' schema;
// the Citus layout with WORKHORSE_DISTRIBUTED=1, test/client-schema.ts).
import { migrateClientTestDatabase } from "../../../test/client-schema";

await migrateClientTestDatabase();

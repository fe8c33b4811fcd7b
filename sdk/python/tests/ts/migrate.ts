// Migrates DATABASE_URL with the TypeScript core (which owns the schema) and prints the result (the
// Citus layout with WORKHORSE_DISTRIBUTED=1, test/client-schema.ts).
import { migrateClientTestDatabase } from "../../../../test/client-schema";

console.log(JSON.stringify(await migrateClientTestDatabase()));

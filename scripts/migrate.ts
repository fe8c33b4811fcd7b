/**
 * `npm run migrate -- --database <name>`: brings one configured database's workhorse schema up to
 * this code's version (WORKHORSE_DATABASES or WORKHORSE_DATABASES_FILE names it; `--all` migrates
 * every one). Without either configured, migrates DATABASE_URL. Prints the version reached.
 */

import { migrate } from "@workhorse/core";
import pg from "pg";
import { DatabaseConfigError, loadDatabases } from "../lib/console/databases/databases";

const log = (msg: string) => process.stdout.write(`[workhorse] ${msg}\n`);

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const at = args.indexOf("--database");
  const wanted = at >= 0 ? args[at + 1] : undefined;
  const all = args.includes("--all");
  const { databases, source } = loadDatabases();
  const chosen =
    source === "DATABASE_URL" || all ? databases : databases.filter((d) => wanted !== undefined && d.name === wanted);
  if (chosen.length === 0) {
    throw new DatabaseConfigError(
      `Name the database to migrate: --database <name> (one of ${databases.map((d) => d.name).join(", ")}), or --all.`,
    );
  }
  for (const d of chosen) {
    const pool = new pg.Pool({ connectionString: d.url, max: 1 });
    try {
      const m = await migrate(pool, { distributed: d.distributed });
      log(
        `${d.name}: ${m.applied.length ? `migrated to version ${m.version}` : `schema is current (version ${m.version})`}`,
      );
    } finally {
      await pool.end();
    }
  }
}

main().catch((err) => {
  process.stderr.write(`[workhorse] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof DatabaseConfigError ? 2 : 1);
});

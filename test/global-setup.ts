// One PostgreSQL per test run (embedded, or DATABASE_URL) and one migrated template database that
// every test file clones, so files are isolated from each other and start in milliseconds. Before
// that, the system tools some tests need (Debian's prometheus: scripts/system-tools.mjs).
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { migrate } from "../lib/enqueue";
import { ensurePrometheus } from "../scripts/system-tools.mjs";
import { distributedTests, prepareCitusDatabase } from "./citus";

export const TEMPLATE = `workhorse_test_template_${process.pid}`;

declare module "vitest" {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
  }
}

export default async function setup(project: TestProject) {
  // Once per run, before any test file: the tests that need it then fail with this sentence.
  const log = (line: string) => process.stderr.write(`[vitest] ${line}\n`);
  const { problem } = ensurePrometheus({ logDir: path.resolve(import.meta.dirname, "..", "test-results"), log });
  if (problem) log(problem);
  const info = await startPrivateServer();
  const admin = new pg.Client({ connectionString: info.adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${TEMPLATE}`);
  await admin.query(`create database ${TEMPLATE}`);
  // On Citus a database cannot be cloned (its shards live on the workers): the template is only
  // checked here, and every test file lays out its own database (test/citus.ts).
  if (distributedTests()) await prepareCitusDatabase(info.adminUrl, info.urlFor(TEMPLATE));
  const pool = new pg.Pool({ connectionString: info.urlFor(TEMPLATE), max: 1 });
  await migrate(pool);
  await pool.end();
  project.provide("adminUrl", info.adminUrl);
  project.provide("templateDatabase", TEMPLATE);
  return async () => {
    // Drop what this run created (clones are dropped by their files; this catches crashed ones).
    const { rows } = await admin.query<{ datname: string }>("select datname from pg_database where datname like $1", [
      `workhorse_test_%_${process.pid}%`,
    ]);
    // On Citus a database already dropped on some nodes answers 3D000 ("does not exist"): gone is gone.
    const drop = (name: string) =>
      admin
        .query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`)
        .catch((err: { code?: string }) => {
          if (err.code !== "3D000") throw err;
        });
    for (const r of rows) await drop(r.datname);
    await drop(TEMPLATE);
    await admin.end();
    await stopEmbeddedPostgres();
  };
}

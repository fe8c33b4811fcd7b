/**
 * The package's bin, for deploy pipelines: `workhorse migrate [--distributed]` brings the database
 * at `DATABASE_URL` up to this package's schema version, printing the version before and after.
 *
 * Exit codes: 0 migrated or already current; 1 the database refused (a newer deploy's schema, an
 * error in a migration); 2 a usage error, no or a malformed `DATABASE_URL`, or a server that cannot
 * be reached or refuses the login (one sentence on stderr, never the URL's password).
 */
import pg from "pg";
import { migrate, schemaStatus } from "./migrate";

const USAGE = `Usage: workhorse migrate [--distributed]

Brings the workhorse schema of the database at DATABASE_URL up to this package's version.
  --distributed   lay a new schema out for Citus (an existing schema keeps its layout)
Exit codes: 0 done, 1 the database refused, 2 usage, configuration or connection.
`;

class Refusal extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message);
  }
}

/** `DATABASE_URL` checked: a postgres:// or postgresql:// URL with a host. */
function databaseUrl(env: Readonly<Record<string, string | undefined>>): string {
  const raw = env.DATABASE_URL;
  if (!raw) throw new Refusal("DATABASE_URL is not set: set it to postgres://user:password@host:port/database.", 2);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Refusal("DATABASE_URL is not a URL: write it as postgres://user:password@host:port/database.", 2);
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new Refusal(`DATABASE_URL must start with postgres:// or postgresql://, not ${url.protocol}//.`, 2);
  }
  return raw;
}

/** Where the URL points, for messages: host, port and database, never the user's password. */
function target(raw: string): string {
  const url = new URL(raw);
  return `${url.hostname}:${url.port || "5432"}${url.pathname || "/"}`;
}

// Connection failures: a Node socket error code, or a SQLSTATE of class 08 (connection), 28 (login),
// 3D (no such database) or 57P03 (the server is starting).
function cannotConnect(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return /timeout|terminated/i.test(String((err as Error)?.message));
  return /^E[A-Z]+$/.test(code) || /^(08|28|3D)/.test(code) || code === "57P03";
}

/** Runs the bin's command; resolves to the exit code. `out` and `err` take whole lines. */
export async function runCli(
  args: string[],
  env: Readonly<Record<string, string | undefined>>,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const [command, ...rest] = args;
  if (command === "--help" || command === "-h" || command === "help") {
    out(USAGE);
    return 0;
  }
  const unknown = rest.filter((a) => a !== "--distributed");
  if (command !== "migrate" || unknown.length > 0) {
    err(
      command === "migrate"
        ? `workhorse migrate: unknown option ${unknown[0]}.`
        : `workhorse: unknown command ${command ?? "(none)"}; run workhorse migrate.`,
    );
    err(USAGE);
    return 2;
  }
  let url: string;
  try {
    url = databaseUrl(env);
  } catch (e) {
    err(`workhorse: ${(e as Error).message}`);
    return 2;
  }
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 10_000 });
  pool.on("error", () => {});
  try {
    let before: Awaited<ReturnType<typeof schemaStatus>>;
    try {
      before = await schemaStatus(pool);
    } catch (e) {
      if (cannotConnect(e)) {
        throw new Refusal(`cannot reach PostgreSQL at ${target(url)}: ${(e as Error).message}.`, 2);
      }
      throw e;
    }
    out(`schema version before: ${before.version === 0 ? "none" : before.version} (this package: ${before.latest})`);
    const result = await migrate(pool, rest.includes("--distributed") ? { distributed: true } : {});
    out(
      `schema version after: ${result.version}${result.applied.length ? ` (applied ${result.applied.join(", ")})` : " (already current)"}${result.distributed ? ", Citus layout" : ""}`,
    );
    return 0;
  } catch (e) {
    const exitCode = e instanceof Refusal ? e.exitCode : 1;
    err(`workhorse: ${(e as Error).message}`);
    return exitCode;
  } finally {
    await pool.end().catch(() => {});
  }
}

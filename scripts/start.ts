/**
 * `npm start` / `npm run dev`: the Workhorse operations console.
 *
 * 1. PostgreSQL: `DATABASE_URL`, or the embedded server (lib/db: data under .workhorse/pg, port
 *    WORKHORSE_PG_PORT, reused when already running), database `workhorse`.
 * 2. Migrates (idempotent).
 * 3. `next build` when there is no build or the sources changed since it (not in --dev).
 * 4. Serves on HOST:PORT (default 127.0.0.1:3000) and prints the URL and how to sign in.
 * Ctrl-C (SIGINT) or SIGTERM stops the web server and, if this process started it, PostgreSQL.
 *
 * Refuses to listen on a non-loopback HOST unless WORKHORSE_CONSOLE_PASSWORD(_HASH) is set, and to start
 * with a WORKHORSE_SESSION_SECRET under 32 or a WORKHORSE_METRICS_TOKEN under 16 characters.
 * `tsx scripts/start.ts --hash-password` reads a password on stdin and prints a value for
 * WORKHORSE_CONSOLE_PASSWORD_HASH.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { isIP } from "node:net";
import path from "node:path";
import { migrate, schemaStatus } from "@workhorse/core";
import pg from "pg";
import { consoleConfig, hashPassword, isLoopbackHost, metricsTokenProblem } from "../lib/console/databases/config";
import {
  type DatabaseConfig,
  DatabaseConfigError,
  loadDatabases,
  migrateCommand,
  migratePolicy,
} from "../lib/console/databases/databases";
import { DEFAULT_DATABASE, ensureDatabase, ensureServer, shownUrl, stopEmbeddedPostgres } from "../lib/db";
import { waitForHttp } from "./wait-for-http.mjs";

const root = path.resolve(import.meta.dirname, "..");
const dev = process.argv.includes("--dev");
const log = (msg: string) => process.stdout.write(`[workhorse] ${msg}\n`);

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

function newestSource(): number {
  let newest = 0;
  const walk = (p: string) => {
    if (!existsSync(p)) return;
    const st = statSync(p);
    if (st.isDirectory()) {
      for (const e of readdirSync(p)) if (e !== "node_modules" && !e.startsWith(".")) walk(path.join(p, e));
    } else if (/\.(tsx?|css|mjs|js|json)$/.test(p)) newest = Math.max(newest, st.mtimeMs);
  };
  for (const p of [
    "app",
    "components",
    "lib",
    "public",
    "next.config.js",
    "proxy.ts",
    "postcss.config.mjs",
    "tsconfig.json",
    "package.json",
  ]) {
    walk(path.join(root, p));
  }
  return newest;
}

function needsBuild(): boolean {
  const id = path.join(root, ".next", "BUILD_ID");
  if (!existsSync(id)) return true;
  return newestSource() > statSync(id).mtimeMs;
}

const nextBin = createRequire(import.meta.url).resolve("next/dist/bin/next");

function run(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [nextBin, ...args], { cwd: root, env, stdio: "inherit" });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<void> {
  if (process.argv.includes("--hash-password")) {
    if (process.stdin.isTTY) process.stderr.write("Password (then Enter, Ctrl-D): ");
    const pw = await readStdin();
    if (!pw) throw new Error("empty password");
    process.stdout.write(`WORKHORSE_CONSOLE_PASSWORD_HASH='${hashPassword(pw)}'\n`);
    return;
  }
  const host = process.env.HOST || "127.0.0.1";
  const port = Number(process.env.PORT || 3000);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`PORT must be 1-65535, got ${process.env.PORT}`);
  const cfg = consoleConfig();
  const secret = process.env.WORKHORSE_SESSION_SECRET;
  if (secret !== undefined && secret.length < 32) {
    process.stderr.write(
      `[workhorse] WORKHORSE_SESSION_SECRET is ${secret.length} characters; it must be at least 32 (e.g. \`openssl rand -hex 32\`), or unset for a random one per start.\n`,
    );
    process.exitCode = 2;
    return;
  }
  const tokenProblem = metricsTokenProblem();
  if (tokenProblem) {
    process.stderr.write(`[workhorse] ${tokenProblem}\n`);
    process.exitCode = 2;
    return;
  }
  if (!cfg.password && !isLoopbackHost(host)) {
    process.stderr.write(
      `[workhorse] Refusing to listen on ${host} without a password: set WORKHORSE_CONSOLE_PASSWORD (or _HASH), or use HOST=127.0.0.1.\n`,
    );
    process.exitCode = 2;
    return;
  }

  const proxies = (process.env.WORKHORSE_TRUSTED_PROXY ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const badProxy = proxies.find((p) => isIP(p) === 0);
  if (badProxy !== undefined) {
    process.stderr.write(
      `[workhorse] WORKHORSE_TRUSTED_PROXY must list the proxy's IP addresses, comma-separated; "${badProxy}" is not one.\n`,
    );
    process.exitCode = 2;
    return;
  }

  if (process.env.WORKHORSE_DATABASES !== undefined || process.env.WORKHORSE_DATABASES_FILE !== undefined) {
    let setup: ReturnType<typeof loadDatabases>;
    let policy: ReturnType<typeof migratePolicy>;
    try {
      setup = loadDatabases();
      policy = migratePolicy();
    } catch (err) {
      if (!(err instanceof DatabaseConfigError)) throw err;
      process.stderr.write(`[workhorse] ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    await Promise.all(setup.databases.map((d) => checkDatabase(d, policy)));
    await serve(host, port, cfg, process.env, false);
    return;
  }

  let databaseUrl = process.env.DATABASE_URL;
  let startedPg = false;
  if (!databaseUrl) {
    log("starting the embedded PostgreSQL (or reusing one already running)…");
    const info = await ensureServer({ quiet: true });
    await ensureDatabase(info, DEFAULT_DATABASE);
    databaseUrl = info.urlFor(DEFAULT_DATABASE);
    startedPg = info.startedHere;
    log(`PostgreSQL ${startedPg ? "started" : "reused"} at ${shownUrl(databaseUrl)}`);
  } else {
    log(`PostgreSQL at ${shownUrl(databaseUrl)} (DATABASE_URL)`);
  }
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const m = await migrate(pool);
    log(m.applied.length ? `migrated to version ${m.version}` : `schema is current (version ${m.version})`);
  } finally {
    await pool.end();
  }
  await serve(host, port, cfg, { ...process.env, DATABASE_URL: databaseUrl }, startedPg);
}

/**
 * One configured database at start: migrated under WORKHORSE_MIGRATE=auto; otherwise only read, and
 * an old schema is reported with the command that migrates it. One that cannot be reached is
 * reported and the console starts anyway (its fleet page shows it as down).
 */
async function checkDatabase(d: DatabaseConfig, policy: "auto" | "never"): Promise<void> {
  const pool = new pg.Pool({ connectionString: d.url, max: 1, connectionTimeoutMillis: 5000 });
  pool.on("error", () => {});
  try {
    if (policy === "auto") {
      const m = await migrate(pool, { distributed: d.distributed });
      log(
        `${d.name}: ${m.applied.length ? `migrated to version ${m.version}` : `schema is current (version ${m.version})`}`,
      );
      return;
    }
    const s = await schemaStatus(pool);
    if (s.state === "current") log(`${d.name}: schema is current (version ${s.version})`);
    else if (s.state === "newer")
      log(`${d.name}: schema version ${s.version} is newer than this console (${s.latest}): deploy the newer console.`);
    else {
      log(
        `${d.name}: schema ${s.state === "missing" ? "not installed" : `at version ${s.version}, this console needs ${s.latest}`}; not migrated (WORKHORSE_MIGRATE is not auto): run \`${migrateCommand(d.name)}\``,
      );
    }
  } catch (err) {
    log(
      `${d.name}: cannot be read (${err instanceof Error ? err.message : String(err)}); the console starts without it`,
    );
  } finally {
    await pool.end().catch(() => {});
  }
}

async function serve(
  host: string,
  port: number,
  cfg: ReturnType<typeof consoleConfig>,
  baseEnv: NodeJS.ProcessEnv,
  startedPg: boolean,
): Promise<void> {
  let child: ChildProcess | null = null;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    if (child && child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          child?.kill("SIGKILL");
          resolve();
        }, 5000);
        child?.once("exit", () => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    if (startedPg) {
      log("stopping PostgreSQL…");
      await stopEmbeddedPostgres().catch(() => {});
    }
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  const env: NodeJS.ProcessEnv = {
    ...baseEnv,
    WORKHORSE_SESSION_SECRET: process.env.WORKHORSE_SESSION_SECRET || randomBytes(32).toString("hex"),
    NEXT_TELEMETRY_DISABLED: "1",
  };
  if (!dev && needsBuild()) {
    log("building the console (first start or sources changed; about a minute)…");
    const code = await run(["build"], { ...env, NODE_ENV: "production" });
    if (code !== 0) {
      process.stderr.write("[workhorse] next build failed\n");
      await stop(code);
      return;
    }
  }
  // scripts/serve.ts rather than `next start`: it decides client address and origin from the socket
  // (forwarded headers only from WORKHORSE_TRUSTED_PROXY) before Next.js sees the request.
  child = spawn(process.execPath, ["--import", "tsx", "scripts/serve.ts", ...(dev ? ["--dev"] : [])], {
    cwd: root,
    env: { ...env, HOST: host, PORT: String(port), NODE_ENV: dev ? "development" : "production" },
    stdio: "inherit",
  });
  child.on("exit", (code) => {
    if (!stopping) {
      process.stderr.write(`[workhorse] the web server exited (${code})\n`);
      void stop(code ?? 1);
    }
  });
  const shownHost = host.includes(":") ? `[${host}]` : host;
  const url = `http://${shownHost}:${port}`;
  if (await waitForHttp(`${url}/sign-in`, child, 120_000, 250)) {
    log(`console ready: ${url}`);
    if (cfg.password) log("sign in with your name (for the audit log) and WORKHORSE_CONSOLE_PASSWORD.");
    else log("no password set: no sign-in; serving this machine only. Set WORKHORSE_CONSOLE_PASSWORD to require one.");
    if (cfg.readOnly) log("read-only mode: enqueue, purge and maintenance are disabled.");
    log("fill it with demo traffic: npm run demo   ·   stop: Ctrl-C");
  }
}

main().catch(async (err) => {
  process.stderr.write(`[workhorse] ${err instanceof Error ? err.message : String(err)}\n`);
  await stopEmbeddedPostgres().catch(() => {});
  process.exit(1);
});

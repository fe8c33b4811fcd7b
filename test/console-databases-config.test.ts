// The console's list of databases: WORKHORSE_DATABASES, WORKHORSE_DATABASES_FILE, or DATABASE_URL
// alone; every bad entry is named in one sentence that never repeats a URL.
import { describe, expect, test } from "vitest";
import {
  DatabaseConfigError,
  loadDatabases,
  parseDatabasesJson,
  parseDatabasesString,
} from "../lib/console/databases/databases";

const A = "postgres://u:secret-pw@db-a.example:5432/workhorse";
const B = "postgresql://u@db-b.example/workhorse";

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DatabaseConfigError);
    const message = (err as Error).message;
    expect(message).not.toContain("secret-pw");
    // One sentence: one full stop, at the end.
    expect(message.endsWith(".")).toBe(true);
    return message;
  }
  throw new Error("expected a DatabaseConfigError");
}

describe("WORKHORSE_DATABASES", () => {
  test("names in the order given, with their options", () => {
    expect(parseDatabasesString(`Production=${A};production;readonly|Staging=${B};distributed`)).toEqual([
      { name: "Production", url: A, readonly: true, production: true, distributed: false, keySecretEnv: null },
      { name: "Staging", url: B, readonly: false, production: false, distributed: true, keySecretEnv: null },
    ]);
  });

  test("keysecretenv names the variable holding that database's secret", () => {
    expect(parseDatabasesString(`EU=${A};keysecretenv=EU_SECRET`)[0]?.keySecretEnv).toBe("EU_SECRET");
  });

  test("one bare URL is one database named default", () => {
    expect(parseDatabasesString(A)).toEqual([
      { name: "default", url: A, readonly: false, production: false, distributed: false, keySecretEnv: null },
    ]);
  });

  test("a duplicate name (ignoring case) is named with the entry it repeats", () => {
    expect(failure(() => parseDatabasesString(`Production=${A}|production=${B}`))).toBe(
      'WORKHORSE_DATABASES has a bad entry: entry 2 ("production"): the name is already used by entry 1 (names are compared ignoring case).',
    );
  });

  test("an unparsable URL is named by its entry, without the URL", () => {
    expect(failure(() => parseDatabasesString(`Production=${A}|Staging=db-b.example:5432`))).toBe(
      'WORKHORSE_DATABASES has a bad entry: entry 2 ("Staging"): the URL is not a postgres:// or postgresql:// URL.',
    );
    expect(failure(() => parseDatabasesString("Staging=mysql://h/db"))).toContain('entry 1 ("Staging")');
  });

  test("an unknown option is named", () => {
    expect(failure(() => parseDatabasesString(`Production=${A};redonly`))).toBe(
      'WORKHORSE_DATABASES has a bad entry: entry 1 ("Production"): unknown option "redonly" (known: readonly, production, distributed, keySecretEnv).',
    );
  });

  test("empty: the whole value, or one entry", () => {
    expect(failure(() => parseDatabasesString("  "))).toBe(
      'WORKHORSE_DATABASES is set but empty: give Name=postgres://… entries separated by "|".',
    );
    expect(failure(() => parseDatabasesString(`Production=${A}||Staging=${B}`))).toBe(
      'WORKHORSE_DATABASES has a bad entry: entry 2 is empty (two "|" in a row, or one at an end).',
    );
  });

  test("a bad name and a nameless URL among several", () => {
    expect(failure(() => parseDatabasesString(`Prod/EU=${A}|${B}`))).toBe(
      "WORKHORSE_DATABASES has 2 bad entries: entry 1 (\"Prod/EU\"): the name must be 1 to 63 letters, digits, '-', '_' or '.', starting with a letter or digit; entry 2 has no name (write Name=postgres://… when there are several).",
    );
  });

  test("every bad entry at once, in one sentence", () => {
    const message = failure(() => parseDatabasesString(`A=${A};x|B=nope|a=${B}|`));
    expect(message).toBe(
      'WORKHORSE_DATABASES has 4 bad entries: entry 1 ("A"): unknown option "x" (known: readonly, production, distributed, keySecretEnv); entry 2 ("B"): the URL is not a postgres:// or postgresql:// URL; entry 3 ("a"): the name is already used by entry 1 (names are compared ignoring case); entry 4 is empty (two "|" in a row, or one at an end).',
    );
  });
});

describe("WORKHORSE_DATABASES_FILE", () => {
  test("a JSON array with name, url and flags", () => {
    const text = JSON.stringify([
      { name: "EU", url: A, production: true },
      { name: "US", url: B, readonly: true, distributed: true, keySecretEnv: "US_SECRET" },
    ]);
    expect(parseDatabasesJson(text, "f.json")).toEqual([
      { name: "EU", url: A, readonly: false, production: true, distributed: false, keySecretEnv: null },
      { name: "US", url: B, readonly: true, production: false, distributed: true, keySecretEnv: "US_SECRET" },
    ]);
  });

  test("unknown keys, wrong types, a missing URL, a duplicate: all named", () => {
    const text = JSON.stringify([
      { name: "EU", url: A, colour: "red" },
      { name: "US", url: B, readonly: "yes" },
      { name: "Asia" },
      { name: "eu", url: B },
      7,
    ]);
    expect(failure(() => parseDatabasesJson(text, "f.json"))).toBe(
      'f.json has 5 bad entries: entry 1 ("EU"): unknown option "colour" (known: readonly, production, distributed, keySecretEnv); entry 2 ("US"): readonly must be true or false; entry 3 ("Asia"): no URL; entry 4 ("eu"): the name is already used by entry 1 (names are compared ignoring case); entry 5 is not an object with "name" and "url".',
    );
  });

  test("not JSON, or an empty array", () => {
    expect(failure(() => parseDatabasesJson("{", "f.json"))).toMatch(/^f\.json is not valid JSON \(/);
    expect(failure(() => parseDatabasesJson("[]", "f.json"))).toBe(
      'f.json must hold a non-empty JSON array of { "name": …, "url": … } objects.',
    );
  });
});

describe("loadDatabases", () => {
  test("DATABASE_URL alone is one database named default, as today", () => {
    expect(loadDatabases({ DATABASE_URL: A })).toEqual({
      databases: [
        { name: "default", url: A, readonly: false, production: false, distributed: false, keySecretEnv: null },
      ],
      source: "DATABASE_URL",
    });
    expect(loadDatabases({ DATABASE_URL: A, WORKHORSE_DISTRIBUTED: "1" }).databases[0]?.distributed).toBe(true);
  });

  test("WORKHORSE_DATABASES wins over DATABASE_URL", () => {
    const s = loadDatabases({ DATABASE_URL: A, WORKHORSE_DATABASES: `Staging=${B}` });
    expect(s.source).toBe("WORKHORSE_DATABASES");
    expect(s.databases.map((d) => d.name)).toEqual(["Staging"]);
  });

  test("the file is read through readFile; an unreadable file is named", () => {
    const s = loadDatabases({ WORKHORSE_DATABASES_FILE: "/etc/w.json" }, (f) =>
      f === "/etc/w.json" ? JSON.stringify([{ name: "EU", url: A }]) : "",
    );
    expect(s.databases.map((d) => d.name)).toEqual(["EU"]);
    expect(failure(() => loadDatabases({ WORKHORSE_DATABASES_FILE: "/nope/w.json" }))).toBe(
      'WORKHORSE_DATABASES_FILE names "/nope/w.json", which cannot be read (ENOENT).',
    );
  });

  test("both sources at once, nothing at all, a shared secret for several, a missing secret variable", () => {
    expect(failure(() => loadDatabases({ WORKHORSE_DATABASES: `A=${A}`, WORKHORSE_DATABASES_FILE: "x" }))).toBe(
      "Set WORKHORSE_DATABASES or WORKHORSE_DATABASES_FILE, not both.",
    );
    expect(failure(() => loadDatabases({}))).toMatch(/^DATABASE_URL is not set/);
    expect(
      failure(() => loadDatabases({ WORKHORSE_DATABASES: `A=${A}|B=${B}`, WORKHORSE_KEY_SECRET: "ab".repeat(32) })),
    ).toMatch(/^WORKHORSE_KEY_SECRET is one installation's secret and several databases are configured/);
    expect(failure(() => loadDatabases({ WORKHORSE_DATABASES: `A=${A};keysecretenv=A_SECRET` }))).toBe(
      'Database "A" takes its key secret from A_SECRET, which is not set.',
    );
  });
});

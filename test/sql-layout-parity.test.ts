// The SQL files, read as text (no database, no Citus): every function has one home, the single-node
// and Citus layouts offer the same functions with the same signatures, a Citus variant says which
// version of its single-node file it follows, and the migrations hold no function statements.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";

const root = path.resolve(import.meta.dirname, "..");
const read = (...p: string[]) => readFileSync(path.join(root, ...p), "utf8");
const sqlFiles = (...dir: string[]) =>
  readdirSync(path.join(root, ...dir))
    .filter((f) => f.endsWith(".sql"))
    .sort();

/**
 * Functions only one layout has, on purpose. A Citus-only function is a per-shard helper the
 * distributed variants call; sql/distributed/layout.sql's functions exist only once the tables are
 * distributed.
 */
const ONLY_CITUS: Record<string, string> = {
  enqueue_one_at: "enqueue_one and enqueue_batch on one shard, delegated to the node holding the key's bucket",
  enqueue_debounce_at: "enqueue_debounce on one shard, called by enqueue_one_at",
  claim_shard: "claim_jobs on one shard's buckets, called by the Citus claim_jobs",
  id_bucket: "layout.sql: the bucket a job id carries (no buckets on one node)",
  key_bucket: "layout.sql: the bucket of a key (no buckets on one node)",
  refresh_shard_buckets: "layout.sql: which buckets each shard holds",
  job_cancel_instead_of_retry_on_shard: "layout.sql: the trigger that replaces job_cancel_instead_of_retry on shards",
  job_deleted_on_shard: "layout.sql: the trigger that replaces job_deleted on shards",
  release_held_keys: "the release of held keys, job by job on its shard (one node releases inside each statement)",
};
/** Functions only the single-node layout has, on purpose (none today). */
const ONLY_SINGLE: Record<string, string> = {};

/** Statements of a SQL text, split on semicolons outside quotes, dollar quotes and comments. */
function statements(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const rest = text.slice(i);
    if (rest.startsWith("--")) {
      const e = text.indexOf("\n", i);
      i = e < 0 ? text.length : e + 1;
    } else if (rest.startsWith("/*")) {
      i = text.indexOf("*/", i + 2) + 2;
    } else if (c === "'") {
      i++;
      while (i < text.length && !(text[i] === "'" && text[i + 1] !== "'")) i += text[i] === "'" ? 2 : 1;
      i++;
    } else if (c === '"') {
      i = text.indexOf('"', i + 1) + 1;
    } else if (c === "$" && /^\$([A-Za-z_]\w*)?\$/.test(rest) && !/\w/.test(text[i - 1] ?? "")) {
      const tag = /^\$([A-Za-z_]\w*)?\$/.exec(rest)![0];
      i = text.indexOf(tag, i + tag.length) + tag.length;
    } else if (c === ";") {
      out.push(text.slice(start, i));
      start = ++i;
    } else {
      i++;
    }
  }
  if (text.slice(start).trim()) out.push(text.slice(start));
  // Leading comments are not code.
  return out.map((s) => s.replace(/^(\s*(--[^\n]*\n|\/\*[\s\S]*?\*\/))*\s*/, "")).filter((s) => s.length > 0);
}

interface Fn {
  name: string;
  /** Arguments (names, modes, types, defaults) and result, normalised. */
  signature: string;
}

const ALIASES: [RegExp, string][] = [
  [/\btimestamptz\b/g, "timestamp with time zone"],
  [/\bint\b/g, "integer"],
  [/\bint4\b/g, "integer"],
  [/\bint8\b/g, "bigint"],
  [/\bbool\b/g, "boolean"],
];
function normalise(s: string): string {
  let t = s.toLowerCase().replace(/\s+/g, " ").trim();
  for (const [re, to] of ALIASES) t = t.replace(re, to);
  return t.replace(/\s*([(),])\s*/g, "$1");
}

/** The functions a statement list creates (CREATE [OR REPLACE] FUNCTION workhorse.x(...) RETURNS ...). */
function functionsOf(stmts: string[]): Fn[] {
  const out: Fn[] = [];
  for (const s of stmts) {
    const m = /^create\s+(?:or\s+replace\s+)?function\s+workhorse\.([a-z0-9_]+)\s*\(/i.exec(s);
    if (!m) continue;
    let depth = 1;
    let i = m[0].length;
    while (depth > 0) {
      if (s[i] === "(") depth++;
      if (s[i] === ")") depth--;
      i++;
    }
    const args = s.slice(m[0].length, i - 1);
    const after = s.slice(i);
    // The result: RETURNS up to the first LANGUAGE / AS / attribute keyword (none when OUT parameters say it).
    const r =
      /^\s*returns\s+([\s\S]*?)\s*(?=\blanguage\b|\bas\s+\$|\bimmutable\b|\bstable\b|\bvolatile\b|\bparallel\b|\bsecurity\b|\bstrict\b)/i.exec(
        after,
      );
    out.push({ name: m[1]!, signature: normalise(`(${args}) returns ${r?.[1] ?? "(out parameters)"}`) });
  }
  return out;
}

const singleNames = sqlFiles("sql", "functions").map((f) => f.slice(0, -4));
const citusNames = sqlFiles("sql", "functions", "citus").map((f) => f.slice(0, -4));
const fileFns = (...p: string[]) => functionsOf(statements(read(...p)));

describe("function files", () => {
  test("each file defines only functions named after it (a retired function's file only drops it)", () => {
    const problems: string[] = [];
    for (const [dir, names] of [
      [["sql", "functions"], singleNames],
      [["sql", "functions", "citus"], citusNames],
    ] as const) {
      for (const n of names) {
        const fns = fileFns(...dir, `${n}.sql`);
        for (const f of fns) if (f.name !== n) problems.push(`${[...dir, n].join("/")}.sql defines ${f.name}`);
        if (fns.length === 0 && !/^drop function if exists workhorse\./im.test(read(...dir, `${n}.sql`))) {
          problems.push(`${[...dir, n].join("/")}.sql neither defines nor drops ${n}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  test("both layouts have the same functions with the same signatures (apart from the allow-lists)", () => {
    // Single-node: sql/functions. Citus: the same files, a citus/ variant in place of its namesake,
    // plus the functions sql/distributed/layout.sql creates.
    const single = new Map<string, string[]>();
    for (const n of singleNames)
      single.set(
        n,
        fileFns("sql", "functions", `${n}.sql`).map((f) => f.signature),
      );
    const citus = new Map(single);
    for (const n of citusNames)
      citus.set(
        n,
        fileFns("sql", "functions", "citus", `${n}.sql`).map((f) => f.signature),
      );
    for (const f of functionsOf(statements(read("sql", "distributed", "layout.sql")))) {
      citus.set(f.name, [...(citus.get(f.name) ?? []), f.signature]);
    }
    const defined = (m: Map<string, string[]>) => new Set([...m].filter(([, s]) => s.length > 0).map(([n]) => n));
    const onSingle = defined(single);
    const onCitus = defined(citus);
    const problems: string[] = [];
    for (const n of onCitus) {
      if (!onSingle.has(n) && !ONLY_CITUS[n]) problems.push(`${n} exists on Citus only and is not in ONLY_CITUS`);
      if (onSingle.has(n) && ONLY_CITUS[n]) problems.push(`${n} is in ONLY_CITUS but exists on one node too`);
    }
    for (const n of onSingle) {
      if (!onCitus.has(n) && !ONLY_SINGLE[n]) problems.push(`${n} exists on one node only and is not in ONLY_SINGLE`);
    }
    for (const n of Object.keys(ONLY_CITUS)) if (!onCitus.has(n)) problems.push(`ONLY_CITUS names ${n}, which is gone`);
    for (const n of onSingle) {
      if (!onCitus.has(n)) continue;
      const a = [...single.get(n)!].sort();
      const b = [...citus.get(n)!].sort();
      if (JSON.stringify(a) !== JSON.stringify(b)) {
        problems.push(`${n}: one node ${a.join(" | ")}\n   citus    ${b.join(" | ")}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("a Citus variant names the version of its single-node file it follows", () => {
    // A change to sql/functions/x.sql is carried over to sql/functions/citus/x.sql (or found not to
    // concern it) and the variant's `-- follows:` line set to the new digest printed here.
    const stale: string[] = [];
    for (const n of citusNames.filter((n) => singleNames.includes(n))) {
      const digest = createHash("sha256")
        .update(read("sql", "functions", `${n}.sql`))
        .digest("hex")
        .slice(0, 16);
      const follows = /^-- follows: sql\/functions\/([a-z0-9_]+)\.sql ([0-9a-f]{16})$/m.exec(
        read("sql", "functions", "citus", `${n}.sql`),
      );
      if (follows?.[1] !== n || follows[2] !== digest) {
        stale.push(`sql/functions/citus/${n}.sql: -- follows: sql/functions/${n}.sql ${digest}`);
      }
    }
    expect(stale, "single-node files changed since their Citus variant was last brought in line").toEqual([]);
  });

  test("the migrations hold no function definitions or drops", () => {
    const found: string[] = [];
    for (const f of sqlFiles("sql", "migrations")) {
      for (const s of statements(read("sql", "migrations", f))) {
        if (/^(create\s+(or\s+replace\s+)?function|drop\s+function)\b/i.test(s)) found.push(`${f}: ${s.slice(0, 60)}`);
      }
    }
    expect(found).toEqual([]);
  });

  test("the parser sees every function of the sets (35 single-node files, 19 Citus variants today)", () => {
    // A guard for the tests above: a header the parser missed would make them pass vacuously.
    const count = (text: string) => (text.match(/^create\s+(or\s+replace\s+)?function\s/gim) ?? []).length;
    for (const [dir, names] of [
      [["sql", "functions"], singleNames],
      [["sql", "functions", "citus"], citusNames],
    ] as const) {
      for (const n of names) expect(fileFns(...dir, `${n}.sql`).length, n).toBe(count(read(...dir, `${n}.sql`)));
    }
    expect(fileFns("sql", "functions", "enqueue_one.sql")[0]?.signature).toMatch(/^\(p_id uuid,p_queue text,/);
  });
});

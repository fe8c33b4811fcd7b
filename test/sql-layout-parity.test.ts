// The SQL files, read as text (no database, no Citus): every function has one home, the single-node
// and Citus layouts offer the same functions with the same signatures, a hand-written Citus variant
// says which version of its single-node file it follows, the Citus variants generated from marks in
// single-node files (scripts/build-sql.mjs) are what the distributed layout runs, and the migrations
// hold no function statements.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { distributedFunctionSet, functionSet } from "../lib/enqueue/migrations.generated";
import { citusFileName, citusVariant, hasCitusMarks } from "../scripts/citus-variant.mjs";

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
  for (const stmt of stmts) {
    // Comments out (a single-node file's --@citus marks sit among the arguments), for the header only.
    const s = stmt.replace(/--[^\n]*/g, "");
    const m = /^create\s+(?:or\s+replace\s+)?function\s+workhorse\.([a-z0-9_]+)\s*\(/i.exec(s);
    if (!m) continue;
    let depth = 1;
    let i = m[0].length;
    while (depth > 0 && i < s.length) {
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
/** The hand-written Citus files (sql/functions/citus). */
const citusNames = sqlFiles("sql", "functions", "citus").map((f) => f.slice(0, -4));
/**
 * Single-node files with Citus marks, and the Citus file each makes: a variant of the same name, or a
 * Citus-only file beside it (`--@citus-file <name>`).
 */
const marked = singleNames
  .filter((n) => hasCitusMarks(read("sql", "functions", `${n}.sql`)))
  .map((n) => ({ n, target: citusFileName(`sql/functions/${n}.sql`, n, read("sql", "functions", `${n}.sql`)) }));
const markedNames = marked.map((m) => m.n);
const fileFns = (...p: string[]) => functionsOf(statements(read(...p)));
/** The generated Citus text of a marked file. */
const generated = (n: string) => citusVariant(`sql/functions/${n}.sql`, read("sql", "functions", `${n}.sql`));
const generatedFns = (n: string) => functionsOf(statements(generated(n)));

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
    for (const { n, target } of marked) {
      for (const f of generatedFns(n)) {
        if (f.name !== target) problems.push(`the Citus text of ${n}.sql (citus/${target}) defines ${f.name}`);
      }
      if (citusNames.includes(target)) problems.push(`${n}.sql has Citus marks and a hand-written citus/${target}.sql`);
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
    for (const { n, target } of marked)
      citus.set(
        target,
        generatedFns(n).map((f) => f.signature),
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

  test("a hand-written Citus variant names the version of its single-node file it follows", () => {
    // A change to sql/functions/x.sql is carried over to sql/functions/citus/x.sql (or found not to
    // concern it) and the variant's `-- follows:` line set to the new digest printed here. (A variant
    // generated from marks follows its file by construction.)
    expect(citusNames.filter((n) => singleNames.includes(n)).length).toBeGreaterThan(0);
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

  test("the parser sees every function of the sets (single-node files, hand-written and generated Citus variants)", () => {
    // A guard for the tests above: a header the parser missed would make them pass vacuously.
    const count = (text: string) => (text.match(/^create\s+(or\s+replace\s+)?function\s/gim) ?? []).length;
    for (const [dir, names] of [
      [["sql", "functions"], singleNames],
      [["sql", "functions", "citus"], citusNames],
    ] as const) {
      for (const n of names) expect(fileFns(...dir, `${n}.sql`).length, n).toBe(count(read(...dir, `${n}.sql`)));
    }
    for (const n of markedNames) expect(generatedFns(n).length, n).toBe(count(generated(n)));
    expect(fileFns("sql", "functions", "enqueue_one.sql")[0]?.signature).toMatch(/^\(p_id uuid,p_queue text,/);
  });
});

describe("Citus variants generated from marks (scripts/build-sql.mjs)", () => {
  const citusText = (n: string) => distributedFunctionSet.files.find((f) => f.name === `citus/${n}`)?.sql;
  const singleText = (n: string) => functionSet.files.find((f) => f.name === n)?.sql;

  test("the distributed layout runs a marked file's Citus text: its bucket predicates in, the single-node lines out", () => {
    expect(markedNames).toContain("save_checkpoint");
    expect(markedNames).toContain("release_keys");
    const checkpoint = citusText("save_checkpoint")!;
    expect(checkpoint).toMatch(
      /^\s*where j\.bucket = workhorse\.id_bucket\(p_id\) and j\.id = p_id and j\.attempt = p_attempt/m,
    );
    expect(checkpoint).not.toMatch(/^\s*where j\.id = p_id/m);
    expect(singleText("save_checkpoint")).toMatch(/^\s*where j\.id = p_id and j\.attempt = p_attempt/m);
    // A replacement of several lines (--@citus, then --@citus+), and a line dropped (--@single).
    expect(citusText("release_keys")).toMatch(
      /where j\.id = any \(p_jobs\) and b\.bucket = j\.bucket and b\.scope = j\.key_scope and b\.key_hash = j\.key_hash\n\s+and b\.job_id = j\.id;/,
    );
    const recall = citusText("enqueue_batch_recall")!;
    expect(recall).toContain("foreach v_id in array p_ids loop");
    expect(recall).not.toContain("select coalesce(array_agg(u.id), '{}') into v_made");
    // No file of the set is the single-node one where a generated variant exists.
    for (const { n, target } of marked.filter((m) => m.n === m.target))
      expect(citusText(target), n).not.toBe(singleText(n));
    // --@citus-file: enqueue_one's marks make enqueue_one_at (distributed by its bucket), and the
    // distributed set keeps enqueue_one as it is.
    expect(marked).toContainEqual({ n: "enqueue_one", target: "enqueue_one_at" });
    const oneAt = citusText("enqueue_one_at")!;
    expect(oneAt).toMatch(
      /^create or replace function workhorse\.enqueue_one_at\(\n\s+p_bucket integer, p_ordinal integer,/m,
    );
    expect(oneAt).toContain("where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;");
    expect(oneAt).toMatch(/^select create_distributed_function\(\n\s+'workhorse\.enqueue_one_at\(/m);
    expect(oneAt).not.toMatch(/workhorse\.enqueue_one\(/);
    expect(distributedFunctionSet.files.find((f) => f.name === "enqueue_one")?.sql).toBe(singleText("enqueue_one"));
  });

  test("no mark is left in any Citus variant the distributed layout runs; the one-node files keep theirs", () => {
    // (A file with --@citus-file, enqueue_one, is applied on Citus as it is, marks and all, beside the
    // file its marks make.)
    const left = distributedFunctionSet.files
      .filter((f) => f.name.startsWith("citus/") && f.sql.includes("--@"))
      .map((f) => f.name);
    expect(left).toEqual([]);
    expect(markedNames.every((n) => singleText(n)?.includes("--@citus"))).toBe(true);
    expect(distributedFunctionSet.files.map((f) => f.name)).toEqual(
      expect.arrayContaining(marked.map((m) => `citus/${m.target}`)),
    );
  });

  test("the marks: --@citus replaces the line above, --@citus+ adds one, --@single drops one, keeping the indentation", () => {
    const text = ["select 1,", "  2 --@single", "  --@citus+ 3,", "from t", "  --@citus from u", "where x;"].join("\n");
    expect(citusVariant("t.sql", text)).toBe(["select 1,", "  3,", "  from u", "where x;"].join("\n"));
    expect(citusVariant("t.sql", "select 1;\n")).toBe("select 1;\n");
    const body = [
      "create function f() returns int",
      "language sql as $body$",
      "  select 1",
      "  --@citus select 2",
      "$body$;",
    ];
    expect(citusVariant("t.sql", [...body, "--@citus $body$ language sql;"].join("\n"))).toBe(
      ["create function f() returns int", "language sql as $body$", "  select 2", "$body$ language sql;"].join("\n"),
    );
  });

  test.each([
    ["--@citus select 2;", /t\.sql:1: --@citus replaces nothing/],
    ["select 1;\n\n--@citus select 2;", /t\.sql:3: --@citus replaces nothing/],
    ["select 1;\n-- a comment\n--@citus select 2;", /t\.sql:3: --@citus replaces nothing/],
    ["select 1;\n--@citus select 2;\n--@citus select 3;", /t\.sql:3: --@citus under another mark/],
    ["select 1; --@single\n--@citus select 2;", /t\.sql:2: --@citus under a --@single line/],
    ["select 1;\n--@citus", /t\.sql:2: --@citus without text/],
    ["select 1;\n--@citus+   ", /t\.sql:2: --@citus\+ without text/],
    ["select 1;\n  --@single", /t\.sql:2: --@single alone on a line/],
    ["-- note --@single", /t\.sql:1: --@single on a comment line/],
    ["select 1;\n--@cituz select 2;", /t\.sql:2: unknown mark/],
    ["select 1; -- see --@citus select 2;", /t\.sql:1: unknown mark/],
    ["--@citus-file\nselect 1;\n--@citus select 2;", /t\.sql:1: --@citus-file needs another function's name/],
    [
      "create function f() returns int\nlanguage sql as $$\n  select 1\n  --@citus select 2 $$;\n$$;",
      /t\.sql:4: a mark inside a \$\$ body that holds \$\$: on one node it ends the body there/,
    ],
    ["--@citus-file t_at\n--@citus-file t_on\nselect 1;", /t\.sql:2: a second --@citus-file/],
  ])("a mark that matches nothing or is malformed is refused: %j", (text, message) => {
    expect(() => {
      citusFileName("t.sql", "t", text);
      citusVariant("t.sql", text);
    }).toThrow(message);
  });

  /** Runs build-sql.mjs on a copy of scripts/ and sql/ after `change(copyRoot)`; returns its exit and stderr. */
  function buildCopy(change: (dir: string) => void) {
    const dir = mkdtempSync(path.join(tmpdir(), "workhorse-build-sql-"));
    try {
      for (const f of ["build-sql.mjs", "citus-variant.mjs", "generated-file.mjs"]) {
        cpSync(path.join(root, "scripts", f), path.join(dir, "scripts", f));
      }
      cpSync(path.join(root, "sql"), path.join(dir, "sql"), { recursive: true });
      mkdirSync(path.join(dir, "lib", "enqueue"), { recursive: true });
      change(dir);
      const run = spawnSync(process.execPath, [path.join(dir, "scripts", "build-sql.mjs")], { encoding: "utf8" });
      let written = "";
      try {
        written = readFileSync(path.join(dir, "lib", "enqueue", "migrations.generated.ts"), "utf8");
      } catch {}
      return { status: run.status, stderr: run.stderr, written };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  test("build-sql on an unchanged copy writes the committed module (the harness of the next test)", () => {
    const run = buildCopy(() => {});
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.written).toBe(read("lib", "enqueue", "migrations.generated.ts"));
  });

  test("build-sql stops with the file, line and reason of a bad mark, and writes nothing", () => {
    const file = path.join("sql", "functions", "save_checkpoint.sql");
    const lines = read(file).split("\n");
    const at = lines.findIndex((l) => l.trim() === "begin");
    expect(at).toBeGreaterThan(0);
    const bad = buildCopy((dir) => {
      const copy = [...lines];
      copy.splice(at + 1, 0, "", "  --@citus perform 1;");
      writeFileSync(path.join(dir, file), copy.join("\n"));
    });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(
      `build-sql: sql/functions/save_checkpoint.sql:${at + 3}: --@citus replaces nothing: put it directly under the code line it replaces`,
    );
    expect(bad.written).toBe("");

    const both = buildCopy((dir) => {
      writeFileSync(path.join(dir, "sql", "functions", "citus", "save_checkpoint.sql"), "select 1;\n");
    });
    expect(both.status).toBe(1);
    expect(both.stderr).toContain(
      "sql/functions/save_checkpoint.sql has --@citus/--@single marks and sql/functions/citus/save_checkpoint.sql exists",
    );
  });
});

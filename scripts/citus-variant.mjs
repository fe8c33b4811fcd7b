// The Citus variant of a single-node function file, written as marks in that file (used by
// scripts/build-sql.mjs; the syntax is described at the top of build-sql.mjs and in sql/README.md).
// Every mark is an SQL comment, so the single-node file runs as it is:
//
//   <code> --@single       this line is kept on one node only (dropped from the Citus text);
//   --@citus <text>        alone on its line: on Citus, <text> replaces the line directly above it;
//   --@citus+ <text>       alone on its line: <text> is a line of the Citus text only;
//   --@citus-file <name>   alone on its line, once: the Citus text is the Citus-only function file
//                          citus/<name>, and this file is applied on Citus unchanged beside it.
//
// A mark's text keeps the mark's indentation. A mark that names no line, an unknown `--@` mark, a
// mark without text, or a mark inside a function body that holds the body's closing quote (`$$`: on
// one node the comment would end the body there) is an error naming the file and line.

const SINGLE = /^(.*\S)\s*--@single\s*$/;
const CITUS = /^(\s*)--@citus(\+?)(?:\s(.*))?$/;
const CITUS_FILE = /^\s*--@citus-file(?:\s+(.*?))?\s*$/;

/**
 * The dollar quote open at the start of each line (null outside one), as PostgreSQL reads the text:
 * inside a dollar-quoted body a `--` is no comment, so a mark there that holds the closing quote ends
 * the body on one node. (Block comments and strings over several lines do not occur in these files.)
 */
function openDollarQuotes(lines) {
  const open = [];
  let tag = null;
  for (const line of lines) {
    open.push(tag);
    let i = 0;
    while (i < line.length) {
      if (tag) {
        const end = line.indexOf(tag, i);
        if (end < 0) break;
        i = end + tag.length;
        tag = null;
      } else if (line.startsWith("--", i)) {
        break;
      } else if (line[i] === "'") {
        const end = line.indexOf("'", i + 1);
        i = end < 0 ? line.length : end + 1;
      } else {
        const m = /^\$([A-Za-z_]\w*)?\$/.exec(line.slice(i));
        if (m && !/\w/.test(line[i - 1] ?? "")) {
          tag = m[0];
          i += tag.length;
        } else {
          i++;
        }
      }
    }
  }
  return open;
}

/** Whether a file's text carries Citus marks (then its Citus variant is generated from it). */
export function hasCitusMarks(text) {
  return /--@/.test(text);
}

/**
 * The name of the Citus file a marked file makes: `name` (the file's own, a variant applied in its
 * place), or the one its `--@citus-file <name>` mark gives (a Citus-only file beside it).
 */
export function citusFileName(file, name, text) {
  const marks = text
    .split("\n")
    .map((line, i) => ({ line, i, m: CITUS_FILE.exec(line) }))
    .filter((x) => x.m);
  if (marks.length === 0) return name;
  const [first, second] = marks;
  if (second) throw new Error(`${file}:${second.i + 1}: a second --@citus-file (a file makes one Citus file)`);
  const other = first.m[1] ?? "";
  if (!/^[a-z0-9_]+$/.test(other) || other === name) {
    throw new Error(`${file}:${first.i + 1}: --@citus-file needs another function's name ([a-z0-9_]+)`);
  }
  return other;
}

/**
 * The Citus text of a single-node file with marks: `file` names it in errors (e.g.
 * `sql/functions/save_checkpoint.sql`). Throws an Error naming the file and line of a bad mark.
 */
export function citusVariant(file, text) {
  const out = [];
  // What the line above was: "code" (out's last line is its Citus text), "dropped" (--@single),
  // "mark" (a --@citus/--@citus+ line), or "none" (start of file, blank or comment-only line).
  let above = "none";
  const lines = text.split("\n");
  const quotes = openDollarQuotes(lines);
  lines.forEach((line, i) => {
    const where = `${file}:${i + 1}`;
    const fail = (why) => {
      throw new Error(`${where}: ${why}\n  ${line.trim()}`);
    };
    const quote = quotes[i];
    if (quote && /^\s*--@/.test(line) && line.includes(quote)) {
      fail(
        `a mark inside a ${quote} body that holds ${quote}: on one node it ends the body there (mark lines outside it)`,
      );
    }
    if (CITUS_FILE.test(line)) {
      above = "mark";
      return;
    }
    const mark = CITUS.exec(line);
    if (mark) {
      const [, indent, plus, body] = mark;
      if (!body?.trim()) fail(`--@citus${plus} without text (drop a line with --@single at its end instead)`);
      if (!plus) {
        if (above === "none") fail("--@citus replaces nothing: put it directly under the code line it replaces");
        if (above === "dropped") fail("--@citus under a --@single line: the line above is already dropped on Citus");
        if (above === "mark") fail("--@citus under another mark: a line is replaced once (add lines with --@citus+)");
        out[out.length - 1] = `${indent}${body}`;
      } else {
        out.push(`${indent}${body}`);
      }
      above = "mark";
      return;
    }
    if (line.trim() === "--@single") fail("--@single alone on a line: put it at the end of the code line to drop");
    const single = SINGLE.exec(line);
    if (single) {
      if (/^\s*--/.test(single[1])) fail("--@single on a comment line: it marks a code line to drop on Citus");
      above = "dropped";
      return;
    }
    if (line.includes("--@")) {
      fail(
        "unknown mark: use `--@citus <text>` or `--@citus+ <text>` on a line of their own, or `--@single` at a line's end",
      );
    }
    out.push(line);
    above = line.trim() === "" || /^\s*--/.test(line) ? "none" : "code";
  });
  return out.join("\n");
}

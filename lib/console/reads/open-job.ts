import "server-only";
import { jobExists, jobIdsEndingWith, jobIdsInRange, sqlOf } from "@/lib/store/console/core";
import { pathParam } from "../auth/request-info";
import { UUID_RE } from "./filters";
import type { Sql } from "./read-queries";

/** Most ids an ambiguous short id lists. */
const AMBIGUOUS_SHOWN = 5;

export type ResolvedJobId =
  | { kind: "found"; id: string }
  | { kind: "ambiguous"; ids: string[]; more: boolean }
  | { kind: "none" }
  | { kind: "invalid" };

const hyphenate = (h: string) =>
  `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;

/**
 * "Open job": a full id, or a short one as tables (`…ab93e3f1`) and the worker log (its last 12 hex digits)
 * show it: 6..31 hex digits (dashes and a leading ellipsis ignored), matched as a prefix (one range
 * read of the primary key) and, from 8 digits, as a suffix (one probe of the index on the id's last 8
 * characters, migration 016). One match opens it; several are listed (at most 5).
 */
export async function resolveJobId(db: Sql, raw: string): Promise<ResolvedJobId> {
  const cleaned = raw
    .trim()
    .replace(/^(…|\.{2,})/, "")
    .toLowerCase();
  const hex = cleaned.replace(/-/g, "");
  if (!/^[0-9a-f-]+$/.test(cleaned) || !/^[0-9a-f]{6,32}$/.test(hex)) return { kind: "invalid" };
  const sql = sqlOf(db);
  if (hex.length === 32) {
    const id = hyphenate(hex);
    return (await jobExists(sql, id)) ? { kind: "found", id } : { kind: "none" };
  }
  const pad = (c: string) => hyphenate(hex + c.repeat(32 - hex.length));
  const [byPrefix, bySuffix] = await Promise.all([
    jobIdsInRange(sql, pad("0"), pad("f"), AMBIGUOUS_SHOWN + 1),
    hex.length >= 8 ? jobIdsEndingWith(sql, hex, AMBIGUOUS_SHOWN + 1) : Promise.resolve([]),
  ]);
  const ids = [...new Set([...byPrefix, ...bySuffix])].sort();
  if (ids.length === 1) return { kind: "found", id: ids[0] as string };
  if (ids.length === 0) return { kind: "none" };
  return { kind: "ambiguous", ids: ids.slice(0, AMBIGUOUS_SHOWN), more: ids.length > AMBIGUOUS_SHOWN };
}

/**
 * For a full load of `/jobs/<id>`: whether the path names no job. The console layout asks this before
 * the pages' loading boundary starts streaming, so such a page answers HTTP 404 (a page's own
 * notFound() comes after the 200 was sent). Other paths: false.
 */
export async function jobPathMissing(db: Sql, path: string): Promise<boolean> {
  const param = pathParam(path, "jobs");
  if (param === null) return false;
  const id = param === false ? "" : param.toLowerCase();
  return !UUID_RE.test(id) || !(await jobExists(sqlOf(db), id));
}

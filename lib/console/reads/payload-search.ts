import "server-only";
import { z } from "zod";
import { type PayloadMatch, type PayloadSearch, payloadSearchRows } from "@/lib/store/console/search";
import { UUID_RE } from "./filters";
import { iso, type Sql, uuidv7Floor } from "./read-queries";

/** The creation time a UUIDv7 carries (its first 48 bits, ms since the epoch). */
const uuidv7Ms = (id: string): number => Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16);

/** Windows a search may cover, newest jobs first; the default is a day. */
export const SEARCH_WINDOWS = { "1h": 3_600_000, "24h": 86_400_000, "7d": 7 * 86_400_000 } as const;
export type SearchWindow = keyof typeof SEARCH_WINDOWS;
/** The windows in words, for an error: "1h, 24h or 7d". */
const WINDOW_CHOICES = Object.keys(SEARCH_WINDOWS)
  .join(", ")
  .replace(/, (?=[^,]*$)/, " or ");

/** At most this many matches are listed, and this many of the window's newest jobs looked at. */
export const SEARCH_LIMIT = 50;
export const SEARCH_SCAN_CAP = 10_000;

const segment = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_$-]+$/);

/** Most segments of a search path. */
const MAX_SEGMENTS = 8;

/**
 * A dot path of 1..8 plain segments: `orderId`, `customer.email`. A segment names an object key; an
 * array on the way is searched in every element (`items.sku` finds `{"items": [{"sku": …}]}`).
 */
export const pathSchema = z
  .string()
  .trim()
  .max(300)
  .transform((s) => s.split("."))
  .pipe(z.array(segment).min(1).max(MAX_SEGMENTS));

export interface SearchQuery {
  path: string[];
  value: string;
  type?: string;
  window: SearchWindow;
  /** Go on from where an earlier search stopped: only jobs older than this id. */
  before?: string;
}

export type SearchParse = { ok: true; query: SearchQuery } | { ok: false; errors: Record<string, string> } | null;

const get = (p: Record<string, string | string[] | undefined>, k: string) => {
  const v = p[k];
  return (Array.isArray(v) ? v[0] : v)?.replace(/\p{Cc}/gu, "") ?? "";
};

/** The search form's fields; null when nothing was asked yet. */
export function parseSearch(params: Record<string, string | string[] | undefined>): SearchParse {
  const rawPath = get(params, "path").trim();
  const value = get(params, "value");
  const type = get(params, "type").trim();
  const windowRaw = get(params, "window");
  const windowValid = windowRaw === "" || Object.hasOwn(SEARCH_WINDOWS, windowRaw);
  const windowError = `“${windowRaw.slice(0, 40)}” is not a valid window: choose ${WINDOW_CHOICES}`;
  if (!rawPath && !value && !type) return windowValid ? null : { ok: false, errors: { window: windowError } };
  const errors: Record<string, string> = {};
  const path = pathSchema.safeParse(rawPath);
  const segments = rawPath.split(".");
  if (!path.success)
    errors.path =
      rawPath !== "" && segments.includes("")
        ? "The path has an empty segment (two dots in a row, or a dot at the start or end)"
        : segments.length > MAX_SEGMENTS
          ? `The path has ${segments.length} segments; at most ${MAX_SEGMENTS} are allowed (e.g. customer.address.city)`
          : "A field name or dot path, like orderId or customer.email (letters, digits, _ - $)";
  if (value.trim() === "" || value.length > 500) errors.value = "The value to look for, 1..500 characters";
  if (type.length > 128) errors.type = "At most 128 characters";
  if (!windowValid) errors.window = windowError;
  if (!path.success || errors.value || errors.type || errors.window) return { ok: false, errors };
  const window = (windowRaw || "24h") as SearchWindow;
  const before = UUID_RE.test(get(params, "before").trim()) ? get(params, "before").trim().toLowerCase() : undefined;
  return {
    ok: true,
    query: { path: path.data, value: value.trim(), ...(type ? { type } : {}), window, ...(before ? { before } : {}) },
  };
}

/**
 * The payload test for `value` at `path`: a lax-mode SQL/JSON path (`$."a"."b" ? (@ == $v0 || …)`,
 * which looks into every element of an array met on the way and at the end) and its variables: the
 * value as a string, and as a number or boolean when it reads as one. Segments are quoted (they hold
 * only letters, digits, `_`, `$` and `-`, see pathSchema), the values are variables, never path text.
 */
export function matchOf(path: string[], value: string): PayloadMatch {
  const candidates: unknown[] = [value];
  if (/^-?\d+(\.\d+)?$/.test(value) && Number.isFinite(Number(value))) candidates.push(Number(value));
  if (value === "true" || value === "false") candidates.push(value === "true");
  const vars = Object.fromEntries(candidates.map((v, i) => [`v${i}`, v]));
  const test = candidates.map((_, i) => `@ == $v${i}`).join(" || ");
  return { jsonpath: `$${path.map((k) => `."${k}"`).join("")} ? (${test})`, vars };
}

export interface SearchResult {
  jobs: { id: string; queue: string; type: string; state: string; createdAt: string }[];
  /** Jobs looked at; equal to `scanCap` when the window holds more (older ones were not searched). */
  scanned: number;
  scanCap: number;
  limit: number;
  now: string;
  /** Where this search began (it went on from an earlier one), or null for the window's newest job. */
  before: string | null;
  /** The bound was reached: the next search goes on before this id (the oldest job looked at). */
  continueBefore: string | null;
  /** Creation time of the oldest job looked at (ISO), or null when none was. */
  searchedBackTo: string | null;
}

/** The newest jobs of the window whose payload holds `value` at `path` (bounded: see SEARCH_SCAN_CAP). */
export async function searchPayload(db: Sql, q: SearchQuery, nowMs = Date.now()): Promise<SearchResult> {
  const s: PayloadSearch = {
    match: matchOf(q.path, q.value),
    type: q.type,
    fromId: uuidv7Floor(nowMs - SEARCH_WINDOWS[q.window]),
    ...(q.before ? { beforeId: q.before } : {}),
    limit: SEARCH_LIMIT,
    scanCap: SEARCH_SCAN_CAP,
  };
  const r = await payloadSearchRows(db, s);
  return {
    jobs: r.jobs.map((j) => ({ ...j, createdAt: iso(j.createdAt) })),
    scanned: r.scanned,
    scanCap: SEARCH_SCAN_CAP,
    limit: SEARCH_LIMIT,
    now: iso(r.now),
    before: q.before ?? null,
    continueBefore: r.scanned >= SEARCH_SCAN_CAP ? r.oldestScanned : null,
    searchedBackTo: r.oldestScanned ? iso(new Date(uuidv7Ms(r.oldestScanned))) : null,
  };
}

import type { Page } from "../wire/types";

/** What a read model runs on: a pool or a client (tests pass theirs), the store's text-form handle. */
export type { Sql } from "@/lib/store/console/core";

/**
 * One page of a newest-first keyset list from its `limit + 1` rows: the extra row says there is a
 * next page, whose cursor `cursorOf` makes from the page's last row; no previous page.
 */
export function forwardPage<R extends { now: Date }, D>(
  rows: R[],
  limit: number,
  toDto: (r: R) => D,
  cursorOf: (last: R) => string,
): Page<D> {
  const last = rows[Math.min(rows.length, limit) - 1];
  return {
    rows: rows.slice(0, limit).map(toDto),
    next: rows.length > limit && last ? cursorOf(last) : null,
    prev: null,
    now: rows[0] ? iso(rows[0].now) : new Date().toISOString(),
  };
}

export const iso = (d: Date | string): string => (d instanceof Date ? d : new Date(d)).toISOString();
export const isoOrNull = (d: Date | string | null): string | null => (d === null ? null : iso(d));

export { readWithTimeout, uuidv7Floor } from "@/lib/store/console/core";
export { cappedCount, Where } from "@/lib/store/console/lists";

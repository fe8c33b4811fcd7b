import type pg from "pg";
import { answeredByServer, withPoolClient } from "@/lib/enqueue";
import type { Queryable } from "@/lib/store/layout";
import type { Page } from "../wire/types";

/** Anything that runs a query: a pool or a client. Read models take one so tests can pass theirs. */
export type Db = Queryable;

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

export { cappedCount, Where } from "@/lib/store/console/lists";
export { uuidv7Floor } from "@/lib/store/core/jobs";

/** A connection that broke under the query (backend terminated, server restart, socket reset), not an answer. */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code !== "string" || /^(08|57P0)/.test(code) || /^E[A-Z]+$/.test(code);
}

/**
 * Runs `fn` in a read-only transaction under `statement_timeout = timeoutMs`, on a client checked out
 * through the core's withPoolClient (never `pool.connect()`: a connection that dies while lent out
 * would otherwise emit an error nobody listens to, and end the process). `{ timedOut: true }` when
 * the timeout cut the read short. A read whose connection is lost is tried once more on a fresh
 * connection; a second loss is thrown to the caller (the page's error boundary), never left uncaught.
 */
export async function readWithTimeout<T>(
  pool: pg.Pool,
  timeoutMs: number,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<{ timedOut: false; value: T } | { timedOut: true }> {
  const once = () =>
    withPoolClient(
      pool,
      async (client) => {
        // One round trip: two statements in one simple query (the timeout is a number we format).
        await client.query(`begin read only; set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
        try {
          const value = await fn(client);
          await client.query("commit");
          return { timedOut: false as const, value };
        } catch (err) {
          await client.query("rollback").catch(() => {});
          if ((err as { code?: string }).code === "57014") return { timedOut: true as const };
          throw err;
        }
      },
      answeredByServer,
    );
  try {
    return await once();
  } catch (err) {
    if (!connectionLost(err)) throw err;
    return once();
  }
}

import type pg from "pg";

/**
 * Checks a client out of `pool`, runs `fn` on it and gives it back.
 *
 * While a client is lent out, pg-pool removes its own `'error'` listener; a connection that dies in
 * that window (a server restart, `pg_terminate_backend`) then emits an `'error'` event nobody
 * listens to, and Node ends the process. This guard listens for the whole loan, so such an error
 * fails only the call in flight. The client goes back destroyed when its connection broke, and
 * kept when `keep(err)` says the error was an expected answer (a conflict must not cost a
 * reconnect: pg-pool destroys a client released with an error). The `Queue`, `migrate()` and the
 * console use it; so can an application that checks clients out of the pool it shares with us.
 */
export async function withPoolClient<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  keep: (err: unknown) => boolean = () => false,
): Promise<T> {
  let broken: Error | null = null;
  const onError = (err: Error) => {
    broken ??= err;
  };
  // The callback form, not `await pool.connect()`: pg-pool hands a released client to the next
  // waiter synchronously, possibly while its socket's data is still being parsed, and an error
  // message already in that data would be emitted before a promise continuation could listen.
  const client = await new Promise<pg.PoolClient>((resolve, reject) => {
    pool.connect((err, c) => {
      if (err || !c) return reject(err ?? new Error("pg-pool returned no client"));
      c.on("error", onError);
      resolve(c);
    });
  });
  let released = false;
  const release = (err?: Error) => {
    if (released) return;
    released = true;
    client.off("error", onError);
    client.release(err);
  };
  try {
    const result = await fn(client);
    release(broken ?? undefined);
    return result;
  } catch (err) {
    release(broken ?? (keep(err) ? undefined : ((err as Error) ?? new Error("query failed"))));
    throw err;
  }
}

/**
 * For `withPoolClient`'s `keep`: an error PostgreSQL answered with (it carries a SQLSTATE) leaves the
 * connection usable, unless it says the session is ending (class 08, 57P01-57P03).
 */
export function answeredByServer(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !/^(08|57P0)/.test(code);
}

/**
 * Runs `fn` in one transaction on a client of `pool` (through `withPoolClient`): `begin`, `fn`'s
 * statements, `commit` when it resolves; `rollback` (its own failure ignored) and the error rethrown
 * when it throws. The client is kept when the error was PostgreSQL's answer (`answeredByServer`).
 */
export function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return transactionOn(pool, "begin", fn);
}

/** `withTransaction` opened by `begin` (a simple query: it may set the transaction up in the same round trip). */
function transactionOn<T>(pool: pg.Pool, begin: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withPoolClient(
    pool,
    async (client) => {
      await client.query(begin);
      try {
        const result = await fn(client);
        await client.query("commit");
        return result;
      } catch (err) {
        await client.query("rollback").catch(() => {});
        throw err;
      }
    },
    answeredByServer,
  );
}

/** A connection that broke under the query (backend terminated, server restart, socket reset), not an answer. */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code !== "string" || /^(08|57P0)/.test(code) || /^E[A-Z]+$/.test(code);
}

/**
 * Runs `fn` in a read-only transaction under `statement_timeout = timeoutMs`, on a client checked out
 * through withPoolClient (never `pool.connect()`: a connection that dies while lent out would
 * otherwise emit an error nobody listens to, and end the process). `{ timedOut: true }` when the
 * timeout cut the read short (SQLSTATE 57014). A read whose connection is lost is tried once more on
 * a fresh connection; a second loss is thrown to the caller (a console page shows its error
 * boundary), never left uncaught.
 */
export async function readWithTimeout<T>(
  pool: pg.Pool,
  timeoutMs: number,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<{ timedOut: false; value: T } | { timedOut: true }> {
  // One round trip: two statements in one simple query (the timeout is a number we format).
  const begin = `begin read only; set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`;
  const once = async () => {
    try {
      return { timedOut: false as const, value: await transactionOn(pool, begin, fn) };
    } catch (err) {
      if ((err as { code?: string } | null)?.code === "57014") return { timedOut: true as const };
      throw err;
    }
  };
  try {
    return await once();
  } catch (err) {
    if (!connectionLost(err)) throw err;
    return once();
  }
}

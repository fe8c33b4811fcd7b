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

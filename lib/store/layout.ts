/**
 * The schema's layout, one node or Citus, read once per pool and kept here (the one place): every
 * statement that differs between the layouts is chosen by the store function that sends it, from
 * `layoutOf(sql)`. Nothing outside lib/store asks which layout it runs on.
 */
import type pg from "pg";

/** `single`: one PostgreSQL; `distributed`: the Citus layout (docs/scale-out.md). */
export type Layout = "single" | "distributed";

/** Whether the schema has the distributed layout (`migrate({ distributed: true })` makes `workhorse.shard_bucket`). */
export const LAYOUT_SQL = "select to_regclass('workhorse.shard_bucket') is not null as distributed";

/**
 * What every core and worker store function runs on: a `pg.Pool` or `pg.Client`, or a view of the
 * core (its statements counted for `close()`, its errors typed: sqlOver). One statement per `query`
 * (a config with a `name` is planned once per connection); `layout()` when the handle keeps the
 * schema's layout itself, else `layoutOf` reads it. The console's statements take the text form,
 * `Queryable`; the pool's checkouts are pool-client.ts's, LISTEN and NOTIFY wake.ts's.
 */
export interface Sql {
  query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
  layout?(): Promise<Layout>;
}

/** The layout of the schema behind `sql`: its own `layout()`, or read once per `sql` (a pool or a client). */
export function layoutOf(sql: Sql): Promise<Layout> {
  return sql.layout ? sql.layout() : layoutOfPool(sql, (config) => sql.query(config));
}

const layouts = new WeakMap<object, Promise<Layout>>();

/**
 * The layout of the schema behind `pool` (a pool, or a client a read model was given): read with
 * `query` the first time (the caller's executor, so its error handling applies), then kept. A read
 * that fails is forgotten, so the next call reads again.
 */
function layoutOfPool(
  pool: object,
  query: (config: pg.QueryConfig) => Promise<pg.QueryResult<{ distributed: boolean }>>,
): Promise<Layout> {
  let known = layouts.get(pool);
  if (!known) {
    known = query({ text: LAYOUT_SQL }).then((r) => (r.rows[0]?.distributed === true ? "distributed" : "single"));
    known.catch(() => layouts.delete(pool));
    layouts.set(pool, known);
  }
  return known;
}

/** Statements through `exec` (a pool, a client, an executor), the layout kept per `pool`. */
export function sqlOver(pool: object, exec: Sql): Required<Sql> {
  const query = <R extends pg.QueryResultRow>(config: pg.QueryConfig) => exec.query<R>(config);
  return { query, layout: () => layoutOfPool(pool, query) };
}

/** Anything that runs a query by text and values (a pool or a client), as a store `Sql`. */
export interface Queryable {
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * Runs `text` as a named statement when `db` is a pg pool or client (it has `connect`), so each connection plans it once
 * (a console read that runs several statements per page spends more planning them than running
 * them); anything else runs it by text.
 */
export function queryPrepared<R extends pg.QueryResultRow>(
  db: Queryable,
  name: string,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  const client = db as Queryable & { connect?: unknown; query(config: pg.QueryConfig): Promise<pg.QueryResult<R>> };
  if (typeof client.connect === "function") return client.query({ name, text, values });
  return db.query<R>(text, values);
}

/** A pool or client as a store `Sql`, its layout kept per pool or client. */
export function sqlOf(db: Queryable): Required<Sql> {
  const query = <R extends pg.QueryResultRow>(config: pg.QueryConfig) =>
    db.query<R>(config.text, config.values as unknown[] | undefined);
  return { query, layout: () => layoutOfPool(db, query) };
}

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
 * What every store function runs its statements on, the one store handle: a `pg.Pool` or
 * `pg.Client`, a view of the core (its statements counted for `close()`, its errors typed: sqlOver),
 * or a caller's wrapper of one (a statement log, a counter). One statement per `query`, by text and
 * values or as a config (`{ name, text, values }`: a name plans it once per connection).
 * `layout()` when the handle keeps the schema's layout itself, else `layoutOf` reads it once.
 *
 * A wrapper may take the text form only: what a wrapper can be handed sends text (`layoutOf`, the
 * console's statements) or goes through queryPrepared, which names a statement only on a pool, a
 * client or a handle of the core's own. The pool's checkouts (a transaction, a read-only read with a
 * timeout) are pool-client.ts's; LISTEN and NOTIFY are wake.ts's.
 */
export interface Sql {
  query<R extends pg.QueryResultRow>(
    statement: string | pg.QueryConfig,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
  layout?(): Promise<Layout>;
}

/** A statement in config form: `statement` as it is, or text with `values`. */
export function statementConfig(statement: string | pg.QueryConfig, values?: unknown[]): pg.QueryConfig {
  return typeof statement === "string" ? { text: statement, values } : statement;
}

/** The layout of the schema behind `sql`: its own `layout()`, or read once per `sql` (a pool or a client). */
export function layoutOf(sql: Sql): Promise<Layout> {
  return sql.layout ? sql.layout() : layoutOfPool(sql, (text) => sql.query(text));
}

const layouts = new WeakMap<object, Promise<Layout>>();

/**
 * The layout of the schema behind `pool` (a pool, or a client a read model was given): read with
 * `query` the first time (the caller's executor, so its error handling applies), then kept. A read
 * that fails is forgotten, so the next call reads again.
 */
function layoutOfPool(
  pool: object,
  query: (text: string) => Promise<pg.QueryResult<{ distributed: boolean }>>,
): Promise<Layout> {
  let known = layouts.get(pool);
  if (!known) {
    known = query(LAYOUT_SQL).then((r) => (r.rows[0]?.distributed === true ? "distributed" : "single"));
    known.catch(() => layouts.delete(pool));
    layouts.set(pool, known);
  }
  return known;
}

/** Statements through `exec` (a pool, a client, the core's statement runner), as configs; the layout kept per `pool`. */
export function sqlOver(
  pool: object,
  exec: { query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> },
): Required<Sql> {
  const query = <R extends pg.QueryResultRow>(statement: string | pg.QueryConfig, values?: unknown[]) =>
    exec.query<R>(statementConfig(statement, values));
  return { query, layout: () => layoutOfPool(pool, query) };
}

/**
 * Runs `text` as a named statement where a name is kept: on a pg pool or client (it has `connect`)
 * or a handle of the core's own (it has `layout`), so each connection plans it once (a console read
 * that runs several statements per page spends more planning them than running them); on anything
 * else (a caller's wrapper) by text.
 */
export function queryPrepared<R extends pg.QueryResultRow>(
  db: Sql,
  name: string,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  const keepsNames = typeof (db as { connect?: unknown }).connect === "function" || typeof db.layout === "function";
  return keepsNames ? db.query<R>({ name, text, values }) : db.query<R>(text, values);
}

/** `db` (a pool, a client, a caller's wrapper) with its layout kept per `db`; statements go to it by text. */
export function sqlOf(db: Sql): Required<Sql> {
  const query = <R extends pg.QueryResultRow>(statement: string | pg.QueryConfig, values?: unknown[]) => {
    const config = statementConfig(statement, values);
    return db.query<R>(config.text, config.values as unknown[] | undefined);
  };
  return { query, layout: () => layoutOfPool(db, query) };
}

/**
 * The enqueue statements' lean form on the wire: a `pg` submittable (the interface pg-cursor and
 * pg-query-stream use) that sends Parse (once per connection for a named statement), Bind, Execute
 * and Sync, and no Describe. PostgreSQL then sends no RowDescription, and each DataRow's text fields
 * go straight to `toRow`: no result object, no type parsers, no per-call event emitter. On this
 * machine that is ~30-35 µs less client CPU per enqueue call than `pg`'s own query (docs/benchmarks.md,
 * "The lean client").
 *
 * The statement is also a `pg.QueryConfig` (`name`, `text`, `values`), so it travels through the
 * core's executors as any statement does; they run it with `runOn`, which resolves to `{ rows }`. A
 * client in pipeline mode refuses submittables: `runOn` sends the same statement there as an
 * ordinary array-mode query.
 */
import pg from "pg";

/**
 * pg's own conversion of parameter values (Date, Buffer, arrays, JSON), so the bound values are
 * exactly what `pg`'s query sends (`pg.utils`, which pg's type declarations do not list).
 */
const prepareValue = (pg as unknown as { utils: { prepareValue(value: unknown): unknown } }).utils.prepareValue;

/** Text of one DataRow's fields (null for SQL NULL), in the statement's column order. */
export type TextFields = readonly (string | null)[];

/** What `pg`'s connection offers a submittable (pg/lib/connection.js); only what this file calls. */
interface Connection {
  stream: { cork?: () => void; uncork?: () => void };
  parsedStatements: Record<string, string | undefined>;
  submittedNamedStatements: Record<string, string | undefined>;
  parse(config: { text: string; name: string }): void;
  bind(config: { statement: string; values: unknown[]; valueMapper: (value: unknown) => unknown }): void;
  execute(config: { portal: string }): void;
  sync(): void;
  close(config: { type: "S"; name: string }): void;
  sendCopyFail(message: string): void;
}

type Settle<R> = (err: Error | null, result?: { rows: R[] }) => void;

/**
 * One statement whose rows are read as text. `name` "" is the unnamed statement (parsed on every
 * call: a batch, planned for its own size); any other name is parsed once per connection. `toRow`
 * maps a row's fields; it gets text, or (through `runOn`'s fallback) the values `pg` parsed, so it
 * converts with `Number()` and `String()` that take either. Rejects with the error PostgreSQL
 * answered (the same `DatabaseError` `pg` gives), or the connection's error.
 */
export class TextRowsStatement<R> {
  private readonly rows: R[] = [];
  private failure: Error | null = null;
  /** How the statement ended: its rows, or the error. */
  readonly settled: Promise<{ rows: R[] }>;
  /**
   * How the statement ends, once: `pg` wraps it when the client has a `query_timeout`, and after a
   * timeout replaces it with a no-op, so every ending goes through it.
   */
  callback: Settle<R>;

  constructor(
    readonly name: string,
    readonly text: string,
    readonly values: unknown[],
    readonly toRow: (fields: TextFields) => R,
  ) {
    let settle!: Settle<R>;
    this.settled = new Promise((resolve, reject) => {
      settle = (err, result) => (err ? reject(err) : resolve(result as { rows: R[] }));
    });
    this.callback = settle;
  }

  /** Called by `pg` when the connection is free: Parse (unless kept), Bind, Execute, Sync in one write. */
  submit(connection: Connection): Error | null {
    const named = this.name !== "";
    const kept = named
      ? (connection.parsedStatements[this.name] ?? connection.submittedNamedStatements[this.name])
      : undefined;
    if (kept !== undefined && kept !== this.text) {
      return new Error(`the prepared statement ${this.name} was used for a different text on this connection`);
    }
    connection.stream.cork?.();
    try {
      if (!kept) {
        connection.parse({ text: this.text, name: this.name });
        if (named) connection.submittedNamedStatements[this.name] = this.text;
      }
      try {
        connection.bind({ statement: this.name, values: this.values, valueMapper: prepareValue });
      } catch (err) {
        // A value pg cannot convert: close what was parsed and end the exchange, as pg's own query does.
        connection.close({ type: "S", name: this.name });
        connection.sync();
        this.failure = err as Error;
        return null;
      }
      connection.execute({ portal: "" });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleDataRow(msg: { fields: TextFields }): void {
    if (this.failure) return;
    try {
      this.rows.push(this.toRow(msg.fields));
    } catch (err) {
      this.failure = err as Error;
    }
  }

  handleError(err: Error): void {
    this.callback(this.failure ?? err);
  }

  handleReadyForQuery(): void {
    if (this.failure) this.callback(this.failure);
    else this.callback(null, { rows: this.rows });
  }

  // Messages a statement without Describe or COPY does not get; present because pg calls them when they come.
  handleRowDescription(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail("an enqueue statement takes no COPY data");
  }
}

/**
 * Runs `statement` on `client` (a config, or a `TextRowsStatement`): a text-rows statement goes as
 * it is, except on a client in pipeline mode, which refuses submittables: there it is sent as an
 * array-mode query and its rows mapped by its `toRow`.
 */
export function runOn<R extends pg.QueryResultRow>(
  client: pg.ClientBase,
  statement: pg.QueryConfig,
): Promise<pg.QueryResult<R>> {
  if (!(statement instanceof TextRowsStatement)) return client.query<R>(statement);
  const lean = statement as TextRowsStatement<R>;
  if (!(client as { pipeline?: boolean }).pipeline) {
    client.query(lean);
    return lean.settled as Promise<pg.QueryResult<R>>;
  }
  return client
    .query<unknown[]>({ name: lean.name || undefined, text: lean.text, values: lean.values, rowMode: "array" })
    .then((r) => ({ ...r, rows: r.rows.map((fields) => lean.toRow(fields as TextFields)) }) as pg.QueryResult<R>);
}

/**
 * What makes one configured database's connections and instruments name it:
 *
 * - each of its pool's connections sets `workhorse.database` to the database's name, so every
 *   audit row written through the console (by the SQL functions that audit, or by
 *   `recordOperatorAction`) records which database the action ran on (the column's default,
 *   migration 027);
 * - its `Queue`'s metrics carry a `database` attribute (the label `/metrics` gives the state gauges),
 *   so one console process's enqueues and operator actions are counted per database.
 */
import type {
  Attributes,
  Counter,
  Gauge,
  Histogram,
  Meter,
  MeterOptions,
  MeterProvider,
  MetricOptions,
  UpDownCounter,
} from "@opentelemetry/api";
import pg from "pg";
import { nameSession } from "@/lib/store/console/database-name";
import type { DatabaseConfig } from "./databases";

/** The metric attribute (and Prometheus label) naming the database. */
export const DATABASE_ATTRIBUTE = "database";

/**
 * A client that, once connected, sets `DATABASE_SETTING` to `name` for its session before the pool
 * hands it out (one statement per new connection; none per query).
 */
export function clientNamingDatabase(name: string): typeof pg.Client {
  return class extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(
      callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void),
    ): Promise<pg.Client> | undefined {
      const ready = super
        .connect()
        .then(() => nameSession(this, name))
        .then(() => this as pg.Client);
      if (!callback) return ready;
      ready.then(
        (c) => (callback as (err: null, c: pg.Client) => void)(null, c),
        (err: Error) => (callback as (err: Error) => void)(err),
      );
      return undefined;
    }
  };
}

/** A pool on `config.url` whose connections carry the database's name (`DATABASE_SETTING`). */
export function databasePool(config: DatabaseConfig, options: Omit<pg.PoolConfig, "connectionString"> = {}): pg.Pool {
  const pool = new pg.Pool({ ...options, connectionString: config.url, Client: clientNamingDatabase(config.name) });
  pool.on("error", () => {
    // An idle client lost its connection; the pool replaces it on the next query.
  });
  return pool;
}

/** Each attribute set once with the database added (the core caches its sets, so they are reused). */
function withDatabase(name: string): (attrs?: Attributes) => Attributes {
  const none: Attributes = { [DATABASE_ATTRIBUTE]: name };
  const cache = new WeakMap<Attributes, Attributes>();
  return (attrs) => {
    if (!attrs) return none;
    let out = cache.get(attrs);
    if (!out) {
      out = { ...attrs, [DATABASE_ATTRIBUTE]: name };
      cache.set(attrs, out);
    }
    return out;
  };
}

/** `provider` with every counter, histogram and gauge it makes recording `database: name` too. */
export function databaseMeterProvider(provider: MeterProvider, name: string): MeterProvider {
  const attrs = withDatabase(name);
  const adds = <I extends Counter | UpDownCounter>(i: I): I =>
    ({ add: (value, a, context) => i.add(value, attrs(a), context) }) as I;
  const records = <I extends Histogram | Gauge>(i: I): I =>
    ({ record: (value, a, context) => i.record(value, attrs(a), context) }) as I;
  const meter = (m: Meter): Meter =>
    Object.assign(Object.create(m) as Meter, {
      createCounter: (metric: string, options?: MetricOptions) => adds(m.createCounter(metric, options)),
      createUpDownCounter: (metric: string, options?: MetricOptions) => adds(m.createUpDownCounter(metric, options)),
      createHistogram: (metric: string, options?: MetricOptions) => records(m.createHistogram(metric, options)),
      createGauge: (metric: string, options?: MetricOptions) => records(m.createGauge(metric, options)),
    });
  return {
    getMeter: (scope: string, version?: string, options?: MeterOptions) =>
      meter(provider.getMeter(scope, version, options)),
  };
}

import type pg from "pg";
import { LAYOUT_SQL } from "@/lib/enqueue";

/** Anything that runs a query: a pool or a client. Read models take one so tests can pass theirs. */
export interface Db {
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

export const iso = (d: Date | string): string => (d instanceof Date ? d : new Date(d)).toISOString();
export const isoOrNull = (d: Date | string | null): string | null => (d === null ? null : iso(d));

/** Builds `where` clauses with numbered parameters; column names only ever come from the caller's code. */
export class Where {
  readonly clauses: string[] = [];
  readonly values: unknown[] = [];
  add(sql: (p: string) => string, value: unknown): this {
    this.values.push(value);
    this.clauses.push(sql(`$${this.values.length}`));
    return this;
  }
  param(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
  raw(sql: string): this {
    this.clauses.push(sql);
    return this;
  }
  toString(): string {
    return this.clauses.length ? `where ${this.clauses.join(" and ")}` : "";
  }
}

/** `select count(*) from (… limit cap + 1)`: bounded work however big the table is. */
export async function cappedCount(db: Db, fromWhere: string, values: unknown[], cap: number) {
  const { rows } = await db.query<{ n: string }>(
    `select count(*)::text as n from (select 1 from ${fromWhere} limit ${cap + 1}) s`,
    values,
  );
  const n = Number(rows[0]?.n ?? 0);
  return n > cap ? { value: cap, capped: true } : { value: n, capped: false };
}

/**
 * Lowest UUIDv7 of a millisecond: job ids are UUIDv7 (time-ordered), so `id >= uuidv7Floor(t)` is an
 * index range over the primary key for "jobs created since t".
 */
export function uuidv7Floor(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

const layoutByDb = new WeakMap<Db, Promise<boolean>>();

/**
 * Whether the schema has the distributed (Citus) layout, read once per pool or client with the
 * core's own test (`LAYOUT_SQL`: migrate({ distributed: true }) makes workhorse.shard_bucket). Read models use it
 * to pick a Citus form of a query only there, so single-node plans stay as they are.
 */
export function isDistributed(db: Db): Promise<boolean> {
  let known = layoutByDb.get(db);
  if (!known) {
    known = db.query<{ distributed: boolean }>(LAYOUT_SQL).then((r) => r.rows[0]?.distributed === true);
    known.catch(() => layoutByDb.delete(db));
    layoutByDb.set(db, known);
  }
  return known;
}

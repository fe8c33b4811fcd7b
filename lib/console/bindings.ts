import "server-only";
import type { BindingFilters } from "./filters";
import { BINDING_COLUMNS, type BindingRow, bindingDto, prefixPattern } from "./jobs";
import { type Db, iso, Where } from "./read-queries";
import type { BindingDto, Page } from "./wire-types";

const BINDINGS_PAGE_SIZE = 50;

/**
 * Live bindings (soonest to expire first) or expired ones awaiting cleanup (oldest first, the order
 * maintenance deletes them in). Walks the `expires_at` index; keyset cursor (expires_at, job_id).
 */
export async function listBindings(db: Db, f: BindingFilters, limit = BINDINGS_PAGE_SIZE): Promise<Page<BindingDto>> {
  const w = new Where();
  w.raw(f.status === "live" ? "expires_at > now()" : "expires_at <= now()");
  if (f.scope) w.add((p) => `scope like ${p}`, prefixPattern(f.scope));
  if (f.mode) w.add((p) => `mode = ${p}`, f.mode);
  if (f.after) {
    const t = w.param(f.after.expiresAtUs);
    const id = w.param(f.after.jobId);
    w.raw(`(expires_at, job_id) > (timestamptz 'epoch' + ${t}::bigint * interval '1 microsecond', ${id}::uuid)`);
  }
  const { rows } = await db.query<BindingRow & { now: Date; exp_us: string }>(
    `select ${BINDING_COLUMNS}, now() as now, (extract(epoch from expires_at) * 1000000)::bigint::text as exp_us from workhorse.key_binding b ${w}
      order by expires_at, job_id limit ${limit + 1}`,
    w.values,
  );
  const more = rows.length > limit;
  const dtos = rows.slice(0, limit).map(bindingDto);
  const last = rows[Math.min(rows.length, limit) - 1];
  return {
    rows: dtos,
    next: more && last ? `${last.exp_us}_${last.job_id}` : null,
    prev: null,
    now: rows[0] ? iso(rows[0].now) : new Date().toISOString(),
  };
}

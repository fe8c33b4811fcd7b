import "server-only";
import type { AuditFilters } from "./filters";
import { type Db, iso, Where } from "./read-queries";
import type { AuditDto, Page } from "./wire-types";

const AUDIT_PAGE_SIZE = 50;

/** Operator audit log, newest first; keyset on (at, id) over the `at` index. */
export async function listAudit(db: Db, f: AuditFilters, limit = AUDIT_PAGE_SIZE): Promise<Page<AuditDto>> {
  const w = new Where();
  if (f.action) w.add((p) => `action = ${p}`, f.action);
  if (f.actor) w.add((p) => `actor = ${p}`, f.actor);
  if (f.after) {
    const t = w.param(f.after.at);
    const id = w.param(f.after.id);
    w.raw(`(at, id) < (timestamptz 'epoch' + ${t}::bigint * interval '1 microsecond', ${id}::uuid)`);
  }
  const { rows } = await db.query<{
    id: string;
    at: Date;
    actor: string;
    action: string;
    target: string;
    reason: string | null;
    result: Record<string, unknown>;
    at_us: string;
    now: Date;
  }>(
    `select id, at, actor, action, target, reason, result, now() as now,
            (extract(epoch from at) * 1000000)::bigint::text as at_us from workhorse.operator_audit ${w}
      order by at desc, id desc limit ${limit + 1}`,
    w.values,
  );
  const more = rows.length > limit;
  const dtos = rows.slice(0, limit).map((r) => ({
    id: r.id,
    at: iso(r.at),
    actor: r.actor,
    action: r.action,
    target: r.target,
    reason: r.reason,
    result: r.result,
  }));
  const last = rows[Math.min(rows.length, limit) - 1];
  return {
    rows: dtos,
    // The cursor keeps PostgreSQL's microseconds: a millisecond ISO string would skip or repeat rows.
    next: more && last ? `${last.at_us}_${last.id}` : null,
    prev: null,
    now: rows[0] ? iso(rows[0].now) : new Date().toISOString(),
  };
}

import "server-only";
import { auditListRows } from "@/lib/enqueue/store/console-lists";
import type { AuditFilters } from "./filters";
import { type Db, iso } from "./read-queries";
import type { AuditDto, Page } from "./wire-types";

const AUDIT_PAGE_SIZE = 50;

/** Operator audit log, newest first; keyset on (at, id) over the `at` index. */
export async function listAudit(db: Db, f: AuditFilters, limit = AUDIT_PAGE_SIZE): Promise<Page<AuditDto>> {
  const rows = await auditListRows(db, f, limit);
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

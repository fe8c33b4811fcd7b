import "server-only";
import { auditListRows } from "@/lib/store/console/lists";
import type { AuditDto, Page } from "../wire/types";
import type { AuditFilters } from "./filters";
import { forwardPage, iso, type Sql } from "./read-queries";

const AUDIT_PAGE_SIZE = 50;

/** Operator audit log, newest first; keyset on (at, id) over the `at` index. */
export async function listAudit(db: Sql, f: AuditFilters, limit = AUDIT_PAGE_SIZE): Promise<Page<AuditDto>> {
  const rows = await auditListRows(db, f, limit);
  // The cursor keeps PostgreSQL's microseconds: a millisecond ISO string would skip or repeat rows.
  return forwardPage(
    rows,
    limit,
    (r) => ({
      id: r.id,
      at: iso(r.at),
      actor: r.actor,
      action: r.action,
      database: r.database,
      target: r.target,
      reason: r.reason,
      result: r.result,
    }),
    (last) => `${last.at_us}_${last.id}`,
  );
}

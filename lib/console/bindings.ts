import "server-only";
import { bindingListRows } from "@/lib/enqueue/store/console-lists";
import type { BindingFilters } from "./filters";
import { bindingDto } from "./jobs";
import { type Db, iso } from "./read-queries";
import type { BindingDto, Page } from "./wire-types";

const BINDINGS_PAGE_SIZE = 50;

/**
 * Live bindings (soonest to expire first) or expired ones awaiting cleanup (oldest first, the order
 * maintenance deletes them in). Walks the `expires_at` index; keyset cursor (expires_at, job_id).
 */
export async function listBindings(db: Db, f: BindingFilters, limit = BINDINGS_PAGE_SIZE): Promise<Page<BindingDto>> {
  const rows = await bindingListRows(db, f, limit);
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

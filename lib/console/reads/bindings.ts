import "server-only";
import { bindingListRows } from "@/lib/store/console/lists";
import type { BindingDto, Page } from "../wire/types";
import type { BindingFilters } from "./filters";
import { bindingDto } from "./jobs";
import { forwardPage, type Sql } from "./read-queries";

const BINDINGS_PAGE_SIZE = 50;

/**
 * Live bindings (soonest to expire first) or expired ones awaiting cleanup (oldest first, the order
 * maintenance deletes them in). Walks the `expires_at` index; keyset cursor (expires_at, job_id).
 */
export async function listBindings(db: Sql, f: BindingFilters, limit = BINDINGS_PAGE_SIZE): Promise<Page<BindingDto>> {
  const rows = await bindingListRows(db, f, limit);
  return forwardPage(rows, limit, bindingDto, (last) => `${last.exp_us}_${last.job_id}`);
}

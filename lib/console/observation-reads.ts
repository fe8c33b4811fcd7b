import "server-only";
import { type ObservationRow, observationFromRow } from "@/lib/enqueue";
import { observationListRows } from "@/lib/enqueue/store/console-lists";
import { type ObservationFilters, TIME_WINDOWS } from "./filters";
import { type Db, forwardPage, iso } from "./read-queries";
import type { ObservationDto, Page } from "./wire-types";

const OBSERVATIONS_PAGE_SIZE = 50;

export type { ObservationRow };

export function observationDto(r: ObservationRow): ObservationDto {
  return { ...observationFromRow(r), at: iso(r.at) };
}

/** The observation log (replays, conflicts, …), newest first by its identity key; keyset on id. */
export async function listObservations(
  db: Db,
  f: ObservationFilters,
  limit = OBSERVATIONS_PAGE_SIZE,
): Promise<Page<ObservationDto>> {
  const rows = await observationListRows(db, { ...f, sinceMs: f.since ? TIME_WINDOWS[f.since] : undefined }, limit);
  return forwardPage(rows, limit, observationDto, (last) => String(last.id));
}

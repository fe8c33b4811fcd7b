import "server-only";
import { type ObservationRow, observationFromRow } from "@/lib/store/console/core";
import { observationListRows } from "@/lib/store/console/lists";
import { replacedListRows } from "@/lib/store/console/replaced";
import type { ObservationDto, Page } from "../wire/types";
import { type ObservationFilters, TIME_WINDOWS } from "./filters";
import { forwardPage, iso, type Sql } from "./read-queries";

const OBSERVATIONS_PAGE_SIZE = 50;

export type { ObservationRow };

export function observationDto(r: ObservationRow): ObservationDto {
  return { ...observationFromRow(r), at: iso(r.at), lastAt: r.last_at === null ? null : iso(r.last_at) };
}

/** The observation log (replays, conflicts, …), newest first by its identity key; keyset on id. */
export async function listObservations(
  db: Sql,
  f: ObservationFilters,
  limit = OBSERVATIONS_PAGE_SIZE,
): Promise<Page<ObservationDto>> {
  if (f.outcome === "replaced") return listReplaced(db, f, limit);
  const after = f.after?.includes("_") ? undefined : f.after; // a replaced-list cursor means nothing here
  const rows = await observationListRows(
    db,
    { ...f, after, sinceMs: f.since ? TIME_WINDOWS[f.since] : undefined },
    limit,
  );
  return forwardPage(rows, limit, observationDto, (last) => String(last.id));
}

/**
 * Debounce `replaced` decisions, newest first (keyset on the event's time and seq): the `debounced`
 * job events with their jobs' queue, type and key, filtered like observations. A page reads at most
 * 1,000 events (REPLACED_MAX_SCANNED); past that with selective filters it is shorter, says so
 * (`stoppedAfter`), and "Older" goes on from there.
 */
async function listReplaced(db: Sql, f: ObservationFilters, limit: number): Promise<Page<ObservationDto>> {
  const [us, seq] = f.after?.includes("_") ? f.after.split("_") : [];
  const r = await replacedListRows(
    db,
    {
      queue: f.queue,
      type: f.type,
      scope: f.scope,
      digest: f.digest,
      from: f.from,
      to: f.to,
      sinceMs: f.since ? TIME_WINDOWS[f.since] : undefined,
      after: us && seq ? { us, seq } : undefined,
    },
    limit,
  );
  const page = r.rows.slice(0, limit);
  const last = page[page.length - 1];
  const next =
    r.rows.length > limit && last
      ? `${last.atUs}_${last.seq}`
      : r.scannedTo
        ? `${r.scannedTo.us}_${r.scannedTo.seq}`
        : null;
  return {
    rows: page.map((x) => ({
      id: `${x.atUs}_${x.seq}`,
      at: iso(x.at),
      outcome: "replaced",
      reason: null,
      queue: x.queue,
      type: x.type,
      scope: x.scope,
      keyPreview: x.keyPreview ?? "…",
      keyDigest: x.keyDigest,
      keyLength: x.keyLength ?? 0,
      jobId: x.jobId,
      conflictingFields: null,
      payloadPaths: null,
      storedRequestDigest: x.priorRequestDigest,
      rejectedRequestDigest: x.requestDigest,
      source: null,
      count: 1,
      lastAt: null,
    })),
    next,
    prev: null,
    now: iso(r.now),
    ...(r.scannedTo && r.rows.length <= limit ? { stoppedAfter: r.scanned } : {}),
  };
}

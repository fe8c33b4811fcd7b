import "server-only";
import { type ObservationRow, observationFromRow } from "@/lib/enqueue";
import { type ObservationFilters, TIME_WINDOWS } from "./filters";
import { prefixPattern } from "./jobs";
import { type Db, iso, Where } from "./read-queries";
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
  const w = new Where();
  if (f.outcome) w.add((p) => `outcome = ${p}`, f.outcome);
  if (f.scope) w.add((p) => `scope like ${p}`, prefixPattern(f.scope));
  if (f.queue) w.add((p) => `queue like ${p}`, prefixPattern(f.queue));
  if (f.type) w.add((p) => `type like ${p}`, prefixPattern(f.type));
  if (f.digest) w.add((p) => `key_digest = ${p}`, f.digest);
  if (f.from) w.add((p) => `at >= ${p}::timestamptz`, f.from);
  if (f.to) w.add((p) => `at < ${p}::timestamptz`, f.to);
  if (f.since) w.add((p) => `at >= now() - ${p}::bigint * interval '1 millisecond'`, TIME_WINDOWS[f.since]);
  if (f.after) w.add((p) => `id < ${p}::bigint`, f.after);
  const { rows } = await db.query<ObservationRow & { now: Date }>(
    `select *, now() as now from workhorse.enqueue_observation ${w} order by id desc limit ${limit + 1}`,
    w.values,
  );
  const more = rows.length > limit;
  const dtos = rows.slice(0, limit).map(observationDto);
  return {
    rows: dtos,
    next: more ? (dtos.at(-1)?.id ?? null) : null,
    prev: null,
    now: rows[0] ? iso(rows[0].now) : new Date().toISOString(),
  };
}

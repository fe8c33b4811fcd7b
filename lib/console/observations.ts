import "server-only";
import { type ObservationFilters, TIME_WINDOWS } from "./filters";
import { prefixPattern } from "./jobs";
import { type Db, iso, Where } from "./sql";
import type { ObservationDto, ObservationOutcome, Page } from "./types";

export const OBSERVATIONS_PAGE_SIZE = 50;

export interface ObservationRow {
  id: string;
  at: Date;
  outcome: ObservationOutcome;
  reason: string | null;
  queue: string;
  type: string;
  scope: string;
  key_preview: string;
  key_digest: string;
  key_length: number;
  job_id: string | null;
  conflicting_fields: string[] | null;
  payload_paths: string[] | null;
  stored_request_digest: string | null;
  rejected_request_digest: string | null;
  source: string | null;
}

export function observationDto(r: ObservationRow): ObservationDto {
  return {
    id: String(r.id),
    at: iso(r.at),
    outcome: r.outcome,
    reason: r.reason,
    queue: r.queue,
    type: r.type,
    scope: r.scope,
    keyPreview: r.key_preview,
    keyDigest: r.key_digest,
    keyLength: r.key_length,
    jobId: r.job_id,
    conflictingFields: r.conflicting_fields,
    payloadPaths: r.payload_paths,
    storedRequestDigest: r.stored_request_digest,
    rejectedRequestDigest: r.rejected_request_digest,
    source: r.source,
  };
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

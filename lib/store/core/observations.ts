/** The observation log's one statement: a batch of rows appended (observations.ts buffers them). */
import type { Sql } from "../layout";

const INSERT = `insert into workhorse.enqueue_observation
  (at, outcome, reason, queue, type, scope, key_preview, key_digest, key_length, job_id, conflicting_fields,
   payload_paths, stored_request_digest, rejected_request_digest, source, count, last_at)
select x.at, x.outcome, x.reason, x.queue, x.type, x.scope, x.key_preview, x.key_digest, x.key_length, x.job_id,
       x.conflicting_fields, x.payload_paths, x.stored_request_digest, x.rejected_request_digest, x.source,
       x.count, x.last_at
  from jsonb_to_recordset($1::jsonb) as x(at timestamptz, outcome text, reason text, queue text, type text, scope text,
       key_preview text, key_digest text, key_length integer, job_id uuid, conflicting_fields text[],
       payload_paths text[], stored_request_digest text, rejected_request_digest text, source text, count integer,
       last_at timestamptz)`;

/** One INSERT of these rows (their columns by name, as `jsonb_to_recordset` reads them). */
export async function insertObservations(sql: Sql, rows: readonly object[]): Promise<void> {
  await sql.query(INSERT, [JSON.stringify(rows)]);
}

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

/** The savepoint a caller's transaction writes its observations under (a failed write undoes only them). */
const SAVEPOINT = "workhorse_observations";

/**
 * The rows through a caller's client, inside its transaction, never aborting it: `savepoint
 * workhorse_observations`, the INSERT, `release savepoint` (after `rollback to savepoint` when the
 * INSERT failed). Resolves "written" (they commit or roll back with the caller's transaction),
 * "no transaction" (SAVEPOINT refused with 25P01: nothing was written), "aborted" (25P02: the caller's
 * transaction can no longer commit anything) or "failed" (the INSERT failed; the transaction is intact).
 */
export async function insertObservationsInTransaction(
  sql: Sql,
  rows: readonly object[],
): Promise<"written" | "no transaction" | "aborted" | "failed"> {
  try {
    await sql.query(`savepoint ${SAVEPOINT}`);
  } catch (err) {
    const code = (err as { code?: string } | null)?.code;
    return code === "25P01" ? "no transaction" : "aborted";
  }
  let outcome: "written" | "failed" = "written";
  try {
    await insertObservations(sql, rows);
  } catch {
    outcome = "failed";
    await sql.query(`rollback to savepoint ${SAVEPOINT}`).catch(() => {});
  }
  await sql.query(`release savepoint ${SAVEPOINT}`).catch(() => {});
  return outcome;
}

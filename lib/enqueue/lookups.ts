/**
 * Reads by id and by key: a job with its redrives, the binding of a scoped key (live or expired,
 * found by either hash during the pre-HMAC upgrade window), and what operators may see of a key.
 * The public methods and their docs are on `QueueOperations` (queue-operations.ts).
 */
import { idBucket } from "./enqueue-sql";
import { keyDigestOf, keyLengthOf, keyPreviewOf, legacyKeyHash } from "./keys";
import { parseJobId, parseScopedKey } from "./operator-input";
import type { OperationsDb } from "./queue-context";
import { BINDING_COLUMNS, type BindingRow, bindingFromRow, type JobRow, jobFromRow } from "./rows";
import type { BindingInfo, Job } from "./types";

export async function getJob(db: OperationsDb, jobId: string): Promise<Job | null> {
  const id = parseJobId(jobId);
  const { rows } = (await db.distributed("getJob"))
    ? // Citus: the job's shard from the bucket in its id; the redrives (anywhere) by a separate subplan.
      await db.sql<JobRow>("getJob", {
        name: "workhorse_get_job_at",
        text: `select j.*, coalesce((select array_agg(r.id order by r.id) from workhorse.job r
                                      where r.redriven_from = $1::uuid), '{}') as redrive_job_ids
                 from workhorse.job j where j.id = $1::uuid and j.bucket = $2::integer`,
        values: [id, idBucket(id)],
      })
    : await db.sql<JobRow>("getJob", {
        name: "workhorse_get_job",
        text: `select j.*, array(select r.id from workhorse.job r where r.redriven_from = j.id order by r.id) as redrive_job_ids
             from workhorse.job j where j.id = $1::uuid`,
        values: [id],
      });
  return rows[0] ? jobFromRow(rows[0]) : null;
}

export async function findBinding(
  db: OperationsDb,
  input: { key: string; scope?: string },
): Promise<BindingInfo | null> {
  const { key, scope } = parseScopedKey(input);
  const keys = db.context.config.keys;
  if (!keys.loaded) await db.loadKeys();
  // Both hashes: a binding made before the HMAC upgrade is found too. The live one wins.
  const { rows } = await db.sql<BindingRow>("findBinding", {
    name: "workhorse_find_binding",
    text: `select ${BINDING_COLUMNS}
             from workhorse.key_binding b where b.scope = $1 and b.key_hash = any($2::bytea[])
            order by b.expires_at desc limit 1`,
    values: [scope, [keys.hash(scope, key), legacyKeyHash(scope, key)]],
  });
  return rows[0] ? bindingFromRow(rows[0]) : null;
}

export async function describeKey(
  db: OperationsDb,
  input: { key: string; scope?: string },
): Promise<{ scope: string; keyPreview: string; keyDigest: string; keyLength: number; legacyKeyDigest: string }> {
  const { key, scope } = parseScopedKey(input);
  const keys = db.context.config.keys;
  if (!keys.loaded) await db.loadKeys();
  return {
    scope,
    keyPreview: keyPreviewOf(key),
    keyDigest: keyDigestOf(keys.hash(scope, key)),
    keyLength: keyLengthOf(key),
    legacyKeyDigest: keyDigestOf(legacyKeyHash(scope, key)),
  };
}

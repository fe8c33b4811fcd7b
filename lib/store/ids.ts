/**
 * Job ids as the store reads them: UUIDv7 (time-ordered, so a millisecond has a lowest id) whose last
 * 12 bits carry the Citus layout's bucket of a keyed job (docs/scale-out.md). Pure functions, no SQL.
 */
import { createHash } from "node:crypto";

/**
 * The distributed layout's bucket (0..4095) of a keyed request: the first 12 bits of
 * SHA-256(scope ‖ 0x00 ‖ key hash), as workhorse.key_bucket() computes it.
 */
export function keyBucket(scope: string, keyHash: Buffer): number {
  const d = createHash("sha256").update(scope, "utf8").update(ZERO_BYTE).update(keyHash).digest();
  return ((d[0] as number) << 4) | ((d[1] as number) >> 4);
}

/** The job id with its last 12 bits set to the bucket (workhorse.id_bucket() reads them back). */
export function bucketedId(id: string, bucket: number): string {
  return id.slice(0, 33) + bucket.toString(16).padStart(3, "0");
}

/** The bucket a job id carries (its last 12 bits). */
export function idBucket(id: string): number {
  return Number.parseInt(id.slice(33), 16);
}

const ZERO_BYTE = Buffer.from([0]);

/**
 * Lowest UUIDv7 of a millisecond: job ids are UUIDv7 (time-ordered), so `id >= uuidv7Floor(t)` is an
 * index range over the primary key for "jobs created since t".
 */
export function uuidv7Floor(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * The reference for the field digests the conformance file pins: an 8-byte digest (the first bytes
 * of SHA-256 of the JSON form) of every fingerprint field, the payload's from its jsonb text. The
 * field order is `workhorse.fingerprint_fields()`. PostgreSQL computes the same bytes from the
 * values it receives (sql/functions/request_field_digests.sql); no client sends them.
 */
import { hash } from "node:crypto";
import { FINGERPRINT_FIELDS, type FingerprintField } from "@workhorse/core/client";

/**
 * The fingerprint fields the process digests, in their stored order: all but the payload (digested
 * from its jsonb text) and `holdUntil` (whose digest PostgreSQL appends from the value it is sent).
 */
type DigestedField = Exclude<FingerprintField, "payload" | "holdUntil">;
const DIGESTED_FIELDS = FINGERPRINT_FIELDS.filter((f): f is DigestedField => f !== "payload" && f !== "holdUntil");

// Most fingerprint fields repeat across requests (queue, type, defaults, nulls): remember the digests
// of recent short values instead of hashing them again. Bounded (4,096 entries of at most 256
// characters); cleared when full.
const CACHE_ENTRIES = 4096;
const digestCache = new Map<string, Buffer>();
const fieldDigestCache = new Map<string, Buffer>();

function remember(cache: Map<string, Buffer>, text: string, value: Buffer): void {
  if (cache.size >= CACHE_ENTRIES) cache.clear();
  cache.set(text, value);
}

function digest(value: unknown): Buffer {
  const text = JSON.stringify(value) ?? "undefined";
  let d = digestCache.get(text);
  if (d === undefined) {
    d = hash("sha256", text, "buffer").subarray(0, 8);
    if (text.length <= 256) remember(digestCache, text, d);
  }
  return d;
}

/** Where the payload's digest sits among the field digests (bytes). */
const PAYLOAD_OFFSET = 8 * FINGERPRINT_FIELDS.indexOf("payload");

/**
 * 88 bytes: the digests of `values` and of the payload (`payloadDigest`, 16 hex digits) in
 * `workhorse.fingerprint_fields()` order. Requests of one stream mostly share the other fields'
 * digests: those 80 bytes are remembered per distinct combination (one JSON text, one map lookup on
 * the hot path).
 */
export function fieldDigestsOf(values: Record<DigestedField, unknown>, payloadDigest: string): Buffer {
  const signature = JSON.stringify(DIGESTED_FIELDS.map((f) => values[f]));
  let fieldDigests = fieldDigestCache.get(signature);
  if (fieldDigests === undefined) {
    fieldDigests = Buffer.concat(DIGESTED_FIELDS.map((f) => digest(values[f])));
    if (signature.length <= 1024) remember(fieldDigestCache, signature, fieldDigests);
  }
  const all = Buffer.allocUnsafe(fieldDigests.length + 8);
  fieldDigests.copy(all, 0, 0, PAYLOAD_OFFSET);
  all.write(payloadDigest, PAYLOAD_OFFSET, 8, "hex");
  fieldDigests.copy(all, PAYLOAD_OFFSET + 8, PAYLOAD_OFFSET);
  return all;
}

/** The payload's digest: the first 8 bytes of SHA-256 of its jsonb text (UTF-8), as 16 hex digits. */
export function payloadDigestOf(text: string): string {
  return hash("sha256", text).slice(0, 16);
}

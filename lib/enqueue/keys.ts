import { createHash } from "node:crypto";

/** SHA-256(UTF-8(scope) ‖ 0x1F ‖ UTF-8(key)), computed in this process; the raw key never leaves it. */
export function keyHash(scope: string, key: string): Buffer {
  return createHash("sha256").update(scope, "utf8").update(Buffer.of(0x1f)).update(key, "utf8").digest();
}

/** First 12 hex characters of the key hash: what operators correlate on. */
export function keyDigestOf(hash: Buffer): string {
  return hash.toString("hex", 0, 6);
}

/** Length of the key in Unicode code points. */
export function keyLengthOf(key: string): number {
  let n = 0;
  for (const _ of key) n++;
  return n;
}

/**
 * Bounded, redacted preview: the first min(8, floor(n / 3)) code points, then "…".
 * Keys under 3 code points preview as "…". The tail is never shown. Control and format characters
 * in the shown part are replaced by U+FFFD.
 */
export function keyPreviewOf(key: string): string {
  const points = Array.from(key);
  const shown = Math.min(8, Math.floor(points.length / 3));
  // Control and format characters (NUL, escapes, bidi overrides) show as U+FFFD: a preview is for
  // display, and PostgreSQL text cannot hold NUL.
  return `${points
    .slice(0, shown)
    .join("")
    .replace(/[\p{Cc}\p{Cf}]/gu, "\uFFFD")}…`;
}

export interface KeyIdentity {
  scope: string;
  keyHash: Buffer;
  keyDigest: string;
  keyPreview: string;
  keyLength: number;
}

export function identify(scope: string, key: string): KeyIdentity {
  const hash = keyHash(scope, key);
  return {
    scope,
    keyHash: hash,
    keyDigest: keyDigestOf(hash),
    keyPreview: keyPreviewOf(key),
    keyLength: keyLengthOf(key),
  };
}

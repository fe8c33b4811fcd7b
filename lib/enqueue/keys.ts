import { createHash, createHmac, createSecretKey, type KeyObject } from "node:crypto";
import { KEY_PREVIEW_HIDDEN } from "./key-preview-table.generated";

const SEPARATOR = Buffer.of(0x1f);

/**
 * The key hash before the per-installation secret existed: SHA-256(UTF-8(scope) ‖ 0x1F ‖ UTF-8(key)).
 * Only used to find bindings made before the upgrade (see `KeyRing`); never for new bindings.
 */
export function legacyKeyHash(scope: string, key: string): Buffer {
  return createHash("sha256").update(scope, "utf8").update(SEPARATOR).update(key, "utf8").digest();
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

// The characters a preview hides, from the table every client shares (KEY_PREVIEW_HIDDEN), not
// from this runtime's \p{Cf}, which follows the Unicode version of Node's ICU.
const HIDDEN = new RegExp(
  `[${KEY_PREVIEW_HIDDEN.map(([first, last]) => `\\u{${first.toString(16)}}-\\u{${last.toString(16)}}`).join("")}]`,
  "gu",
);

/**
 * Bounded, redacted preview: the first min(8, floor(n / 3)) code points, then "…".
 * Keys under 3 code points preview as "…". The tail is never shown. Control and format characters
 * in the shown part (General_Category Cc and Cf by the table in sdk/conformance/key-preview-hidden.json,
 * whatever Unicode version this runtime has) are replaced by U+FFFD.
 */
export function keyPreviewOf(key: string): string {
  const points = Array.from(key);
  const shown = Math.min(8, Math.floor(points.length / 3));
  // Control and format characters (NUL, escapes, bidi overrides) show as U+FFFD: a preview is for
  // display, and PostgreSQL text cannot hold NUL.
  return `${points.slice(0, shown).join("").replace(HIDDEN, "\uFFFD")}…`;
}

export interface KeyIdentity {
  scope: string;
  keyHash: Buffer;
  keyDigest: string;
  keyPreview: string;
  keyLength: number;
  /** The pre-upgrade SHA-256 hash, computed only while bindings made with it may still be live. */
  legacyKeyHash: Buffer | null;
}

/** Bytes of the installation secret. */
const KEY_SECRET_BYTES = 32;

/**
 * Parses an installation secret supplied from outside the database (`WORKHORSE_KEY_SECRET`, or
 * `QueueOptions.keySecret`): exactly 64 hexadecimal characters, or a 32-byte Buffer. Returns null
 * when the value is not in that form; the value itself never appears in a message.
 */
export function parseKeySecret(value: string | Buffer): Buffer | null {
  if (Buffer.isBuffer(value)) return value.length === KEY_SECRET_BYTES ? Buffer.from(value) : null;
  const text = value.trim();
  return /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : null;
}

/** What `KeyRing.load` reads from `workhorse.installation`. */
export interface InstallationRow {
  /** Null when the process brought its own secret (the stored one is then not even selected). */
  key_secret: Buffer | null;
  /** Milliseconds, by PostgreSQL's clock, until the last pre-upgrade binding expires (0: none left). */
  legacy_ms: number;
}

/** Margin added to the legacy window to absorb clock drift between this process and PostgreSQL. */
const LEGACY_MARGIN_MS = 5_000;

/**
 * The installation secret of one `Queue`, read once (lazily, on the first enqueue or lookup) and
 * kept as a `KeyObject`, so it does not show in `util.inspect`, logs or errors.
 *
 *   keyHash = HMAC-SHA256(secret, UTF-8(scope) ‖ 0x1F ‖ UTF-8(key))
 *
 * While bindings made before the upgrade can still be live (`legacy_key_hashes_until`, measured
 * against PostgreSQL's clock and converted to this process's clock when loaded), identities also
 * carry the legacy SHA-256 hash so the decision can find those bindings.
 */
export class KeyRing {
  #secret: KeyObject | null = null;
  #legacyUntil = 0;
  #loading: Promise<void> | null = null;
  readonly #outside: KeyObject | null;

  constructor(outsideSecret: Buffer | null) {
    this.#outside = outsideSecret ? createSecretKey(outsideSecret) : null;
  }

  /** True once the secret is known: `identify` may be called. */
  get loaded(): boolean {
    return this.#secret !== null;
  }

  /** True when the secret came from outside the database. */
  get external(): boolean {
    return this.#outside !== null;
  }

  /** Loads the secret once; concurrent callers share one read, a failed read is retried next time. */
  load(read: (external: boolean) => Promise<InstallationRow>): Promise<void> {
    if (this.#secret) return Promise.resolve();
    this.#loading ??= (async () => {
      try {
        const row = await read(this.#outside !== null);
        const secret = this.#outside ?? (row.key_secret ? createSecretKey(row.key_secret) : null);
        if (!secret || secret.symmetricKeySize !== KEY_SECRET_BYTES) {
          throw new Error("the installation key is missing or malformed in workhorse.installation");
        }
        this.#legacyUntil = row.legacy_ms > 0 ? Date.now() + row.legacy_ms + LEGACY_MARGIN_MS : 0;
        this.#secret = secret;
      } finally {
        this.#loading = null;
      }
    })();
    return this.#loading;
  }

  /** HMAC-SHA256 of the scoped key. Throws if the secret is not loaded yet. */
  hash(scope: string, key: string): Buffer {
    if (!this.#secret) throw new Error("the installation key is not loaded yet");
    return createHmac("sha256", this.#secret).update(scope, "utf8").update(SEPARATOR).update(key, "utf8").digest();
  }

  /** Whether bindings made before the upgrade may still own keys (by this process's clock). */
  legacyWindowOpen(now = Date.now()): boolean {
    return this.#legacyUntil > now;
  }

  identify(scope: string, key: string): KeyIdentity {
    const hash = this.hash(scope, key);
    return {
      scope,
      keyHash: hash,
      keyDigest: keyDigestOf(hash),
      keyPreview: keyPreviewOf(key),
      keyLength: keyLengthOf(key),
      legacyKeyHash: this.legacyWindowOpen() ? legacyKeyHash(scope, key) : null,
    };
  }
}

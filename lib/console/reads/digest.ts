import "server-only";
import type pg from "pg";
import { OBSERVATIONS_BY_DIGEST_SQL, observationsByDigest, purgedJobsUnderDigest } from "@/lib/store/console/keys";
import { bindingsByDigest } from "@/lib/store/console/reads";
import { DIGEST_LOOKUPS_PER_MINUTE, digestLookupLimiter, type RequestLimiter } from "../auth/rate-limit";
import type { DigestLookupDto } from "../wire/types";
import { bindingDto } from "./jobs";
import { observationDto } from "./observation-reads";
import { iso, readWithTimeout } from "./read-queries";

/** A key digest: the first 12 hex characters of the key's keyed hash (HMAC-SHA256 under the installation secret, docs/enqueue.md), what errors and logs carry. */
export const DIGEST_RE = /^[0-9a-f]{12}$/;

/** lookupDigest was given something that is not a key digest (DIGEST_RE): nothing was read. */
export class NotAKeyDigestError extends Error {
  override name = "NotAKeyDigestError";
  constructor() {
    super("A key digest is 12 hex characters (0-9, a-f).");
  }
}

/**
 * The find page's `digest` parameter: `raw` is what the operator typed (the first value, control
 * characters removed, trimmed, lower-cased), `digest` is it when it is a key digest, else null (the
 * page then says so and reads nothing).
 */
export function digestParam(value: string | string[] | undefined): { raw: string; digest: string | null } {
  const raw = ((Array.isArray(value) ? value[0] : value) ?? "")
    .replace(/\p{Cc}/gu, "")
    .trim()
    .toLowerCase();
  return { raw, digest: DIGEST_RE.test(raw) ? raw : null };
}

export { DIGEST_LOOKUPS_PER_MINUTE };

/** How long the observation search (an index range since migration 015) may take before we say so. */
const DIGEST_SEARCH_TIMEOUT_MS = 500;
/** Scopes walked for bindings; beyond this the answer says the search stopped. */
const DIGEST_MAX_SCOPES = 1000;

type LimitedDigestLookup =
  | { status: "ok"; result: DigestLookupDto }
  | { status: "limited"; retryInSeconds: number; message: string };

/**
 * lookupDigest, at most DIGEST_LOOKUPS_PER_MINUTE times a minute per `who` (the console session, or
 * the client address without sign-in). Past that, no query runs and the answer says how long to wait.
 */
export async function lookupDigestLimited(
  pool: pg.Pool,
  digest: string,
  who: string,
  limiter: RequestLimiter = digestLookupLimiter,
  now = Date.now(),
): Promise<LimitedDigestLookup> {
  const waitMs = limiter.take(who, now);
  if (waitMs > 0) {
    const retryInSeconds = Math.ceil(waitMs / 1000);
    return {
      status: "limited",
      retryInSeconds,
      message: `Too many digest lookups from this session (${DIGEST_LOOKUPS_PER_MINUTE} a minute): wait ${retryInSeconds} s and try again.`,
    };
  }
  return { status: "ok", result: await lookupDigest(pool, digest) };
}

/**
 * Everything the console knows under one key digest, across scopes:
 * - live and expired bindings whose key hash starts with the digest. The binding's primary key is
 *   (scope, key_hash): the scopes are walked with a recursive "skip scan" over that index (one index
 *   probe per scope) and each scope is a key_hash range probe, so no table scan;
 * - the jobs those bindings hold (state, queue, type);
 * - the newest observations (replays, conflicts) under the digest: an index range on
 *   (key_digest, id) (migration 015), still read-only under a statement timeout, and the answer says
 *   when it was cut short.
 * - purged jobs whose key had the digest (the purge released it), newest first, at most 5: a probe
 *   of the purged jobs' digest index (migration 029), in the same read-only transaction as the
 *   observations, under its statement timeout; when that cuts the two short, the answer says so for
 *   both.
 * Six bytes of digest can, rarely, match two keys: every binding found is listed with its scope.
 * `timeoutMs`: the observations' and purged jobs' statement timeout (default 500 ms).
 * Throws NotAKeyDigestError, before any read, when `digest` is not a key digest (DIGEST_RE).
 */
export async function lookupDigest(
  pool: pg.Pool,
  digest: string,
  { timeoutMs = DIGEST_SEARCH_TIMEOUT_MS }: { timeoutMs?: number } = {},
): Promise<DigestLookupDto> {
  // Buffer.from(…, "hex") stops at the first non-hex character: a shorter prefix would match more keys.
  if (!DIGEST_RE.test(digest)) throw new NotAKeyDigestError();
  const prefix = Buffer.from(digest, "hex");
  const lo = Buffer.concat([prefix, Buffer.alloc(26, 0)]);
  const hi = Buffer.concat([prefix, Buffer.alloc(26, 0xff)]);
  // The log and the purged jobs in one read-only transaction (one connection, one timeout for both):
  // a page that searches several databases at once sends as few statements as it can.
  const [bindings, logged] = await Promise.all([
    bindingsByDigest(pool, lo, hi, DIGEST_MAX_SCOPES),
    readWithTimeout(pool, timeoutMs, async (client) => ({
      observations: await observationsByDigest(client, digest),
      released: await purgedJobsUnderDigest(client, prefix),
    })),
  ]);
  const first = bindings.rows[0];
  return {
    digest,
    bindings: bindings.rows.map((r) => ({
      binding: bindingDto(r),
      job: r.job_state ? { state: r.job_state, queue: r.job_queue ?? "", type: r.job_type ?? "" } : null,
    })),
    scopesSearchedAll: first ? Number(first.scopes) < DIGEST_MAX_SCOPES : true,
    observations: logged.timedOut ? [] : logged.value.observations.map(observationDto),
    observationsComplete: !logged.timedOut,
    released: logged.timedOut
      ? []
      : logged.value.released.map((r) => ({ jobId: r.job_id, scope: r.scope, purgedAt: iso(r.purged_at) })),
    releasedComplete: !logged.timedOut,
    now: iso(first?.now ?? new Date()),
  };
}

export { OBSERVATIONS_BY_DIGEST_SQL };

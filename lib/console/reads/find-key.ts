import "server-only";
import { DEFAULT_SCOPE, EnqueueValidationError, type Queue } from "@workhorse/core";
/**
 * Find by key: scope + raw key -> the binding and its owning job, or, when no live binding exists,
 * what became of the key. A read model: the key is hashed by lib/enqueue in this process and the
 * state returned holds its digest, preview and length, never the key.
 */
import type pg from "pg";
import { newestJobUnderKey, owningJob } from "@/lib/store/console/keys";
import { bindingScopes } from "@/lib/store/console/reads";
import type { FieldErrors, FindKeyState, KeyElsewhere, KeyHistory, KeyWhitespace } from "../wire/action-state";
import { debounceFields } from "./jobs";
import { iso, readWithTimeout } from "./read-queries";

const text = (v: FormDataEntryValue | null): string => (typeof v === "string" ? v : "");

/**
 * Scope + raw key -> binding and owning job. The key is hashed by lib/enqueue in this process; the
 * state returned holds its digest, preview and length, never the key.
 */
export async function findByKey(queue: Queue, pool: pg.Pool, form: FormData): Promise<FindKeyState> {
  const key = text(form.get("key"));
  const scope = text(form.get("scope")).trim() || DEFAULT_SCOPE;
  if (key === "") return { status: "error", message: "Enter the key.", fieldErrors: { key: "Key is required" } };
  let binding: Awaited<ReturnType<Queue["findBinding"]>>;
  try {
    binding = await queue.findBinding({ key, scope });
  } catch (err) {
    if (err instanceof EnqueueValidationError) {
      const fieldErrors: FieldErrors = {};
      for (const i of err.issues) fieldErrors[i.option === "scope" ? "scope" : "key"] ??= `${i.option}: ${i.rule}`;
      return { status: "error", message: "Check the highlighted fields.", fieldErrors };
    }
    throw err;
  }
  const described = await queue.describeKey({ key, scope });
  const whitespace = whitespaceOf(key);
  if (binding) {
    // One round trip: the owning job (if it still exists) and the server's clock for the countdown.
    const row = await owningJob(pool, binding.jobId);
    const j = row?.id ? row : null;
    return {
      status: "found",
      scope,
      binding: {
        ...binding,
        createdAt: iso(binding.createdAt),
        expiresAt: binding.expiresAt ? iso(binding.expiresAt) : null,
        ...debounceFields(binding.createdAt, binding.schedule, binding.maxWaitMs),
      },
      job: j?.id
        ? {
            id: j.id,
            state: j.state,
            queue: j.queue,
            type: j.type,
            createdAt: iso(j.created_at),
            purgedAt: j.purged_at ? iso(j.purged_at) : null,
          }
        : null,
      now: iso(row?.now ?? new Date()),
      whitespace,
    };
  }
  return {
    status: "none",
    scope,
    keyDigest: described.keyDigest,
    keyLength: described.keyLength,
    history: await keyHistory(pool, scope, [described.keyDigest, described.legacyKeyDigest]),
    whitespace,
    elsewhere: await elsewhere(queue, pool, key, scope, whitespace !== null),
  };
}

function whitespaceOf(key: string): KeyWhitespace | null {
  const leading = key.length - key.trimStart().length;
  const trailing = key.length - key.trimEnd().length;
  return leading + trailing > 0 && key.trim() !== "" ? { leading, trailing } : null;
}

/** Scopes one lookup probes (one primary-key probe each, in one round trip). */
const ELSEWHERE_MAX_SCOPES = 200;

/**
 * The nearly-right key: with surrounding whitespace, the trimmed key in every known scope; else (or
 * when that finds nothing) the key as typed in the other known scopes. Bounded: at most
 * ELSEWHERE_MAX_SCOPES scopes, found by a skip scan over the binding index.
 */
async function elsewhere(
  queue: Queue,
  pool: pg.Pool,
  key: string,
  scope: string,
  spaced: boolean,
): Promise<KeyElsewhere | null> {
  const scopes = await bindingScopes(pool, ELSEWHERE_MAX_SCOPES);
  const found = (trimmed: boolean, list: { scope: string; jobId: string; expired: boolean }[]) => ({
    trimmed,
    matches: list.map((b) => ({ scope: b.scope, jobId: b.jobId, expired: b.expired })),
    scopesSearched: scopes.length,
    searchedAll: scopes.length < ELSEWHERE_MAX_SCOPES,
  });
  if (spaced) {
    const trimmed = await queue.findBindingInScopes({ key: key.trim(), scopes });
    if (trimmed.length > 0) return found(true, trimmed);
  }
  const others = scopes.filter((s) => s !== scope);
  return found(false, others.length ? await queue.findBindingInScopes({ key, scopes: others }) : []);
}

/** Milliseconds the "what happened to this key" search may take before we answer "unknown". */
const HISTORY_TIMEOUT_MS = 500;

/**
 * What became of a key with no binding: the newest job that was accepted under it (jobs carry their
 * scope and key hash), or, for jobs accepted before the storage upgrade, the newest `enqueued` event
 * carrying its digest and scope. Neither has an index for this, so the search is bounded by a
 * statement timeout.
 */
async function keyHistory(pool: pg.Pool, scope: string, digests: string[]): Promise<KeyHistory> {
  try {
    const read = await readWithTimeout(pool, HISTORY_TIMEOUT_MS, (client) => newestJobUnderKey(client, scope, digests));
    if (read.timedOut) return { kind: "unknown" };
    const r = read.value;
    if (!r) return { kind: "never_seen" };
    if (r.purged_at) return { kind: "released", jobId: r.job_id, purgedAt: iso(r.purged_at) };
    return { kind: "expired_cleaned", jobId: r.job_id, expiredAt: r.expires_at ? iso(r.expires_at) : null };
  } catch {
    return { kind: "unknown" };
  }
}

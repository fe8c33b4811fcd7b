/**
 * Reads by id and by key: a job with its redrives, the binding of a scoped key (live or expired,
 * found by either hash during the pre-HMAC upgrade window), and what operators may see of a key.
 * The public methods and their docs are on `QueueOperations` (queue.ts); the statements
 * are in store/core/jobs.ts and store/core/bindings.ts.
 */

import { selectBinding, selectBindingsInScopes } from "../store/core/bindings";
import { selectJob } from "../store/core/jobs";
import { loadKeys, type QueueView, storeOf } from "./enqueue-call";
import { keyDigestOf, keyLengthOf, keyPreviewOf, legacyKeyHash } from "./keys";
import { parseJobId, parseScopedKey } from "./operator-input";
import type { BindingInfo, Job, KeyDescription } from "./types";

export async function getJob(view: QueueView, jobId: string): Promise<Job | null> {
  return selectJob(storeOf(view, "getJob"), parseJobId(jobId));
}

export async function findBinding(
  view: QueueView,
  input: { key: string; scope?: string },
): Promise<BindingInfo | null> {
  const { key, scope } = parseScopedKey(input);
  const keys = view.context.config.keys;
  if (!keys.loaded) await loadKeys(view);
  // Both hashes: a binding made before the HMAC upgrade is found too.
  return selectBinding(storeOf(view, "findBinding"), scope, [keys.hash(scope, key), legacyKeyHash(scope, key)]);
}

export async function describeKey(view: QueueView, input: { key: string; scope?: string }): Promise<KeyDescription> {
  const { key, scope } = parseScopedKey(input);
  const keys = view.context.config.keys;
  if (!keys.loaded) await loadKeys(view);
  return {
    scope,
    keyPreview: keyPreviewOf(key),
    keyDigest: keyDigestOf(keys.hash(scope, key)),
    keyLength: keyLengthOf(key),
    legacyKeyDigest: keyDigestOf(legacyKeyHash(scope, key)),
  };
}

/** Most scopes `findBindingInScopes` probes in one call. */
export const MAX_SCOPES_PER_LOOKUP = 200;

export async function findBindingInScopes(
  view: QueueView,
  input: { key: string; scopes: string[] },
): Promise<BindingInfo[]> {
  const scopes = [...new Set(input.scopes)].slice(0, MAX_SCOPES_PER_LOOKUP);
  const parsed = scopes.map((scope) => parseScopedKey({ key: input.key, scope }));
  const keys = view.context.config.keys;
  if (!keys.loaded) await loadKeys(view);
  const pairScopes: string[] = [];
  const hashes: Buffer[] = [];
  for (const p of parsed) {
    pairScopes.push(p.scope, p.scope);
    hashes.push(keys.hash(p.scope, p.key), legacyKeyHash(p.scope, p.key));
  }
  return pairScopes.length === 0
    ? []
    : selectBindingsInScopes(storeOf(view, "findBindingInScopes"), pairScopes, hashes);
}

/**
 * SQL for the upgrade from plain SHA-256 key hashes to the keyed HMAC (see keys.ts `KeyRing`).
 *
 * While bindings made before the upgrade may be live, a keyed request also carries its legacy
 * SHA-256 hash. If a live binding has that hash, the decision runs on it (replay or conflict), so a
 * key bound before the upgrade never gets a second job; otherwise the HMAC is used as always.
 * FOR KEY SHARE keeps a purge or cleanup from deleting the legacy binding between this probe and
 * the decision (same transaction, same now()), which would otherwise bind the key anew under the
 * legacy hash, past the end of the window. These statements are only sent inside the window: once
 * the last legacy binding has expired, enqueue sends exactly the statements it sent before.
 */

/**
 * `workhorse.enqueue_one(...)` call text with the key-hash argument ($14, next to the scope in $13)
 * replaced by "the live legacy binding's hash ($20) if there is one, else $14".
 */
export function withLegacyProbe(enqueueOneSql: string): string {
  if (!enqueueOneSql.includes("$14::bytea")) throw new Error("enqueue_one call text without $14::bytea");
  return enqueueOneSql.replace(
    "$14::bytea",
    `coalesce((select b.key_hash from workhorse.idempotency_binding b
        where b.scope = $13::text and b.key_hash = $20::bytea and b.expires_at > now() for key share), $14::bytea)`,
  );
}

/**
 * `workhorse.enqueue(jsonb, boolean)` for a batch whose keyed elements may carry `legacy_key_hash`
 * (hex): an element whose legacy hash has a live binding is decided on that binding.
 */
export const ENQUEUE_BATCH_LEGACY_SQL = `select ordinal, job_id, outcome, request_digest from workhorse.enqueue(
  (select jsonb_agg(case when l.key_hash is null then r.v - 'legacy_key_hash'
                         else (r.v - 'legacy_key_hash') || jsonb_build_object('key_hash', encode(l.key_hash, 'hex')) end
                    order by r.n)
     from jsonb_array_elements($1::jsonb) with ordinality as r(v, n)
     left join lateral (
       select b.key_hash from workhorse.idempotency_binding b
        where r.v ? 'legacy_key_hash' and b.scope = r.v->>'scope'
          and b.key_hash = decode(r.v->>'legacy_key_hash', 'hex') and b.expires_at > now()
        for key share) l on true),
  $2::boolean)`;

/**
 * Reads the installation secret (not even selected when the process brought its own) and how many
 * milliseconds, by PostgreSQL's clock, remain until the last pre-upgrade binding expires.
 */
export function installationSql(external: boolean): string {
  return `select ${external ? "null::bytea" : "key_secret"} as key_secret,
                 coalesce(greatest(0, extract(epoch from legacy_key_hashes_until - now()) * 1000), 0)::float8 as legacy_ms
            from workhorse.installation`;
}

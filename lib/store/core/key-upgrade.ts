/**
 * SQL for the upgrade from plain SHA-256 key hashes to the keyed HMAC (see ../keys.ts `KeyRing`),
 * and the read of the installation row the `KeyRing` loads.
 *
 * While bindings made before the upgrade may be live, a keyed request also carries its legacy
 * SHA-256 hash. If a live binding has that hash, the decision runs on it (replay or conflict), so a
 * key bound before the upgrade never gets a second job; otherwise the HMAC is used as always.
 * FOR KEY SHARE keeps a purge or cleanup from deleting the legacy binding between this probe and
 * the decision (same transaction, same now()), which would otherwise bind the key anew under the
 * legacy hash, past the end of the window. These statements are only sent inside the window: once
 * the last legacy binding has expired, enqueue sends exactly the statements it sent before. A batch
 * passes the legacy hashes as `workhorse.enqueue_batch`'s `p_legacy_key_hashes` (null outside the
 * window), which makes the same probe inside the function.
 */
import type { InstallationRow } from "../../enqueue/keys";
import type { Sql } from "../layout";

/**
 * `workhorse.enqueue_one(...)` call text with the key-hash argument (`$<keyHash>`, the scope being
 * `$<scope>`) replaced by "the live legacy binding's hash ($`legacy`, a parameter after the call's
 * own) if there is one, else the key hash". The positions come from enqueue.ts's field table.
 */
export function withLegacyProbe(
  enqueueOneSql: string,
  param: { scope: number; keyHash: number; legacy: number },
): string {
  const keyHash = `$${param.keyHash}::bytea`;
  if (!enqueueOneSql.includes(keyHash)) throw new Error(`enqueue_one call text without ${keyHash}`);
  return enqueueOneSql.replace(
    keyHash,
    `coalesce((select b.key_hash from workhorse.key_binding b
        where b.scope = $${param.scope}::text and b.key_hash = $${param.legacy}::bytea and b.expires_at > now() for key share), ${keyHash})`,
  );
}

/**
 * Reads the installation secret (not even selected when the process brought its own) and how many
 * milliseconds, by PostgreSQL's clock, remain until the last pre-upgrade binding expires. Null when
 * the table is empty (migrate() has not run).
 */
export async function selectInstallation(sql: Sql, external: boolean): Promise<InstallationRow | null> {
  const { rows } = await sql.query<InstallationRow>({
    text: `select ${external ? "null::bytea" : "key_secret"} as key_secret,
                 coalesce(greatest(0, extract(epoch from legacy_key_hashes_until - now()) * 1000), 0)::float8 as legacy_ms
            from workhorse.installation`,
  });
  return rows[0] ?? null;
}

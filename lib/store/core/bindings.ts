/** Reads of `workhorse.key_binding` by the core: the binding of a scoped key (live or expired). */
import type { BindingInfo } from "../../enqueue/types";
import type { Sql } from "../layout";
import { BINDING_COLUMNS, type BindingRow, bindingFromRow } from "../rows";

/** The binding of `scope` under either of `keyHashes` (the HMAC one and the legacy one): the live one wins. */
export async function selectBinding(sql: Sql, scope: string, keyHashes: Buffer[]): Promise<BindingInfo | null> {
  const { rows } = await sql.query<BindingRow>({
    name: "workhorse_find_binding",
    text: `select ${BINDING_COLUMNS}
             from workhorse.key_binding b where b.scope = $1 and b.key_hash = any($2::bytea[])
            order by b.expires_at desc limit 1`,
    values: [scope, keyHashes],
  });
  return rows[0] ? bindingFromRow(rows[0]) : null;
}

/**
 * The bindings of one key across several scopes: `(scopes[i], keyHashes[i])` pairs, each a primary-key
 * probe (the caller bounds the list). The newest-expiring binding per scope.
 */
export async function selectBindingsInScopes(sql: Sql, scopes: string[], keyHashes: Buffer[]): Promise<BindingInfo[]> {
  const { rows } = await sql.query<BindingRow>({
    text: `select distinct on (b.scope) ${BINDING_COLUMNS}
             from unnest($1::text[], $2::bytea[]) as p(scope, key_hash)
             join workhorse.key_binding b on b.scope = p.scope and b.key_hash = p.key_hash
            order by b.scope, b.expires_at desc`,
    values: [scopes, keyHashes],
  });
  return rows.map(bindingFromRow);
}

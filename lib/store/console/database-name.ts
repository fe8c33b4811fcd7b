/**
 * The name of the console database a connection serves, kept in its session: the audit rows an
 * operator action writes through it record where it ran (docs/console.md, "Several databases").
 */
import type pg from "pg";

/** The session setting each console connection carries: its database's configured name. */
export const DATABASE_SETTING = "workhorse.database";

/** Sets `DATABASE_SETTING` for the rest of `client`'s session: `select set_config($1, $2, false)`. */
export async function nameSession(client: pg.ClientBase, name: string): Promise<void> {
  await client.query("select set_config($1, $2, false)", [DATABASE_SETTING, name]);
}

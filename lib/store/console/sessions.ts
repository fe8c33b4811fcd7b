/**
 * The console's session rows (`workhorse.console_session`; lib/console/auth/session-store.ts holds the
 * rules: ids, fingerprints, lifetimes). Sessions are found by the SHA-256 of their id.
 */
import type { Sql } from "../layout";

export interface SessionDbRow {
  id_hash: Buffer;
  actor: string;
  client_address: string | null;
  created_at: Date;
  last_seen_at: Date;
  idle_expires_at: Date;
  expires_at: Date;
}

const RETURNING = "id_hash, actor, client_address, created_at, last_seen_at, idle_expires_at, expires_at";

/** Deletes every session past its idle or absolute expiry. */
export async function deleteEndedSessions(db: Sql): Promise<void> {
  await db.query("delete from workhorse.console_session where expires_at <= now() or idle_expires_at <= now()");
}

export async function insertSession(
  db: Sql,
  s: {
    idHash: Buffer;
    actor: string;
    fingerprint: string;
    clientAddress: string | null;
    idleMs: number;
    maxMs: number;
  },
): Promise<SessionDbRow> {
  const { rows } = await db.query<SessionDbRow>(
    `insert into workhorse.console_session
       (id_hash, actor, password_fingerprint, client_address, idle_expires_at, expires_at)
     values ($1, $2, $3, $4, now() + $5::bigint * interval '1 millisecond', now() + $6::bigint * interval '1 millisecond')
     returning ${RETURNING}`,
    [s.idHash, s.actor, s.fingerprint, s.clientAddress, s.idleMs, s.maxMs],
  );
  return rows[0] as SessionDbRow;
}

/** The live session under this hash, whether it was made with `fingerprint`, and whether `touchEveryMs` has passed since it was last seen. */
export async function selectLiveSession(db: Sql, idHash: Buffer, fingerprint: string, touchEveryMs: number) {
  const { rows } = await db.query<SessionDbRow & { fingerprint_ok: boolean; touch: boolean }>(
    `select ${RETURNING},
            password_fingerprint = $2 as fingerprint_ok,
            last_seen_at <= now() - $3::bigint * interval '1 millisecond' as touch
       from workhorse.console_session
      where id_hash = $1 and idle_expires_at > now() and expires_at > now()`,
    [idHash, fingerprint, touchEveryMs],
  );
  return rows[0];
}

/** Marks the session seen now and extends its idle expiry by `idleMs` (never past the absolute one). */
export async function touchSession(db: Sql, idHash: Buffer, idleMs: number): Promise<SessionDbRow | undefined> {
  const { rows } = await db.query<SessionDbRow>(
    `update workhorse.console_session
          set last_seen_at = now(), idle_expires_at = least(expires_at, now() + $2::bigint * interval '1 millisecond')
        where id_hash = $1
        returning ${RETURNING}`,
    [idHash, idleMs],
  );
  return rows[0];
}

/** Whether a row was deleted. */
export async function deleteSessionRow(db: Sql, idHash: Buffer): Promise<boolean> {
  const { rowCount } = await db.query("delete from workhorse.console_session where id_hash = $1", [idHash]);
  return (rowCount ?? 0) > 0;
}

/** Deletes every session; how many were live. */
export async function deleteAllSessionRows(db: Sql): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `with gone as (delete from workhorse.console_session returning idle_expires_at, expires_at)
     select count(*) filter (where idle_expires_at > now() and expires_at > now()) as n from gone`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** Live sessions made with `fingerprint`, newest first (at most 500). */
export async function selectLiveSessions(db: Sql, fingerprint: string): Promise<SessionDbRow[]> {
  const { rows } = await db.query<SessionDbRow>(
    `select ${RETURNING}
       from workhorse.console_session
      where idle_expires_at > now() and expires_at > now() and password_fingerprint = $1
      order by created_at desc limit 500`,
    [fingerprint],
  );
  return rows;
}

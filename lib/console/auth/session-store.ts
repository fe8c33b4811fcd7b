/**
 * Console sessions kept in PostgreSQL (the console_session table; statements in
 * lib/store/console/sessions.ts), so they can be revoked: the
 * cookie only carries a random id (sealed by iron-session); the row, found by the id's SHA-256, says
 * who is signed in. A session ends when its row is deleted (sign-out, "sign out everywhere"), after
 * `SESSION_IDLE_MS` without a request, after `SESSION_MAX_MS` in any case, or when the password it
 * was made with is no longer the configured one.
 *
 * No next/* imports, so the vitest suites exercise it against a real database.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import * as store from "@/lib/store/console/sessions";
import type { PasswordCheck } from "../databases/config";
import type { Sql } from "../reads/read-queries";

/** A session ends after this long without a request. */
export const SESSION_IDLE_MS = 2 * 60 * 60_000;
/** A session ends this long after sign-in, however active. */
export const SESSION_MAX_MS = 12 * 60 * 60_000;
/** last_seen_at is written at most this often per session (a page poll every 5 s need not write). */
const TOUCH_EVERY_MS = 60_000;

/**
 * Identifies the configured password without revealing it: HMAC-SHA256 under the session secret of
 * what the configuration holds (the plain password's SHA-256, or the scrypt salt and hash). A new
 * password gives a new fingerprint, which ends every session made with the old one.
 */
export function passwordFingerprint(check: PasswordCheck, sessionSecret: string): string {
  const h = createHmac("sha256", sessionSecret).update("workhorse console password\u001f");
  if (check.kind === "plain") h.update("plain\u001f").update(check.digest);
  else h.update("scrypt\u001f").update(check.salt).update(Buffer.of(0x1f)).update(check.hash);
  return h.digest("hex").slice(0, 32);
}

const idHash = (id: string) => createHash("sha256").update(id, "utf8").digest();

interface SessionRow {
  /** First 12 hex characters of the id's hash: names a session on the Sessions page, reveals nothing. */
  ref: string;
  actor: string;
  clientAddress: string | null;
  createdAt: Date;
  lastSeenAt: Date;
  idleExpiresAt: Date;
  expiresAt: Date;
}

type Row = store.SessionDbRow;

const toSession = (r: Row): SessionRow => ({
  ref: r.id_hash.toString("hex", 0, 6),
  actor: r.actor,
  clientAddress: r.client_address,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
  idleExpiresAt: r.idle_expires_at,
  expiresAt: r.expires_at,
});

/** Creates a session and returns its id (for the cookie) and row. Also clears out ended sessions. */
export async function createSession(
  db: Sql,
  input: { actor: string; fingerprint: string; clientAddress: string | null },
): Promise<{ id: string; session: SessionRow }> {
  await store.deleteEndedSessions(db);
  const id = randomBytes(32).toString("base64url");
  const row = await store.insertSession(db, {
    idHash: idHash(id),
    actor: input.actor,
    fingerprint: input.fingerprint,
    clientAddress: input.clientAddress?.slice(0, 64) ?? null,
    idleMs: SESSION_IDLE_MS,
    maxMs: SESSION_MAX_MS,
  });
  return { id, session: toSession(row) };
}

/**
 * The live session with this id, or null. A session made under another password is deleted on
 * sight. Extends the idle expiry (never past the absolute one), writing at most once a minute.
 */
export async function lookupSession(db: Sql, id: string, fingerprint: string): Promise<SessionRow | null> {
  const hash = idHash(id);
  const r = await store.selectLiveSession(db, hash, fingerprint, TOUCH_EVERY_MS);
  if (!r) return null;
  if (!r.fingerprint_ok) {
    await store.deleteSessionRow(db, hash);
    return null;
  }
  if (r.touch) {
    const touched = await store.touchSession(db, hash, SESSION_IDLE_MS);
    return touched ? toSession(touched) : null;
  }
  return toSession(r);
}

/** Ends one session (sign-out). Returns whether a row was deleted. */
export async function deleteSession(db: Sql, id: string): Promise<boolean> {
  return store.deleteSessionRow(db, idHash(id));
}

/** Ends every session ("sign out everywhere"). Returns how many were live. */
export async function deleteAllSessions(db: Sql): Promise<number> {
  return store.deleteAllSessionRows(db);
}

/** Live sessions made with the current password, newest first. */
export async function listSessions(db: Sql, fingerprint: string): Promise<SessionRow[]> {
  return (await store.selectLiveSessions(db, fingerprint)).map(toSession);
}

/** The Sessions page's name for the session with this cookie id. */
export function sessionRef(id: string): string {
  return idHash(id).toString("hex", 0, 6);
}

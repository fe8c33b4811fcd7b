import "server-only";
import { getIronSession, type SessionOptions } from "iron-session";
import { cookies, headers } from "next/headers";
import { redirect } from "next/navigation";
import { consoleConfig, isLoopbackHost } from "./config";

/** What the sealed, HttpOnly, SameSite=Strict cookie holds. The actor is what the audit log records. */
export interface SessionData {
  actor?: string;
  signedInAt?: number;
}

export interface Viewer {
  actor: string;
  readOnly: boolean;
  /** No password configured: loopback-only console without sign-in. */
  passwordless: boolean;
}

export type ViewerResult =
  | { status: "ok"; viewer: Viewer }
  | { status: "signed-out" }
  | { status: "forbidden"; message: string };

export const SESSION_COOKIE = "workhorse_console";
const SESSION_TTL_S = 12 * 60 * 60;
export const PASSWORDLESS_ACTOR = "local-operator";

function sessionOptions(secure: boolean): SessionOptions {
  return {
    password: consoleConfig().sessionSecret,
    cookieName: SESSION_COOKIE,
    ttl: SESSION_TTL_S,
    cookieOptions: { httpOnly: true, sameSite: "strict", secure, path: "/" },
  };
}

export async function getSession() {
  const h = await headers();
  const secure = h.get("x-forwarded-proto") === "https";
  return getIronSession<SessionData>(await cookies(), sessionOptions(secure));
}

export async function currentViewer(): Promise<ViewerResult> {
  const cfg = consoleConfig();
  const h = await headers();
  if (!cfg.password) {
    if (!isLoopbackHost(h.get("host"))) {
      return {
        status: "forbidden",
        message: "This console has no password set and serves loopback clients only. Set WORKHORSE_CONSOLE_PASSWORD.",
      };
    }
    return { status: "ok", viewer: { actor: PASSWORDLESS_ACTOR, readOnly: cfg.readOnly, passwordless: true } };
  }
  const session = await getSession();
  if (!session.actor) return { status: "signed-out" };
  return { status: "ok", viewer: { actor: session.actor, readOnly: cfg.readOnly, passwordless: false } };
}

/** For pages: the viewer, or a redirect to the sign-in page. */
export async function requireViewer(): Promise<Viewer> {
  const r = await currentViewer();
  if (r.status !== "ok") redirect("/sign-in");
  return r.viewer;
}

export type MutatorResult = { ok: true; actor: string } | { ok: false; message: string };

/**
 * For server actions that change something: a signed-in viewer, not read-only, and a same-origin
 * request (Origin must match Host; Next.js checks this too, this is the console's own guard).
 */
export async function requireMutator(): Promise<MutatorResult> {
  const r = await currentViewer();
  if (r.status === "signed-out") return { ok: false, message: "Your session has ended. Sign in again." };
  if (r.status === "forbidden") return { ok: false, message: r.message };
  if (r.viewer.readOnly) {
    return { ok: false, message: "The console is read-only (WORKHORSE_CONSOLE_READONLY=1): nothing was changed." };
  }
  const h = await headers();
  if (!sameOrigin(h.get("origin"), h.get("x-forwarded-host") ?? h.get("host"))) {
    return { ok: false, message: "Refused: changes are accepted from this console's own pages only." };
  }
  return { ok: true, actor: r.viewer.actor };
}

export function sameOrigin(origin: string | null, host: string | null): boolean {
  if (!origin || !host) return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

/** For route handlers: null when allowed, else the status to answer with. */
export async function apiAccess(): Promise<{ status: 401 | 403; error: string } | null> {
  const r = await currentViewer();
  if (r.status === "signed-out") return { status: 401, error: "Sign in first." };
  if (r.status === "forbidden") return { status: 403, error: r.message };
  return null;
}

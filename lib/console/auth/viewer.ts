import "server-only";
import { getIronSession, type SessionOptions } from "iron-session";
import { cookies, headers } from "next/headers";
import { redirect } from "next/navigation";
import { cache } from "react";
import { consoleConfig, isLoopbackHost } from "../databases/config";
import { currentDatabase, poolOf, primaryDatabase } from "../databases/pools";
import { CONFIRM_DATABASE_FIELD } from "../wire/database-paths";
import { CLIENT_ADDRESS_HEADER, HOST_HEADER, isSameOrigin, PATH_HEADER, PROTO_HEADER } from "./request-info";
import { signInHref } from "./return-to";
import { lookupSession, passwordFingerprint, SESSION_MAX_MS, sessionRef } from "./session-store";

/**
 * What the sealed, HttpOnly, SameSite=Strict cookie holds: only the id of a row in
 * `workhorse.console_session` (lib/console/auth/session-store.ts). Who is signed in comes from that row, so
 * deleting it ends the session even for a copied cookie.
 */
interface SessionData {
  sid?: string;
}

interface Viewer {
  actor: string;
  readOnly: boolean;
  /** No password configured: loopback-only console without sign-in. */
  passwordless: boolean;
  /** The Sessions page's name for this viewer's session; null without sign-in. */
  sessionRef: string | null;
}

type ViewerResult =
  | { status: "ok"; viewer: Viewer }
  | { status: "signed-out" }
  | { status: "forbidden"; message: string };

/** Over https the cookie is `__Host-` prefixed (Secure, Path=/, no Domain); over plain http it cannot be. */
const SESSION_COOKIE = "workhorse_console";
const SECURE_SESSION_COOKIE = "__Host-workhorse_console";
const PASSWORDLESS_ACTOR = "local-operator";

/** How the browser reached the console, as scripts/serve.ts determined it. */
export async function requestInfo(): Promise<{ https: boolean; host: string | null; clientAddress: string }> {
  const h = await headers();
  return {
    https: h.get(PROTO_HEADER) === "https",
    host: h.get(HOST_HEADER) ?? h.get("host"),
    clientAddress: h.get(CLIENT_ADDRESS_HEADER) ?? "unknown",
  };
}

function sessionOptions(secure: boolean): SessionOptions {
  return {
    password: consoleConfig().sessionSecret,
    cookieName: secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE,
    ttl: SESSION_MAX_MS / 1000,
    cookieOptions: { httpOnly: true, sameSite: "strict", secure, path: "/" },
  };
}

export async function getSession() {
  const { https } = await requestInfo();
  return getIronSession<SessionData>(await cookies(), sessionOptions(https));
}

/** The configured password's fingerprint (null without a password). */
export function currentFingerprint(): string | null {
  const cfg = consoleConfig();
  return cfg.password ? passwordFingerprint(cfg.password, cfg.sessionSecret) : null;
}

async function resolveViewer(): Promise<ViewerResult> {
  const cfg = consoleConfig();
  const h = await headers();
  if (!cfg.password) {
    if (!isLoopbackHost(h.get("host"))) {
      return {
        status: "forbidden",
        message: "This console has no password set and serves loopback clients only. Set WORKHORSE_CONSOLE_PASSWORD.",
      };
    }
    return {
      status: "ok",
      viewer: { actor: PASSWORDLESS_ACTOR, readOnly: cfg.readOnly, passwordless: true, sessionRef: null },
    };
  }
  const session = await getSession();
  if (!session.sid) return { status: "signed-out" };
  const row = await lookupSession(
    poolOf(primaryDatabase()),
    session.sid,
    passwordFingerprint(cfg.password, cfg.sessionSecret),
  );
  if (!row) return { status: "signed-out" };
  return {
    status: "ok",
    viewer: { actor: row.actor, readOnly: cfg.readOnly, passwordless: false, sessionRef: sessionRef(session.sid) },
  };
}

/** The signed-in viewer, looked up once per request. */
export const currentViewer: () => Promise<ViewerResult> = cache(resolveViewer);

/**
 * For pages and the console layout: the viewer, or a redirect (HTTP 307) to the sign-in page, which
 * returns to the page asked for after signing in.
 */
export async function requireViewer(): Promise<Viewer> {
  const r = await currentViewer();
  if (r.status === "ok") return r.viewer;
  if (r.status === "signed-out") redirect(signInHref((await headers()).get(PATH_HEADER)));
  redirect("/sign-in");
}

type MutatorResult = { ok: true; actor: string; viewer: Viewer } | { ok: false; message: string };

/** A request whose Origin is exactly this console (scheme, host, port). proxy.ts refuses the rest with 403 first. */
export async function sameOriginRequest(): Promise<boolean> {
  const h = await headers();
  return isSameOrigin(h.get("origin"), h.get(PROTO_HEADER), h.get(HOST_HEADER));
}

/**
 * For server actions: a signed-in viewer and a same-origin request; unless `allowReadOnly`, also
 * not read-only (signing out everywhere is allowed in read-only mode: it changes no job).
 */
export async function requireMutator(
  options: { allowReadOnly?: boolean; destructive?: FormData } = {},
): Promise<MutatorResult> {
  const r = await currentViewer();
  if (r.status === "signed-out") return { ok: false, message: "Your session has ended. Sign in again." };
  if (r.status === "forbidden") return { ok: false, message: r.message };
  if (r.viewer.readOnly && !options.allowReadOnly) {
    return { ok: false, message: "The console is read-only (WORKHORSE_CONSOLE_READONLY=1): nothing was changed." };
  }
  const database = await currentDatabase();
  if (database.readonly && !options.allowReadOnly) {
    return {
      ok: false,
      message: `The database "${database.name}" is read-only (configured readonly): nothing was changed.`,
    };
  }
  if (!(await sameOriginRequest())) {
    return { ok: false, message: "Refused: changes are accepted from this console's own pages only." };
  }
  if (database.production && options.destructive && options.destructive.get(CONFIRM_DATABASE_FIELD) !== database.name) {
    return {
      ok: false,
      message: `"${database.name}" is a production database: type its name to confirm. Nothing was changed.`,
    };
  }
  return { ok: true, actor: r.viewer.actor, viewer: r.viewer };
}

/** For route handlers: null when allowed, else the status to answer with. */
export async function apiAccess(): Promise<{ status: 401 | 403; error: string } | null> {
  const r = await currentViewer();
  if (r.status === "signed-out") return { status: 401, error: "Sign in first." };
  if (r.status === "forbidden") return { status: 403, error: r.message };
  return null;
}

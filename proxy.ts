/**
 * Runs before every page, server action and API route (Next.js "proxy", formerly middleware):
 *
 * - answers 400 to a path whose percent-encoding is malformed (`/jobs/%E0%A4%A`), before Next.js
 *   tries to decode it (it answered 500);
 * - refuses a state-changing request (anything but GET/HEAD/OPTIONS: server actions, POST routes)
 *   whose `Origin` is not exactly this console (scheme, host and port as scripts/serve.ts decided
 *   them from the socket, or from a trusted proxy) with 403 and a plain message;
 * - refuses such a request whose body is over MAX_BODY_BYTES with 413 and a plain message: by its
 *   Content-Length, or, sent without one (chunked), by counting it (Next.js hands this function a
 *   copy of the body up to 10 MB, so a longer one still counts past the limit);
 * - names the database a page is served from in DATABASE_HEADER: `/db/<name>/<page>` is `<page>` of
 *   the configured database `<name>` (an unknown name is a 404); a page asked for without a database
 *   is the first database's: rewritten there with one database configured (URLs as they always
 *   were), redirected there with several (an old link);
 * - sends a Content-Security-Policy with a fresh nonce per request (Next.js puts the nonce on its
 *   own scripts when it finds it in the request's CSP header), `frame-ancestors 'none'`, and HSTS
 *   when the console is reached over https.
 *
 * Headers that do not depend on the request (nosniff, Referrer-Policy, X-Frame-Options) are set in
 * next.config.js for every response, static files included.
 */
import { type NextRequest, NextResponse } from "next/server";
import { HOST_HEADER, isSameOrigin, PATH_HEADER, PROTO_HEADER } from "./lib/console/auth/request-info";
import { type DatabasesSetup, loadDatabases } from "./lib/console/databases/databases";
import {
  DATABASE_HEADER,
  DATABASE_IN_URL_HEADER,
  databaseHref,
  isGlobalPath,
  splitDatabasePath,
} from "./lib/console/wire/database-paths";

let databases: DatabasesSetup | null = null;

/** The configured databases (scripts/start.ts refused a bad configuration before the server started). */
function databaseList(): DatabasesSetup {
  databases ??= loadDatabases();
  return databases;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The largest request body accepted: next.config.js's server-action bodySizeLimit (4 MiB), the same number. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

function plain(status: number, message: string, extra: Record<string, string> = {}): NextResponse {
  return new NextResponse(message, {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
      ...extra,
    },
  });
}

/** Whether every %XX escape in the raw path is well formed and decodes to UTF-8. */
export function wellFormedPath(rawPath: string): boolean {
  try {
    decodeURIComponent(rawPath);
    return true;
  } catch {
    return false;
  }
}

/** Whether the body is over `limit` bytes: by Content-Length, else by reading at most limit + 1 bytes of it. */
async function bodyOver(request: NextRequest, limit: number): Promise<boolean> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    const n = Number(declared);
    return !Number.isSafeInteger(n) || n > limit;
  }
  if (!request.body) return false;
  const reader = request.body.getReader();
  let seen = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return false;
    seen += value.byteLength;
    if (seen > limit) {
      await reader.cancel().catch(() => {});
      return true;
    }
  }
}

function contentSecurityPolicy(nonce: string, https: boolean, dev: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ""}`,
    // Development mode injects <style> elements without a nonce (hot reload, error overlay).
    dev ? "style-src 'self' 'unsafe-inline'" : `style-src 'self' 'nonce-${nonce}'`,
    // React writes style="" attributes (e.g. the route announcer); they cannot run script.
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    `connect-src 'self'${dev ? " ws: wss:" : ""}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    ...(https ? ["upgrade-insecure-requests"] : []),
  ].join("; ");
}

export async function proxy(request: NextRequest): Promise<NextResponse> {
  const proto = request.headers.get(PROTO_HEADER);
  const host = request.headers.get(HOST_HEADER);
  const https = proto === "https";
  // The path as the client sent it (the URL parser keeps %XX escapes as they came).
  if (!wellFormedPath(new URL(request.url).pathname)) {
    return plain(
      400,
      "400 Bad Request: the address holds malformed percent-encoding (a % not followed by two hex digits, or bytes that are not UTF-8).\n",
    );
  }
  if (!SAFE_METHODS.has(request.method)) {
    if (!isSameOrigin(request.headers.get("origin"), proto, host)) {
      return plain(
        403,
        "403 Forbidden: this console accepts changes only from its own pages (the request's Origin is not this console's scheme, host and port). Nothing was changed.\n",
      );
    }
    if (await bodyOver(request, MAX_BODY_BYTES)) {
      return plain(
        413,
        `413 Content Too Large: the request body is too large; this console accepts at most ${MAX_BODY_BYTES / 1024 / 1024} MB per request (an enqueue payload at most 1 MiB). Nothing was changed.\n`,
        { connection: "close" },
      );
    }
  }
  const pathname = request.nextUrl.pathname;
  const underDatabase = splitDatabasePath(pathname);
  const { databases: configured } = databaseList();
  if (underDatabase && !configured.some((d) => d.name === underDatabase.database)) {
    return plain(
      404,
      `404 Not Found: this console has no database named ${JSON.stringify(underDatabase.database)}; its databases are ${configured.map((d) => d.name).join(", ")}.\n`,
    );
  }
  if (
    !underDatabase &&
    configured.length > 1 &&
    SAFE_METHODS.has(request.method) &&
    !isGlobalPath(pathname) &&
    request.method !== "OPTIONS"
  ) {
    const to = new URL(`${databaseHref(configured[0]?.name ?? null, pathname)}${request.nextUrl.search}`, request.url);
    return NextResponse.redirect(to, 307);
  }
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString("base64");
  const csp = contentSecurityPolicy(nonce, https, process.env.NODE_ENV === "development");
  const requestHeaders = new Headers(request.headers);
  // Only this function names the database: a client's own headers are dropped.
  requestHeaders.delete(DATABASE_HEADER);
  requestHeaders.delete(DATABASE_IN_URL_HEADER);
  requestHeaders.set("x-nonce", nonce);
  requestHeaders.set("content-security-policy", csp);
  // What was asked for, so a signed-out visitor is sent to sign-in and back here (a layout cannot see it).
  requestHeaders.set(PATH_HEADER, `${request.nextUrl.pathname}${request.nextUrl.search}`);
  let response: NextResponse;
  if (underDatabase) {
    requestHeaders.set(DATABASE_HEADER, underDatabase.database);
    requestHeaders.set(DATABASE_IN_URL_HEADER, "1");
    response = NextResponse.next({ request: { headers: requestHeaders } });
  } else if (isGlobalPath(pathname) || !configured[0]) {
    response = NextResponse.next({ request: { headers: requestHeaders } });
  } else {
    // A page without a database in its URL: the first database's route (with one database configured,
    // every URL stays as it always was). From request.url: nextUrl names 127.0.0.1 "localhost", and a
    // rewrite to another origin would be proxied.
    requestHeaders.set(DATABASE_HEADER, configured[0].name);
    const to = new URL(`${databaseHref(configured[0].name, pathname)}${request.nextUrl.search}`, request.url);
    response = NextResponse.rewrite(to, { request: { headers: requestHeaders } });
  }
  response.headers.set("content-security-policy", csp);
  if (https) response.headers.set("strict-transport-security", "max-age=31536000");
  return response;
}

export const config = {
  // Everything but the build's static files (which get the static headers from next.config.js).
  matcher: ["/((?!_next/static|_next/image|favicon.ico|icon.svg).*)"],
};

/**
 * Runs before every page, server action and API route (Next.js "proxy", formerly middleware):
 *
 * - refuses a state-changing request (anything but GET/HEAD/OPTIONS: server actions, POST routes)
 *   whose `Origin` is not exactly this console (scheme, host and port as scripts/serve.ts decided
 *   them from the socket, or from a trusted proxy) with 403 and a plain message;
 * - sends a Content-Security-Policy with a fresh nonce per request (Next.js puts the nonce on its
 *   own scripts when it finds it in the request's CSP header), `frame-ancestors 'none'`, and HSTS
 *   when the console is reached over https.
 *
 * Headers that do not depend on the request (nosniff, Referrer-Policy, X-Frame-Options) are set in
 * next.config.js for every response, static files included.
 */
import { type NextRequest, NextResponse } from "next/server";
import { HOST_HEADER, isSameOrigin, PATH_HEADER, PROTO_HEADER } from "./lib/console/request-info";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

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

export function proxy(request: NextRequest): NextResponse {
  const proto = request.headers.get(PROTO_HEADER);
  const host = request.headers.get(HOST_HEADER);
  const https = proto === "https";
  if (!SAFE_METHODS.has(request.method) && !isSameOrigin(request.headers.get("origin"), proto, host)) {
    return new NextResponse(
      "403 Forbidden: this console accepts changes only from its own pages (the request's Origin is not this console's scheme, host and port). Nothing was changed.\n",
      {
        status: 403,
        headers: {
          "content-type": "text/plain; charset=utf-8",
          "cache-control": "no-store",
          "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
        },
      },
    );
  }
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString("base64");
  const csp = contentSecurityPolicy(nonce, https, process.env.NODE_ENV === "development");
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set("x-nonce", nonce);
  requestHeaders.set("content-security-policy", csp);
  // What was asked for, so a signed-out visitor is sent to sign-in and back here (a layout cannot see it).
  requestHeaders.set(PATH_HEADER, `${request.nextUrl.pathname}${request.nextUrl.search}`);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set("content-security-policy", csp);
  if (https) response.headers.set("strict-transport-security", "max-age=31536000");
  return response;
}

export const config = {
  // Everything but the build's static files (which get the static headers from next.config.js).
  matcher: ["/((?!_next/static|_next/image|favicon.ico|icon.svg).*)"],
};

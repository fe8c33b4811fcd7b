/**
 * Who is asking and through which origin, decided once per request by the console's HTTP server
 * (scripts/serve.ts) from the socket, and handed to the app in headers of our own that a client
 * can never set (the server deletes them from every incoming request first).
 *
 * `X-Forwarded-For`, `-Host` and `-Proto` are believed only when the operator names the proxy in
 * `WORKHORSE_TRUSTED_PROXY` (its socket addresses, comma-separated) and the request comes from one
 * of those addresses. Otherwise they are removed, so neither this app nor Next.js sees them.
 *
 * No next/* imports: the server, the proxy (proxy.ts) and the tests use this module.
 */
import { pagePath } from "../wire/database-paths";

/** Client address as the server determined it (the socket's, or the trusted proxy's report). */
export const CLIENT_ADDRESS_HEADER = "x-workhorse-client-address";
/** `https` or `http`: how the browser reached the console. */
export const PROTO_HEADER = "x-workhorse-proto";
/** Host (and port) the browser addressed. */
export const HOST_HEADER = "x-workhorse-host";
/** Set by proxy.ts on every request (overwriting anything the client sent): the path and query asked for. */
export const PATH_HEADER = "x-workhorse-path";

/**
 * The one segment after `/<section>/` in a PATH_HEADER value (`/jobs/<id>`, `/queues/<name>`),
 * percent-decoded; false when it does not decode; null for any other path.
 */
export function pathParam(path: string, section: string): string | false | null {
  const m = new RegExp(`^/${section}/([^/?#]+)/?(?:[?#].*)?$`).exec(pagePath(path));
  if (!m) return null;
  try {
    return decodeURIComponent(m[1] as string);
  } catch {
    return false;
  }
}

const INTERNAL = [CLIENT_ADDRESS_HEADER, PROTO_HEADER, HOST_HEADER];
const FORWARDED = [
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-forwarded-port",
  "x-real-ip",
  "forwarded",
];

/** `::ffff:127.0.0.1` -> `127.0.0.1`; lower case; no zone. */
function normalizeAddress(address: string | undefined | null): string {
  if (!address) return "unknown";
  let a = address.trim().toLowerCase();
  if (a.startsWith("[") && a.includes("]")) a = a.slice(1, a.indexOf("]"));
  if (a.startsWith("::ffff:") && a.includes(".")) a = a.slice(7);
  const zone = a.indexOf("%");
  return zone >= 0 ? a.slice(0, zone) : a;
}

/** `WORKHORSE_TRUSTED_PROXY`: a comma-separated list of proxy addresses; empty when unset. */
export function trustedProxies(env: Record<string, string | undefined> = process.env): Set<string> {
  const raw = env.WORKHORSE_TRUSTED_PROXY ?? "";
  return new Set(
    raw
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map(normalizeAddress),
  );
}

type HeaderValue = string | string[] | undefined;

function first(v: HeaderValue): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  const part = s?.split(",")[0]?.trim();
  return part ? part : undefined;
}

/**
 * Rewrites a Node request's headers in place: removes our internal headers and, unless the socket
 * peer is a trusted proxy, every forwarded header; then sets the internal headers, and sets the
 * standard `x-forwarded-*` to the same values so that Next.js's own checks see what we see.
 */
export function sanitizeRequestHeaders(
  headers: Record<string, HeaderValue>,
  socketAddress: string | undefined,
  encrypted: boolean,
  trusted: Set<string>,
): { clientAddress: string; proto: "http" | "https"; host: string } {
  for (const h of INTERNAL) delete headers[h];
  const peer = normalizeAddress(socketAddress);
  let clientAddress = peer;
  let proto: "http" | "https" = encrypted ? "https" : "http";
  let host = first(headers.host) ?? "";
  if (trusted.has(peer)) {
    // The proxy appends the address it saw; walk from the right past any trusted hops.
    const chain = (
      Array.isArray(headers["x-forwarded-for"])
        ? headers["x-forwarded-for"].join(",")
        : (headers["x-forwarded-for"] ?? "")
    )
      .split(",")
      .map((s) => normalizeAddress(s))
      .filter((s) => s !== "unknown");
    for (let i = chain.length - 1; i >= 0; i--) {
      clientAddress = chain[i] as string;
      if (!trusted.has(clientAddress)) break;
    }
    const fwdProto = first(headers["x-forwarded-proto"])?.toLowerCase();
    if (fwdProto === "https" || fwdProto === "http") proto = fwdProto;
    host = first(headers["x-forwarded-host"]) ?? host;
  }
  for (const h of FORWARDED) delete headers[h];
  headers[CLIENT_ADDRESS_HEADER] = clientAddress;
  headers[PROTO_HEADER] = proto;
  headers[HOST_HEADER] = host;
  headers["x-forwarded-for"] = clientAddress;
  headers["x-forwarded-proto"] = proto;
  headers["x-forwarded-host"] = host;
  return { clientAddress, proto, host };
}

/** scheme + host + port of a URL, with default ports filled in; null when it is not http(s). */
function originTuple(url: string): string | null {
  try {
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "https:") return null;
    const port = u.port || (u.protocol === "https:" ? "443" : "80");
    return `${u.protocol}//${u.hostname.toLowerCase()}:${port}`;
  } catch {
    return null;
  }
}

/**
 * True when the request's `Origin` names exactly this console: same scheme, host and port as the
 * server determined them. A missing or opaque (`null`) Origin is not same-origin.
 */
export function isSameOrigin(origin: string | null, proto: string | null, host: string | null): boolean {
  if (!origin || origin === "null" || !proto || !host) return false;
  const mine = originTuple(`${proto}://${host}`);
  const theirs = originTuple(origin);
  return mine !== null && theirs === mine;
}

/**
 * Console URLs under a database: `/db/<name>/<page>` is `<page>` of the database `<name>` (the app's
 * routes live under app/db/[database]/). proxy.ts names the database in DATABASE_HEADER, and serves
 * a URL without the prefix (one database configured, or an old link) from the first database's
 * route; links and redirects keep the prefix when the page's URL has it (`databaseHref`). Pure:
 * used by proxy.ts, server code and the browser alike.
 */

/** The request header proxy.ts sets to the database a request is served from (never the client's). */
export const DATABASE_HEADER = "x-workhorse-database";
/** Set by proxy.ts to "1" when the browser's URL names the database (`/db/<name>/…`), so links keep it. */
export const DATABASE_IN_URL_HEADER = "x-workhorse-database-in-url";

const PREFIX = "/db/";

/** The form field a destructive action on a production database carries its name typed out in. */
export const CONFIRM_DATABASE_FIELD = "confirmDatabase";

/** Pages that are not under one database: sign-in, `/metrics` (every database), the fleet page. */
const GLOBAL_PATHS = ["/sign-in", "/metrics", "/fleet", "/_next", "/favicon.ico", "/icon.svg"];

/** Whether `pathname` is one of the pages that are not under a database. */
export function isGlobalPath(pathname: string): boolean {
  return GLOBAL_PATHS.some((p) => pathname === p || pathname.startsWith(`${p}/`));
}

/** `/db/Staging/jobs/x` -> `{ database: "Staging", rest: "/jobs/x" }`; null for a path without the prefix. */
export function splitDatabasePath(pathname: string): { database: string; rest: string } | null {
  if (!pathname.startsWith(PREFIX)) return null;
  const after = pathname.slice(PREFIX.length);
  const slash = after.indexOf("/");
  const database = slash < 0 ? after : after.slice(0, slash);
  if (database === "") return null;
  return { database, rest: slash < 0 ? "/" : after.slice(slash) || "/" };
}

/** The path of `href` (an absolute path on this console, with its query) under `database`. */
export function databaseHref(database: string | null, href: string): string {
  if (database === null || !href.startsWith("/") || href.startsWith("//")) return href;
  const pathname = href.split(/[?#]/, 1)[0] ?? "";
  if (isGlobalPath(pathname) || splitDatabasePath(pathname)) return href;
  return `${PREFIX}${database}${href === "/" ? "" : href.startsWith("/?") ? href.slice(1) : href}`;
}

/** The page a path shows, without its database prefix (`/db/EU/jobs` -> `/jobs`). */
export function pagePath(pathname: string): string {
  return splitDatabasePath(pathname)?.rest ?? pathname;
}

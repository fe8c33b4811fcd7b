"use client";
import NextLink from "next/link";
import { usePathname, useSearchParams } from "next/navigation";
import { databaseHref, pagePath } from "@/lib/console/wire/database-paths";
import { cx } from "./ui";

export interface DatabaseChoice {
  name: string;
  production: boolean;
  readonly: boolean;
}

/** Query parameters that point into one database's rows (cursors): dropped when switching. */
const PER_DATABASE_PARAMS = ["after", "before", "cursor"];

/**
 * The same page in another database: the path and filters are kept; a job's own page becomes the
 * job list (a job id belongs to one database), and cursors are dropped.
 */
export function switchHref(database: string, pathname: string, search: URLSearchParams): string {
  let page = pagePath(pathname);
  if (/^\/jobs\/[^/]+/.test(page)) page = "/jobs";
  if (page === "/fleet") page = "/";
  const query = new URLSearchParams(search);
  for (const p of PER_DATABASE_PARAMS) query.delete(p);
  const q = query.toString();
  return databaseHref(database, `${page}${q ? `?${q}` : ""}`);
}

/**
 * The header's database: which one this page shows (production in the warning colour, read-only
 * marked), and links to the same page in each other one and to the fleet page.
 */
export function DatabaseSwitcher({ current, databases }: { current: string | null; databases: DatabaseChoice[] }) {
  const pathname = usePathname();
  const search = useSearchParams();
  const here = databases.find((d) => d.name === current);
  return (
    <div className="flex flex-wrap items-center gap-2 text-sm">
      <span className="text-chrome-muted">Database</span>
      <strong
        className={cx(
          "rounded px-2 py-0.5 font-semibold",
          here?.production ? "bg-red-700 text-white" : "bg-chrome-fg text-chrome",
        )}
        data-testid="current-database"
      >
        {here ? here.name : "All databases"}
        {here?.production ? " · production" : ""}
        {here?.readonly ? " · read-only" : ""}
      </strong>
      {databases.length > 1 ? (
        <details className="relative">
          <summary className="cursor-pointer rounded border border-chrome-muted px-2 py-0.5 text-chrome-fg hover:bg-chrome-hover">
            Switch database
          </summary>
          <ul
            aria-label="Databases"
            className="absolute left-0 z-20 mt-1 min-w-48 rounded border border-slate-300 bg-white p-1 text-slate-900 shadow-lg"
          >
            <li>
              <NextLink
                className="block rounded px-2 py-1 hover:bg-slate-100"
                href="/fleet"
                aria-current={current === null ? "page" : undefined}
              >
                All databases (fleet)
              </NextLink>
            </li>
            {databases.map((d) => (
              <li key={d.name}>
                <NextLink
                  className="block rounded px-2 py-1 hover:bg-slate-100"
                  href={switchHref(d.name, pathname, search)}
                  aria-current={d.name === current ? "page" : undefined}
                >
                  {d.name}
                  {d.production ? " (production)" : ""}
                  {d.readonly ? " (read-only)" : ""}
                </NextLink>
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </div>
  );
}

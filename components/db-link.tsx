"use client";
import NextLink from "next/link";
import { type ComponentProps, createContext, type ReactNode, useContext } from "react";
import { databaseHref } from "@/lib/console/wire/database-paths";

/** The database the page is under (its `/db/<name>/` prefix), or null when its URL names none. */
const Database = createContext<string | null>(null);
/** The name of the page's database when it is configured `production`, else null. */
const Production = createContext<string | null>(null);

export function DatabaseProvider({
  database,
  production,
  children,
}: {
  database: string | null;
  production: string | null;
  children: ReactNode;
}) {
  return (
    <Database.Provider value={database}>
      <Production.Provider value={production}>{children}</Production.Provider>
    </Database.Provider>
  );
}

/** The page's database name when it is a production one (destructive actions ask for it typed out). */
export function useProductionDatabase(): string | null {
  return useContext(Production);
}

/** Maps a console path (`/jobs/…`, `/api/…`) to the same path under the page's database. */
export function useDatabaseHref(): (href: string) => string {
  const database = useContext(Database);
  return (href) => databaseHref(database, href);
}

/** next/link, staying in the page's database: `href="/jobs"` on a `/db/EU/…` page leads to `/db/EU/jobs`. */
export function Link({ href, ...props }: ComponentProps<typeof NextLink>) {
  const toDatabase = useDatabaseHref();
  return <NextLink href={typeof href === "string" ? toDatabase(href) : href} {...props} />;
}

/** A GET form (filters, open by id) that submits to the page's database. */
export function DatabaseForm({ action, ...props }: ComponentProps<"form"> & { action: string }) {
  const toDatabase = useDatabaseHref();
  return <form action={toDatabase(action)} {...props} />;
}

/** A plain `<a>` (a download) under the page's database. */
export function DatabaseAnchor({ href, ...props }: ComponentProps<"a"> & { href: string }) {
  const toDatabase = useDatabaseHref();
  return <a href={toDatabase(href)} {...props} />;
}

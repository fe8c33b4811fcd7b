import Link from "next/link";
import type { Page } from "@/lib/console/wire-types";
import { LiveStatus } from "./live-status";
import { linkClass } from "./ui";

/** What every live table is given: its first page (rendered on the server), the filters as "?a=b", whether any is set. */
export interface LiveTableProps<T> {
  initial: Page<T>;
  query: string;
  filtered: boolean;
}

/** Under every live table: when it was last refreshed (or why not), and the keyset page links. */
export function TableFooter({
  error,
  updatedAt,
  links,
}: {
  error: Error | null;
  updatedAt: number;
  /** Shown in order; a link without an href (no such page) is left out. */
  links: { href: string | null | undefined; label: string }[];
}) {
  return (
    <div className="mt-3 flex items-center justify-between gap-2">
      <LiveStatus error={error} updatedAt={updatedAt} />
      <nav aria-label="Pagination" className="flex gap-3">
        {links.map((l) =>
          l.href ? (
            <Link key={l.label} className={linkClass} href={l.href}>
              {l.label}
            </Link>
          ) : null,
        )}
      </nav>
    </div>
  );
}

/**
 * The URL of another keyset page of a list: the current filters (`query`, as "?a=b"), with the
 * cursor replaced by `cursor=id`, or with no cursor (the first page) when `id` is null.
 */
export function pageHref(path: string, query: string, cursor: "after" | "before", id: string | null): string {
  const p = new URLSearchParams(query);
  p.delete("after");
  p.delete("before");
  if (id) p.set(cursor, id);
  const s = p.toString();
  return s ? `${path}?${s}` : path;
}

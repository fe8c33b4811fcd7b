import type { ReactNode } from "react";
import { Link } from "@/components/db-link";
import type { Page } from "@/lib/console/wire/types";
import { LiveStatus } from "./live-status";
import { linkClass, Table } from "./ui";

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

/**
 * The page links of a list paged newest first by an `after` cursor: "← Newest" when on a later
 * page, "Older →" when `next` (the data's cursor) says there is one.
 */
export function newestOlderLinks(path: string, query: string, next: string | null) {
  const page = (after: string | null) => pageHref(path, query, "after", after);
  return [
    { href: new URLSearchParams(query).get("after") ? page(null) : null, label: "← Newest" },
    { href: next ? page(next) : null, label: "Older →" },
  ];
}

/**
 * A live table: `before` (a new-rows bar), then `empty` when there are no rows or the table of
 * `rows` (one `<tr>` each from `row`), then the footer with the refresh status and page links.
 */
export function LiveTable<T>({
  before,
  rows,
  empty,
  caption,
  head,
  row,
  error,
  updatedAt,
  links,
}: {
  before?: ReactNode;
  rows: T[];
  empty: ReactNode;
  caption: string;
  head: string[];
  row: (r: T) => ReactNode;
  error: Error | null;
  updatedAt: number;
  links: { href: string | null | undefined; label: string }[];
}) {
  return (
    <div>
      {before}
      {rows.length === 0 ? (
        empty
      ) : (
        <Table caption={caption} head={head}>
          {rows.map(row)}
        </Table>
      )}
      <TableFooter error={error} updatedAt={updatedAt} links={links} />
    </div>
  );
}

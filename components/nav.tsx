"use client";
import { usePathname } from "next/navigation";
import { useEffect, useState } from "react";
import { Link } from "@/components/db-link";
import { pagePath } from "@/lib/console/wire/database-paths";
import { cx } from "./ui";

export const NAV = [
  { href: "/fleet", label: "Fleet" },
  { href: "/", label: "Overview" },
  { href: "/jobs", label: "Jobs" },
  { href: "/dead-letters", label: "Dead letters" },
  { href: "/find", label: "Find by key" },
  { href: "/search", label: "Search payloads" },
  { href: "/bindings", label: "Bindings" },
  { href: "/conflicts", label: "Conflicts & replays" },
  { href: "/enqueue", label: "Enqueue test job" },
  { href: "/queues", label: "Queues" },
  { href: "/workers", label: "Workers" },
  { href: "/run-times", label: "Run times" },
  { href: "/audit", label: "Audit log" },
  { href: "/maintenance", label: "Maintenance" },
  { href: "/sessions", label: "Sessions" },
] as const;

/** Links that lead only to mutations, hidden in read-only mode. */
const MUTATION_ONLY = new Set<string>(["/enqueue"]);

/** The console's navigation: a row of links from 768 px up, a Menu button below that. */
export function Nav({ readOnly, signIn, fleet }: { readOnly: boolean; signIn: boolean; fleet: boolean }) {
  const path = pagePath(usePathname());
  const [open, setOpen] = useState(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: close the menu whenever the page changes
  useEffect(() => setOpen(false), [path]);
  const items = NAV.filter(
    (i) =>
      !(readOnly && MUTATION_ONLY.has(i.href)) && (signIn || i.href !== "/sessions") && (fleet || i.href !== "/fleet"),
  );
  const current = items.find((i) => (i.href === "/" ? path === "/" : path === i.href || path.startsWith(`${i.href}/`)));
  return (
    <nav aria-label="Console" className="pb-1">
      <button
        type="button"
        className="mb-1 inline-flex items-center gap-2 rounded border border-chrome-muted px-2.5 py-1.5 text-sm font-medium text-chrome-fg md:hidden"
        aria-expanded={open}
        aria-controls="console-nav"
        onClick={() => setOpen((o) => !o)}
      >
        <span aria-hidden="true">{open ? "✕" : "☰"}</span> Menu
        {current ? <span className="text-chrome-muted">· {current.label}</span> : null}
      </button>
      <ul id="console-nav" className={cx("gap-1 text-sm md:flex md:flex-wrap", open ? "grid grid-cols-2" : "hidden")}>
        {items.map((item) => {
          const active = item === current;
          return (
            <li key={item.href}>
              <Link
                href={item.href}
                aria-current={active ? "page" : undefined}
                className={cx(
                  "block rounded px-2.5 py-1.5 font-medium whitespace-nowrap",
                  active ? "bg-chrome-fg text-chrome" : "text-chrome-fg hover:bg-chrome-hover",
                )}
              >
                {item.label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

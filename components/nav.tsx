"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";
import { cx } from "./ui";

export const NAV = [
  { href: "/", label: "Overview" },
  { href: "/jobs", label: "Jobs" },
  { href: "/dead-letters", label: "Dead letters" },
  { href: "/find", label: "Find by key" },
  { href: "/bindings", label: "Bindings" },
  { href: "/conflicts", label: "Conflicts & replays" },
  { href: "/enqueue", label: "Enqueue test job" },
  { href: "/queues", label: "Queues" },
  { href: "/audit", label: "Audit log" },
  { href: "/maintenance", label: "Maintenance" },
  { href: "/sessions", label: "Sessions" },
] as const;

/** Links that lead only to mutations, hidden in read-only mode. */
const MUTATION_ONLY = new Set<string>(["/enqueue"]);

export function Nav({ readOnly, signIn }: { readOnly: boolean; signIn: boolean }) {
  const path = usePathname();
  const items = NAV.filter((i) => !(readOnly && MUTATION_ONLY.has(i.href)) && (signIn || i.href !== "/sessions"));
  return (
    <nav aria-label="Console" className="-mx-1 overflow-x-auto">
      <ul className="flex gap-1 px-1 pb-1 text-sm whitespace-nowrap">
        {items.map((item) => {
          const active = item.href === "/" ? path === "/" : path === item.href || path.startsWith(`${item.href}/`);
          return (
            <li key={item.href}>
              <Link
                href={item.href}
                aria-current={active ? "page" : undefined}
                className={cx(
                  "block rounded px-2.5 py-1.5 font-medium",
                  active ? "bg-white text-slate-900" : "text-slate-100 hover:bg-slate-700",
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

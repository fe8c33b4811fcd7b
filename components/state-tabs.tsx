import { Link } from "@/components/db-link";
import type { TabCount } from "@/lib/console/wire/types";
import { STATE_TABS, type StateTab, type StateTabCounts } from "@/lib/console/wire/types";
import { cx } from "./ui";

function compact(c: TabCount): string {
  if (!c.estimated) return c.value.toLocaleString("en-US");
  const v = c.value;
  const s = v >= 1_000_000 ? `${(v / 1_000_000).toFixed(1)}M` : v >= 1_000 ? `${Math.round(v / 1_000)}k` : String(v);
  return `≈${s}`;
}

const LABEL: Record<StateTab | "all", string> = {
  all: "All",
  scheduled: "Scheduled",
  ready: "Ready",
  active: "Active",
  succeeded: "Succeeded",
  failed: "Failed",
  canceled: "Canceled",
  purged: "Purged",
  retrying: "Retrying",
};

/** Links to the same filters in each state, with counts ("≈" marks the planner's estimate). */
export function StateTabs({
  counts,
  current,
  hrefFor,
}: {
  counts: StateTabCounts["counts"];
  current: StateTab | undefined;
  hrefFor: (state: StateTab | undefined) => string;
}) {
  const tabs: (StateTab | "all")[] = ["all", ...STATE_TABS];
  return (
    <nav aria-label="Job states" className="mb-3">
      <ul className="flex flex-wrap gap-1 border-b border-slate-300 text-sm">
        {tabs.map((t) => {
          const active = t === "all" ? current === undefined : current === t;
          const c = counts[t];
          return (
            <li key={t}>
              <Link
                href={hrefFor(t === "all" ? undefined : t)}
                aria-current={active ? "page" : undefined}
                data-tab={t}
                title={c.estimated ? "Estimated by the query planner (more than 50,000 jobs match)" : undefined}
                className={cx(
                  "-mb-px inline-flex items-center gap-1.5 rounded-t border px-2.5 py-1.5 font-medium",
                  active
                    ? "border-slate-300 border-b-white bg-white text-slate-900"
                    : "border-transparent text-blue-700 hover:bg-slate-200",
                )}
              >
                {LABEL[t]}
                <span className="rounded bg-slate-200 px-1.5 text-xs tabular-nums text-slate-800" data-count={t}>
                  {compact(c)}
                </span>
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

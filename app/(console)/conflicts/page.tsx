import type { Metadata } from "next";
import Link from "next/link";
import { ObservationsTable } from "@/components/observations-table";
import { buttonClass, inputClass, linkClass, PageHeader } from "@/components/ui";
import { consolePool } from "@/lib/console/db";
import { parseObservationFilters, TIME_WINDOWS, toQuery } from "@/lib/console/filters";
import { listObservations } from "@/lib/console/observations";
import { requireViewer } from "@/lib/console/session";
import { OBSERVATION_OUTCOMES } from "@/lib/console/types";

export const metadata: Metadata = { title: "Conflicts & replays" };

type Search = Promise<Record<string, string | string[] | undefined>>;

const WINDOW_LABELS: Record<string, string> = {
  "15m": "Last 15 minutes",
  "1h": "Last hour",
  "24h": "Last 24 hours",
  "7d": "Last 7 days",
};

export default async function ConflictsPage({ searchParams }: { searchParams: Search }) {
  await requireViewer();
  const f = parseObservationFilters(await searchParams);
  const page = await listObservations(await consolePool(), f);
  const query = toQuery({ outcome: f.outcome, scope: f.scope, queue: f.queue, since: f.since, after: f.after });
  const filtered = !!(f.outcome || f.scope || f.queue || f.since);
  return (
    <>
      <PageHeader
        title="Conflicts & replays"
        description="Every repeated request the queue answered with an existing job (replayed), and every key reused for different work (conflict), with the fields and payload paths that differed. Newest first."
      />
      <form
        method="get"
        action="/conflicts"
        className="mb-4 grid grid-cols-2 gap-2 sm:grid-cols-5 sm:items-end"
        aria-label="Filter observations"
      >
        <div>
          <label htmlFor="o-outcome" className="mb-1 block text-sm font-medium text-slate-900">
            Outcome
          </label>
          <select id="o-outcome" name="outcome" defaultValue={f.outcome ?? ""} className={inputClass}>
            <option value="">Any</option>
            {OBSERVATION_OUTCOMES.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="o-scope" className="mb-1 block text-sm font-medium text-slate-900">
            Scope
          </label>
          <input id="o-scope" name="scope" defaultValue={f.scope} className={inputClass} />
        </div>
        <div>
          <label htmlFor="o-queue" className="mb-1 block text-sm font-medium text-slate-900">
            Queue
          </label>
          <input id="o-queue" name="queue" defaultValue={f.queue} className={inputClass} />
        </div>
        <div>
          <label htmlFor="o-since" className="mb-1 block text-sm font-medium text-slate-900">
            Time
          </label>
          <select id="o-since" name="since" defaultValue={f.since ?? ""} className={inputClass}>
            <option value="">Any time</option>
            {Object.keys(TIME_WINDOWS).map((w) => (
              <option key={w} value={w}>
                {WINDOW_LABELS[w]}
              </option>
            ))}
          </select>
        </div>
        <div className="flex gap-2">
          <button type="submit" className={buttonClass}>
            Filter
          </button>
          {filtered ? (
            <Link className={`${linkClass} self-center text-sm`} href="/conflicts">
              Clear
            </Link>
          ) : null}
        </div>
      </form>
      <ObservationsTable initial={page} query={query} filtered={filtered} />
    </>
  );
}

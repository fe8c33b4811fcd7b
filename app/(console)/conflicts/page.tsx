import type { Metadata } from "next";
import { FilterForm, FilterSelect, FilterText } from "@/components/filter-form";
import { ObservationsTable } from "@/components/observations-table";
import { PageHeader } from "@/components/ui";
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
      <FilterForm action="/conflicts" label="Filter observations" columns={5} filtered={filtered}>
        <FilterSelect id="o-outcome" name="outcome" label="Outcome" value={f.outcome} options={OBSERVATION_OUTCOMES} />
        <FilterText id="o-scope" name="scope" label="Scope" value={f.scope} />
        <FilterText id="o-queue" name="queue" label="Queue" value={f.queue} />
        <FilterSelect
          id="o-since"
          name="since"
          label="Time"
          value={f.since}
          anyLabel="Any time"
          options={Object.keys(TIME_WINDOWS).map((w) => [w, WINDOW_LABELS[w] ?? w] as const)}
        />
      </FilterForm>
      <ObservationsTable initial={page} query={query} filtered={filtered} />
    </>
  );
}

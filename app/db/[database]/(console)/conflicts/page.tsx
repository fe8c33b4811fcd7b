import type { Metadata } from "next";
import { FilterForm, FilterSelect, FilterText } from "@/components/filter-form";
import { ObservationsTable } from "@/components/observations-table";
import { Badge, Notice, PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { parseObservationFilters, TIME_WINDOWS, toQuery } from "@/lib/console/reads/filters";
import { listObservations } from "@/lib/console/reads/observation-reads";
import { explainOutcome, REASON_LABELS } from "@/lib/console/wire/outcome-text";
import { LISTED_OUTCOMES } from "@/lib/console/wire/types";

export const metadata: Metadata = { title: "Conflicts & replays" };

type Search = Promise<Record<string, string | string[] | undefined>>;

const WINDOW_LABELS: Record<string, string> = {
  "15m": "Last 15 minutes",
  "1h": "Last hour",
  "24h": "Last 24 hours",
  "7d": "Last 7 days",
};

/** What each outcome means, next to the log that shows them. */
const OUTCOME_HELP: [string, string][] = [
  ["replayed", "the same request again: answered with the existing job, nothing written"],
  ["conflict", "the key was reused for different work: refused, naming the fields that differ"],
  ["coalesced", "throttle: a repeat inside the window, answered with the window's job; nothing written"],
  ["non_replaceable", "debounce: the job could not be replaced (the reason says why); nothing written"],
  [
    "replaced",
    "debounce: a repeat while the job was pending rewrote it in place (same job); choose this outcome to list them",
  ],
];

/** Why a debounce request was non-replaceable, and what to do (lib/console/wire/outcome-text.ts). */
const REASON_HELP = (["incompatible_key_mode", "not_pending", "window_elapsed_pending"] as const).map(
  (r) => [r, explainOutcome("non_replaceable", r)] as const,
);

/** What a filter value must look like, said when one cannot be read. */
const INVALID_HELP: Record<string, string> = {
  after: "“after” is not a position in this list (the list starts from the newest)",
  from: "“from” must be a UTC time such as 2026-12-01T02:30",
  to: "“to” must be a UTC time such as 2026-12-01T02:30",
  digest: "“digest” must be 12 hex characters",
  outcome: "“outcome” must be one of the outcomes listed below",
  since: `“since” must be one of ${Object.keys(TIME_WINDOWS).join(", ")}`,
  scope: "“scope” is not a scope name",
  queue: "“queue” is not a queue name",
  type: "“type” is not a type name",
};

export default async function ConflictsPage({ searchParams }: { searchParams: Search }) {
  await requireViewer();
  const f = parseObservationFilters(await searchParams);
  const page = await listObservations(await consolePool(), f);
  const minute = (d: Date | undefined) => d?.toISOString().slice(0, 16);
  const query = toQuery({
    outcome: f.outcome,
    scope: f.scope,
    queue: f.queue,
    type: f.type,
    digest: f.digest,
    since: f.since,
    from: minute(f.from),
    to: minute(f.to),
    after: f.after,
  });
  const filtered = !!(f.outcome || f.scope || f.queue || f.type || f.digest || f.since || f.from || f.to);
  const invalidNotice =
    f.invalid.length > 0 ? (
      <div className="mb-3">
        <Notice tone="warn" role="status">
          {f.invalid.length === 1 ? "This filter is" : "These filters are"} not valid and{" "}
          {f.invalid.length === 1 ? "was" : "were"} not applied: {f.invalid.map((k) => INVALID_HELP[k]).join("; ")}.
        </Notice>
      </div>
    ) : null;
  return (
    <>
      <PageHeader
        title="Conflicts & replays"
        description="Every repeated request the queue answered with an existing job (replayed, coalesced), every debounce repeat that could not change its job (non_replaceable, with the reason), and every key reused for different work (conflict), with the fields and payload paths that differed. Debounce repeats that did replace their job are listed under the outcome replaced. Newest first."
      />
      {invalidNotice}
      <dl className="mb-4 grid gap-x-4 gap-y-1 text-sm sm:grid-cols-2">
        {OUTCOME_HELP.map(([o, text]) => (
          <div key={o} className="flex gap-2">
            <dt>
              <Badge>{o}</Badge>
            </dt>
            <dd className="text-slate-700">{text}</dd>
          </div>
        ))}
      </dl>
      <details className="mb-4 rounded border border-slate-200 bg-white p-3 text-sm" data-testid="reason-help">
        <summary className="cursor-pointer font-medium text-slate-900">
          Why a debounce request is non_replaceable
        </summary>
        <dl className="mt-2 space-y-2">
          {REASON_HELP.map(([r, e]) => (
            <div key={r}>
              <dt>
                <Badge tone="conflict">{r}</Badge> <span className="text-slate-700">{REASON_LABELS[r]}</span>
              </dt>
              <dd className="text-slate-700">
                {e.meaning} {e.action ? `What to do: ${e.action}` : null}
              </dd>
            </div>
          ))}
        </dl>
      </details>
      <FilterForm action="/conflicts" label="Filter observations" columns={5} filtered={filtered}>
        <FilterSelect id="o-outcome" name="outcome" label="Outcome" value={f.outcome} options={LISTED_OUTCOMES} />
        <FilterText id="o-scope" name="scope" label="Scope starts with" value={f.scope} />
        <FilterText id="o-queue" name="queue" label="Queue starts with" value={f.queue} />
        <FilterText id="o-type" name="type" label="Type starts with" value={f.type} />
        <FilterText id="o-digest" name="digest" label="Key digest" value={f.digest} />
        <FilterSelect
          id="o-since"
          name="since"
          label="Time"
          value={f.since}
          anyLabel="Any time"
          options={Object.keys(TIME_WINDOWS).map((w) => [w, WINDOW_LABELS[w] ?? w] as const)}
        />
        <FilterText id="o-from" name="from" label="From (UTC)" type="datetime-local" value={minute(f.from)} />
        <FilterText id="o-to" name="to" label="To (UTC)" type="datetime-local" value={minute(f.to)} />
      </FilterForm>
      {page.stoppedAfter ? (
        <div className="mb-3">
          <Notice tone="warn" role="status">
            This page looked at {page.stoppedAfter.toLocaleString("en-US")} replaced decisions and stopped: fewer than a
            page matched the filters. Older goes on from the last one looked at.
          </Notice>
        </div>
      ) : null}
      <ObservationsTable key={query} initial={page} query={query} filtered={filtered} />
    </>
  );
}

import type { Metadata } from "next";
import { DatabaseForm, Link } from "@/components/db-link";
import { RelativeTime } from "@/components/relative-time";
import {
  Badge,
  buttonClass,
  EmptyState,
  Field,
  inputClass,
  JobLink,
  linkClass,
  Notice,
  PageHeader,
  Table,
  Td,
} from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import {
  parseSearch,
  SEARCH_LIMIT,
  SEARCH_SCAN_CAP,
  SEARCH_WINDOWS,
  type SearchWindow,
  searchPayload,
} from "@/lib/console/reads/payload-search";

export const metadata: Metadata = { title: "Search by payload" };

const WINDOW_LABELS: Record<SearchWindow, string> = {
  "1h": "Last hour",
  "24h": "Last 24 hours",
  "7d": "Last 7 days",
};

type Search = Promise<Record<string, string | string[] | undefined>>;

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) ?? "";

export default async function SearchPage({ searchParams }: { searchParams: Search }) {
  await requireViewer();
  const sp = await searchParams;
  const parsed = parseSearch(sp);
  const errors = parsed && !parsed.ok ? parsed.errors : {};
  const result = parsed?.ok ? await searchPayload(await consolePool(), parsed.query) : null;
  const window = parsed?.ok ? parsed.query.window : "24h";
  return (
    <>
      <PageHeader
        title="Search jobs by payload"
        description={`For support with an order number rather than a key: jobs whose payload holds a value at a field (orderId = ORD-123, or a dot path such as customer.email; an array on the way is searched in every element, so items.sku finds an order line), optionally of one type. Bounded so it never scans the whole table: jobs created in the chosen window, newest first, at most ${SEARCH_SCAN_CAP.toLocaleString("en-US")} of them per search (the page says when it stopped there and goes on with the next older ones on request), at most ${SEARCH_LIMIT} matches.`}
      />
      <DatabaseForm
        method="get"
        action="/search"
        aria-label="Search jobs by payload"
        className="mb-4 grid gap-3 sm:grid-cols-5 sm:items-start"
      >
        <Field label="Payload field" name="path" error={errors.path} hint="e.g. orderId or customer.email">
          <input
            id="path"
            name="path"
            className={inputClass}
            defaultValue={one(sp.path)}
            aria-describedby={errors.path ? "path-error" : "path-hint"}
            aria-invalid={errors.path ? true : undefined}
          />
        </Field>
        <Field label="Equals" name="value" error={errors.value}>
          <input
            id="value"
            name="value"
            maxLength={500}
            className={inputClass}
            defaultValue={one(sp.value)}
            aria-describedby={errors.value ? "value-error" : undefined}
            aria-invalid={errors.value ? true : undefined}
          />
        </Field>
        <Field label="Type (optional)" name="type" error={errors.type}>
          <input id="type" name="type" className={inputClass} defaultValue={one(sp.type)} />
        </Field>
        <Field label="Created" name="window" error={errors.window}>
          <select
            id="window"
            name="window"
            className={inputClass}
            defaultValue={window}
            aria-describedby={errors.window ? "window-error" : undefined}
            aria-invalid={errors.window ? true : undefined}
          >
            {(Object.keys(SEARCH_WINDOWS) as SearchWindow[]).map((w) => (
              <option key={w} value={w}>
                {WINDOW_LABELS[w]}
              </option>
            ))}
          </select>
        </Field>
        <div className="sm:pt-6">
          <button type="submit" className={buttonClass}>
            Search
          </button>
        </div>
      </DatabaseForm>
      {result ? (
        <div className="space-y-3">
          <p className="text-sm text-slate-700" role="status">
            {result.jobs.length === result.limit
              ? `The newest ${result.limit} matches`
              : `${result.jobs.length} match${result.jobs.length === 1 ? "" : "es"}`}{" "}
            among {result.scanned.toLocaleString("en-US")} job{result.scanned === 1 ? "" : "s"}
            {result.before ? " older than the ones already searched," : ""} created in the{" "}
            {WINDOW_LABELS[window].toLowerCase()}.
          </p>
          {result.continueBefore ? (
            <Notice tone="warn">
              Searched the latest {result.scanCap.toLocaleString("en-US")} jobs
              {result.before ? " before the ones already searched" : ""}
              {result.searchedBackTo ? (
                <>
                  {" "}
                  (back to <RelativeTime iso={result.searchedBackTo} now={result.now} />)
                </>
              ) : null}
              ; older jobs of the window were not searched.{" "}
              <Link
                className={linkClass}
                href={`/search?${new URLSearchParams({
                  path: one(sp.path),
                  value: one(sp.value),
                  ...(one(sp.type) ? { type: one(sp.type) } : {}),
                  window,
                  before: result.continueBefore,
                })}`}
              >
                Search the next {result.scanCap.toLocaleString("en-US")} older jobs
              </Link>
            </Notice>
          ) : null}
          {result.jobs.length === 0 ? (
            <EmptyState title="No job matches.">
              Check the field's spelling (it is case-sensitive) and the window; numbers match as numbers or text, and
              arrays are searched in every element (items.sku, not items.0.sku).
            </EmptyState>
          ) : (
            <Table
              caption="Jobs whose payload matches, newest first"
              head={["Job", "Type · queue", "State", "Created"]}
            >
              {result.jobs.map((j) => (
                <tr key={j.id}>
                  <Td>
                    <JobLink id={j.id} />
                  </Td>
                  <Td wrap className="min-w-40">
                    {j.type}
                    <div className="text-xs text-slate-600">{j.queue}</div>
                  </Td>
                  <Td>
                    <Badge>{j.state}</Badge>
                  </Td>
                  <Td>
                    <RelativeTime iso={j.createdAt} now={result.now} />
                  </Td>
                </tr>
              ))}
            </Table>
          )}
        </div>
      ) : null}
    </>
  );
}

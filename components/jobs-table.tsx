"use client";
import { Link } from "@/components/db-link";
import { liveUrl } from "@/lib/console/wire/live-urls";
import type { JobRowDto } from "@/lib/console/wire/types";
import { useJobsSelection, useVisibleJobs } from "./jobs-bulk";
import { RelativeTime } from "./relative-time";
import { LiveTable, type LiveTableProps, pageHref } from "./table-footer";
import { Badge, DemoHint, EmptyState, JobLink, linkClass, Td } from "./ui";
import { useLive } from "./use-live";
import { NewRowsBar, useNewRows } from "./use-new-rows";

export function JobsTable({ initial, query, filtered }: LiveTableProps<JobRowDto>) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.jobs(query), initial);
  const view = useNewRows(data.rows, (j) => j.id);
  const link = (cursor: "after" | "before", id: string) => pageHref("/jobs", query, cursor, id);
  const selection = useJobsSelection();
  useVisibleJobs(view.rows.map((j) => j.id));
  return (
    <LiveTable
      before={<NewRowsBar count={view.newCount} onShow={view.showNew} />}
      rows={view.rows}
      empty={
        filtered ? (
          <EmptyState title="No jobs match these filters.">
            <Link className={linkClass} href="/jobs">
              Clear the filters
            </Link>
          </EmptyState>
        ) : (
          <EmptyState title="No jobs yet.">
            <DemoHint />
          </EmptyState>
        )
      }
      caption="Jobs, newest first"
      head={[
        ...(selection ? ["Select"] : []),
        "Job",
        "State",
        "Type",
        "Queue",
        "Attempts",
        "Tags",
        "Run at",
        "Created",
      ]}
      error={error}
      updatedAt={dataUpdatedAt}
      links={[
        { href: data.prev ? link("before", data.prev) : null, label: "← Newer" },
        { href: data.next ? link("after", data.next) : null, label: "Older →" },
      ]}
      row={(j) => (
        <tr key={j.id} className="hover:bg-slate-50">
          {selection ? (
            <Td>
              <input
                type="checkbox"
                aria-label={`Select job ${j.id}`}
                checked={selection.all || selection.selected.has(j.id)}
                disabled={selection.all}
                onChange={() => selection.toggle(j.id)}
              />
            </Td>
          ) : null}
          <Td>
            <JobLink id={j.id} />
          </Td>
          <Td>
            {j.state === "scheduled" && j.hasError ? <Badge>retrying</Badge> : <Badge>{j.state}</Badge>}
            {j.hasError && j.state !== "scheduled" && j.state !== "failed" ? (
              <span className="ml-1 text-xs text-red-800">had an error</span>
            ) : null}
          </Td>
          <Td>{j.type}</Td>
          <Td>{j.queue}</Td>
          <Td className="tabular-nums">
            {j.attempt}/{j.maxAttempts}
          </Td>
          <Td>
            <span className="flex flex-wrap gap-1">
              {j.tags.map((t) => (
                <Badge key={t} tone="tag">
                  {t}
                </Badge>
              ))}
            </span>
          </Td>
          <Td>
            <RelativeTime iso={j.runAt} now={data.now} />
          </Td>
          <Td>
            <RelativeTime iso={j.createdAt} now={data.now} />
          </Td>
        </tr>
      )}
    />
  );
}

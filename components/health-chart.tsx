"use client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { CartesianGrid, Line, LineChart, Tooltip, XAxis, YAxis } from "recharts";
import { formatCount } from "@/lib/console/wire/format";
import { liveUrl } from "@/lib/console/wire/live-urls";
import type { SeriesDto, SeriesName, SeriesWindow } from "@/lib/console/wire/types";
import { LiveStatus } from "./live-status";
import { useRefreshPolicy } from "./refresh-policy";
import { Card, cx } from "./ui";
import { getJson } from "./use-live";

/**
 * What each line means, in the words the rest of the console uses. Colours are CSS variables
 * (app/globals.css) so they follow dark mode.
 */
export const SERIES: { key: SeriesName; label: string; explain: string; color: string; dot: string }[] = [
  {
    key: "accepted",
    label: "Accepted",
    explain: "new jobs written",
    color: "var(--chart-accepted)",
    dot: "bg-(--chart-accepted)",
  },
  {
    key: "replayed",
    label: "Replayed",
    explain: "repeats answered with the existing job",
    color: "var(--chart-replayed)",
    dot: "bg-(--chart-replayed)",
  },
  {
    key: "conflicts",
    label: "Conflicts",
    explain: "a key reused for other work, refused",
    color: "var(--chart-conflicts)",
    dot: "bg-(--chart-conflicts)",
  },
  {
    key: "replaced",
    label: "Replaced",
    explain: "debounce repeats folded into the pending job",
    color: "var(--chart-replaced)",
    dot: "bg-(--chart-replaced)",
  },
  {
    key: "coalesced",
    label: "Coalesced",
    explain: "throttle repeats answered with the window's job",
    color: "var(--chart-coalesced)",
    dot: "bg-(--chart-coalesced)",
  },
  {
    key: "nonReplaceable",
    label: "Non-replaceable",
    explain: "debounce repeats that could not change the job",
    color: "var(--chart-non-replaceable)",
    dot: "bg-(--chart-non-replaceable)",
  },
  {
    key: "succeeded",
    label: "Succeeded",
    explain: "jobs that finished well",
    color: "var(--chart-succeeded)",
    dot: "bg-(--chart-succeeded)",
  },
  {
    key: "failed",
    label: "Failed",
    explain: "jobs that ran out of attempts or time",
    color: "var(--chart-failed)",
    dot: "bg-(--chart-failed)",
  },
];

const WINDOW_LABEL: Record<SeriesWindow, string> = { "1h": "Last hour", "24h": "Last 24 hours" };

/** `14:05` (UTC), the x-axis and tooltip label of a minute. */
function hhmm(iso: string): string {
  return `${iso.slice(11, 16)} UTC`;
}

/**
 * The per-minute chart of decisions and results, polled from /api/series. `queue` narrows it to one
 * queue (the queue page); the window toggles between the last hour and the last 24 hours.
 */
export function HealthChart({ initial, queue }: { initial: SeriesDto; queue?: string }) {
  const [span, setSpan] = useState<SeriesWindow>(initial.window);
  const qs = new URLSearchParams({ window: span });
  if (queue) qs.set("queue", queue);
  const url = liveUrl.series(qs);
  const { intervalMs } = useRefreshPolicy();
  const q = useQuery<SeriesDto>({
    queryKey: [url],
    queryFn: () => getJson<SeriesDto>(url),
    initialData: span === initial.window ? initial : undefined,
    initialDataUpdatedAt: span === initial.window ? Date.parse(initial.now) : undefined,
    placeholderData: keepPreviousData,
    refetchInterval: intervalMs,
  });
  const data = q.data ?? initial;
  const { error, dataUpdatedAt } = q;
  const empty = data.points.every((p) => SERIES.every((s) => p[s.key] === 0));
  const title = `${WINDOW_LABEL[span]}, per minute${queue ? ` (queue ${queue})` : ""}`;
  return (
    <Card title={title}>
      <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
        <fieldset className="inline-flex rounded-md border border-slate-400">
          <legend className="sr-only">Chart window</legend>
          {(["1h", "24h"] as const).map((w) => (
            <button
              key={w}
              type="button"
              aria-pressed={span === w}
              onClick={() => setSpan(w)}
              className={cx(
                "px-3 py-1 text-sm font-medium first:rounded-l-md last:rounded-r-md focus-visible:outline-2 focus-visible:outline-blue-700",
                span === w ? "bg-slate-800 text-white" : "bg-white text-slate-900 hover:bg-slate-100",
              )}
            >
              {w === "1h" ? "1 hour" : "24 hours"}
            </button>
          ))}
        </fieldset>
        {q.isPlaceholderData ? (
          <p role="status" className="text-xs text-slate-600">
            Loading {WINDOW_LABEL[span].toLowerCase()}…
          </p>
        ) : (
          <LiveStatus error={error} updatedAt={dataUpdatedAt} />
        )}
      </div>
      <dl className="mb-3 grid grid-cols-2 gap-2 text-sm sm:grid-cols-4 lg:grid-cols-8" data-testid="series-totals">
        {SERIES.map((s) => (
          <div key={s.key} className="min-w-0 rounded border border-slate-200 px-2 py-1.5">
            <dt className="flex items-center gap-1.5 text-slate-700">
              <span aria-hidden="true" className={cx("inline-block h-2.5 w-2.5 shrink-0 rounded-full", s.dot)} />
              {s.label}
            </dt>
            <dd className="text-lg font-semibold tabular-nums text-slate-900" data-series={s.key}>
              {formatCount(data.totals[s.key])}
            </dd>
            <dd className="text-xs text-slate-600">{s.explain}</dd>
          </div>
        ))}
      </dl>
      {empty ? (
        <p className="rounded border border-dashed border-slate-300 p-6 text-center text-sm text-slate-600">
          Nothing was enqueued or finished in this window.
        </p>
      ) : (
        <figure
          data-testid="health-chart"
          aria-label={`${title}: ${SERIES.map((s) => `${data.totals[s.key]} ${s.label.toLowerCase()}`).join(", ")}`}
        >
          <LineChart
            responsive
            data={data.points}
            style={{ width: "100%", height: 260 }}
            margin={{ top: 8, right: 8, bottom: 0, left: 0 }}
          >
            <CartesianGrid stroke="var(--chart-grid)" strokeDasharray="3 3" vertical={false} />
            <XAxis
              dataKey="t"
              tickFormatter={(t: string) => t.slice(11, 16)}
              minTickGap={24}
              stroke="var(--chart-axis)"
              tick={{ fill: "var(--chart-axis)", fontSize: 12 }}
            />
            <YAxis
              allowDecimals={false}
              width={44}
              stroke="var(--chart-axis)"
              tick={{ fill: "var(--chart-axis)", fontSize: 12 }}
            />
            <Tooltip
              labelFormatter={(t) => hhmm(String(t))}
              contentStyle={{
                background: "var(--chart-tooltip-bg)",
                borderColor: "var(--chart-grid)",
                color: "var(--chart-tooltip-fg)",
              }}
            />
            {SERIES.map((s) => (
              <Line
                key={s.key}
                dataKey={s.key}
                name={s.label}
                type="linear"
                stroke={s.color}
                strokeWidth={2}
                dot={false}
                isAnimationActive={false}
              />
            ))}
          </LineChart>
        </figure>
      )}
      <p className="mt-2 text-xs text-slate-600">
        Times are UTC, one point per minute; the last point is the minute in progress.
      </p>
    </Card>
  );
}

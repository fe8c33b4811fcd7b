import { formatTime } from "@/lib/console/wire/format";

/**
 * "× 500" beside an outcome that the observation log stored as one row for identical decisions
 * (docs/enqueue.md, "Observations"), with the time of the last one; nothing for a single decision.
 */
export function ObservationCount({ count, lastAt }: { count: number; lastAt: string | null }) {
  if (count <= 1) return null;
  const label = `${count.toLocaleString("en-US")} identical decisions${lastAt ? `, the last at ${formatTime(lastAt)}` : ""}`;
  return (
    <span
      data-testid="observation-count"
      className="ml-1 whitespace-nowrap text-xs font-medium text-slate-700"
      title={label}
    >
      × {count.toLocaleString("en-US")}
      <span className="sr-only"> identical decisions</span>
    </span>
  );
}

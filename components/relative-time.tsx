import { formatTime, relative } from "@/lib/console/wire/format";

/**
 * A time read both ways: "3 min ago" relative to the server's clock (`now`, so server and browser
 * render the same text), the exact UTC time on hover and for assistive technology.
 */
export function RelativeTime({ iso, now }: { iso: string | null | undefined; now: string }) {
  if (!iso) return <>—</>;
  const exact = formatTime(iso);
  return (
    <time dateTime={iso} title={exact} className="whitespace-nowrap">
      {relative(iso, now)}
      <span className="sr-only"> ({exact})</span>
    </time>
  );
}

/** Display helpers shared by server and client components. Deterministic (UTC), so hydration matches. */
import type { CappedCount } from "./types";

export function formatCount(c: CappedCount | number | undefined): string {
  if (c === undefined) return "0";
  if (typeof c === "number") return c.toLocaleString("en-US");
  return `${c.value.toLocaleString("en-US")}${c.capped ? "+" : ""}`;
}

/** `2026-11-29 20:41:30 UTC` */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "—";
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** `2d 3h`, `4m 05s`, `12s` */
export function formatDuration(ms: number): string {
  const neg = ms < 0;
  let s = Math.floor(Math.abs(ms) / 1000);
  const d = Math.floor(s / 86_400);
  s -= d * 86_400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const out =
    d > 0
      ? `${d}d ${h}h`
      : h > 0
        ? `${h}h ${String(m).padStart(2, "0")}m`
        : m > 0
          ? `${m}m ${String(s).padStart(2, "0")}s`
          : `${s}s`;
  return neg ? `-${out}` : out;
}

/** "3m 05s ago" relative to the server's clock. */
export function ago(iso: string, nowIso: string): string {
  const ms = Date.parse(nowIso) - Date.parse(iso);
  return ms < 1000 ? "just now" : `${formatDuration(ms)} ago`;
}

/** Job ids are UUIDv7: the head is the timestamp (shared by jobs of the same moment), so show the tail. */
export function shortId(id: string): string {
  return `…${id.slice(-8)}`;
}

/** "3 min ago", "in 12 s", "2 h ago", "4 d ago": coarse, for reading at a glance (exact time on hover). */
export function relative(iso: string, nowIso: string): string {
  const ms = Date.parse(iso) - Date.parse(nowIso);
  if (Number.isNaN(ms)) return "—";
  const a = Math.abs(ms);
  if (a < 1000) return "just now";
  const [n, unit] =
    a < 60_000
      ? [Math.floor(a / 1000), "s"]
      : a < 3_600_000
        ? [Math.floor(a / 60_000), "min"]
        : a < 86_400_000
          ? [Math.floor(a / 3_600_000), "h"]
          : [Math.floor(a / 86_400_000), "d"];
  return ms < 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
}

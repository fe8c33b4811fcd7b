"use client";
import { useEffect, useState } from "react";
import { formatDuration } from "@/lib/console/wire/format";

/**
 * TTL remaining, ticking every second. `serverNow` anchors the clock to PostgreSQL's, so a browser
 * whose clock is off still counts down correctly.
 */
export function Countdown({ expiresAt, serverNow }: { expiresAt: string; serverNow: string }) {
  const [offset] = useState(() => Date.parse(serverNow) - Date.now());
  const [now, setNow] = useState<number>(() => Date.parse(serverNow));
  useEffect(() => {
    const tick = () => setNow(Date.now() + offset);
    tick();
    const t = setInterval(tick, 1000);
    return () => clearInterval(t);
  }, [offset]);
  const left = Date.parse(expiresAt) - now;
  if (left <= 0) {
    return (
      <span className="font-medium text-amber-900" role="timer">
        expired {formatDuration(-left)} ago
      </span>
    );
  }
  return (
    <span className="font-medium tabular-nums text-emerald-900" role="timer" aria-live="off">
      {formatDuration(left)} left
    </span>
  );
}

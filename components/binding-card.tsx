import { Link } from "@/components/db-link";
import { formatDuration, formatTime } from "@/lib/console/wire/format";
import type { BindingDto } from "@/lib/console/wire/types";
import { Countdown } from "./countdown";
import { Badge, DefinitionList, DigestLink, linkClass, Mono } from "./ui";

/** A binding as operators may see it: preview, digest and length, never the key. */
export function BindingDetails({ binding, now, showJob }: { binding: BindingDto; now: string; showJob?: boolean }) {
  const items: [string, React.ReactNode][] = [
    ["Status", <Badge key="s">{binding.expired ? "expired" : "live"}</Badge>],
    ["Scope", <Mono key="scope">{binding.scope}</Mono>],
    ["Key preview", <Mono key="p">{binding.keyPreview}</Mono>],
    ["Key digest", <DigestLink key="d" digest={binding.keyDigest} />],
    ["Key length", `${binding.keyLength} characters`],
    ["Mode", binding.mode],
    ...windowItems(binding, now),
    ["Request digest", <Mono key="r">{binding.requestDigest}</Mono>],
  ];
  if (showJob) {
    items.splice(1, 0, [
      "Owning job",
      <Link key="j" className={`${linkClass} font-mono text-xs`} href={`/jobs/${binding.jobId}`}>
        {binding.jobId}
      </Link>,
    ]);
  }
  return <DefinitionList items={items} />;
}

/**
 * How long the key is held, in the mode's own words: an idempotency key has a TTL; debounce and
 * throttle have a window (for debounce, the window closes when the job is due), and debounce also
 * has a schedule and, with a cap, the max-wait deadline counted from the first acceptance.
 */
function windowItems(binding: BindingDto, now: string): [string, React.ReactNode][] {
  const lifetime: [string, React.ReactNode][] = binding.holdUntil
    ? [["Held until", binding.holdUntil === "finished" ? "this job finishes" : "this job starts"]]
    : [];
  if (binding.expiresAt === null || binding.ttlMs === null) {
    return [...lifetime, ["Created", formatTime(binding.createdAt)], ["Expires", "never by time"]];
  }
  const countdown = <Countdown key="c" expiresAt={binding.expiresAt} serverNow={now} />;
  if (binding.mode === "idempotency") {
    return [
      ...lifetime,
      ["TTL", formatDuration(binding.ttlMs)],
      ["Created", formatTime(binding.createdAt)],
      ["Expires", formatTime(binding.expiresAt)],
      ["TTL remaining", countdown],
    ];
  }
  const items: [string, React.ReactNode][] = [["Window", formatDuration(binding.ttlMs)]];
  if (binding.mode === "debounce") {
    items.push([
      "Schedule",
      binding.schedule === "preserve"
        ? "preserve (repeats keep the run time)"
        : "reset (each repeat moves the run time to now + window)",
    ]);
    items.push(["First acceptance", formatTime(binding.createdAt)]);
    items.push([
      "Max-wait deadline",
      binding.maxWaitUntil
        ? formatTime(binding.maxWaitUntil)
        : "none (no maxWaitMs: repeats can keep postponing the job)",
    ]);
  } else {
    items.push(["Window opened", formatTime(binding.createdAt)]);
  }
  items.push(["Window closes", formatTime(binding.expiresAt)], ["Window remaining", countdown]);
  return items;
}

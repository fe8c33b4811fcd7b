import Link from "next/link";
import { formatDuration, formatTime } from "@/lib/console/format";
import type { BindingDto } from "@/lib/console/types";
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
    ["TTL", formatDuration(binding.ttlMs)],
    ["Created", formatTime(binding.createdAt)],
    ["Expires", formatTime(binding.expiresAt)],
    ["TTL remaining", <Countdown key="c" expiresAt={binding.expiresAt} serverNow={now} />],
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

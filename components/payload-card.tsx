import type { PayloadPreview } from "@/lib/console/wire/types";
import { DatabaseAnchor } from "./db-link";
import { Card, linkClass } from "./ui";

const kib = (bytes: number) =>
  bytes >= 1024 * 1024
    ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB`
    : bytes >= 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${bytes} bytes`;

/**
 * A job's payload, sent once with the page: in full when short, else its first part with the whole
 * as a JSON download (the live refresh of the job never carries the payload).
 */
export function PayloadCard({ jobId, payload }: { jobId: string; payload: PayloadPreview }) {
  const download = (
    <DatabaseAnchor className={linkClass} href={`/api/jobs/${jobId}/payload`} download>
      Download the payload (JSON, {kib(payload.bytes)})
    </DatabaseAnchor>
  );
  return (
    <Card title="Payload">
      {payload.truncated ? (
        <p className="mb-2 text-sm text-slate-700" data-testid="payload-truncated">
          Showing the first {kib(Buffer.byteLength(payload.preview))} of {kib(payload.bytes)}. {download}
        </p>
      ) : null}
      <pre className="max-h-96 overflow-auto rounded bg-slate-50 p-3 font-mono text-xs whitespace-pre-wrap break-all text-slate-900">
        {payload.preview}
        {payload.truncated ? "\n…" : ""}
      </pre>
      {payload.truncated ? null : <p className="mt-2 text-sm">{download}</p>}
    </Card>
  );
}

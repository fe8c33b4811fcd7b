"use client";
import { useQueryClient } from "@tanstack/react-query";
import { MAINTENANCE_TASK_NAMES } from "@workhorse/core/client";
import { useRouter } from "next/navigation";
import { useActionState, useEffect } from "react";
import type { MaintenanceState } from "@/lib/console/wire/action-state";
import { formatCount, formatTime } from "@/lib/console/wire/format";
import { liveUrl } from "@/lib/console/wire/live-urls";
import type { MaintenanceDto } from "@/lib/console/wire/types";
import { LiveStatus } from "./live-status";
import { Badge, buttonClass, Card, EmptyState, Notice, Stat, Table, Td } from "./ui";
import { useLive } from "./use-live";

/** The operator's name for a maintenance task (its stored name when this console does not know it). */
function taskName(task: string): string {
  return Object.hasOwn(MAINTENANCE_TASK_NAMES, task)
    ? MAINTENANCE_TASK_NAMES[task as keyof typeof MAINTENANCE_TASK_NAMES]
    : task;
}

/** `action`: the run-maintenance server action, passed down by the page (components never import from app/). */
export function MaintenancePanel({
  initial,
  readOnly,
  action: runMaintenanceAction,
}: {
  initial: MaintenanceDto;
  readOnly: boolean;
  action: (prev: MaintenanceState, data: FormData) => Promise<MaintenanceState>;
}) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.maintenance(), initial);
  const [state, action, pending] = useActionState<MaintenanceState, FormData>(runMaintenanceAction, { status: "idle" });
  const router = useRouter();
  const queryClient = useQueryClient();
  useEffect(() => {
    if (state.status === "done") {
      router.refresh();
      // Live views keep their own cache: refetch now rather than at the next (possibly paused) poll.
      void queryClient.invalidateQueries();
    }
  }, [state, router, queryClient]);
  const last = data.runs.find((r) => r.task === "prune_expired_bindings");
  return (
    <div className="space-y-4">
      <div className="grid gap-3 sm:grid-cols-3">
        <Stat
          label="Expired bindings awaiting cleanup"
          value={formatCount(data.expiredAwaitingCleanup)}
          hint={data.oldestExpiredAt ? `oldest expired ${formatTime(data.oldestExpiredAt)}` : undefined}
        />
        <Stat
          label="Cleanup last ran"
          value={<span className="text-base">{last ? formatTime(last.finishedAt) : "never"}</span>}
          hint={last ? `${last.trigger}, removed ${formatCount(last.removed)}` : undefined}
        />
        <Card title="Run now">
          {readOnly ? (
            <p className="text-sm text-slate-600">Read-only mode: maintenance cannot be started here.</p>
          ) : (
            <form action={action} className="space-y-2">
              <p className="text-sm text-slate-700">
                Deletes expired bindings in small batches and prunes old observations.
              </p>
              <button type="submit" className={buttonClass} disabled={pending}>
                {pending ? "Running…" : "Run cleanup now"}
              </button>
            </form>
          )}
        </Card>
      </div>
      {state.status === "done" ? (
        <Notice tone="ok" role="status">
          Cleanup finished: removed {formatCount(state.expiredBindingsDeleted)} expired binding
          {state.expiredBindingsDeleted === 1 ? "" : "s"} and {formatCount(state.observationsDeleted)} old observation
          {state.observationsDeleted === 1 ? "" : "s"}; gave back {formatCount(state.expiredLeasesReaped)} job
          {state.expiredLeasesReaped === 1 ? "" : "s"} whose lease had lapsed.
        </Notice>
      ) : null}
      {state.status === "error" ? (
        <Notice tone="error" role="alert">
          {state.message}
        </Notice>
      ) : null}
      <Card title="Recent runs">
        {data.runs.length === 0 ? (
          <EmptyState title="Maintenance has not run yet.">
            It runs every 5 minutes in each process using the queue, or now with the button above.
          </EmptyState>
        ) : (
          <Table caption="Recent maintenance runs" head={["Finished", "Task", "Trigger", "Removed"]}>
            {data.runs.map((r) => (
              <tr key={r.id}>
                <Td>{formatTime(r.finishedAt)}</Td>
                <Td>{taskName(r.task)}</Td>
                <Td>
                  <Badge tone={r.trigger === "manual" ? "replayed" : undefined}>{r.trigger}</Badge>
                </Td>
                <Td className="tabular-nums">{formatCount(r.removed)}</Td>
              </tr>
            ))}
          </Table>
        )}
      </Card>
      <LiveStatus error={error} updatedAt={dataUpdatedAt} />
    </div>
  );
}

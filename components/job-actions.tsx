"use client";
import { createContext, type ReactNode, useContext } from "react";
import type { OperatorActionState, RedriveState } from "@/lib/console/wire/action-state";
import type { JobStateName } from "@/lib/console/wire/types";
import { ActionDialogs } from "./action-dialog";

/** The job's live state, provided by the job page's live view to the actions below it. */
export const LiveJobState = createContext<{
  state: JobStateName;
  cancelRequested: boolean;
  /** The job the latest redrive of this one made, or null. */
  redrivenTo: string | null;
} | null>(null);

type Act<S> = (prev: S, data: FormData) => Promise<S>;

/**
 * Cancel / Run now / Redrive / Purge for one job, each shown only when the job's live state allows
 * it. Rendered only when the console is not read-only.
 */
export function JobActions(props: {
  jobId: string;
  cancel: Act<OperatorActionState>;
  runNow: Act<OperatorActionState>;
  redrive: Act<RedriveState>;
  purge: ReactNode;
}) {
  const live = useContext(LiveJobState);
  if (!live) return null;
  const { state, cancelRequested, redrivenTo } = live;
  const pending = state === "ready" || state === "scheduled";
  const any = pending || state === "active" || state === "failed";
  return (
    <div className="space-y-3">
      {state === "active" && cancelRequested ? (
        <p className="text-sm text-slate-700">Cancel requested: the worker stops this job at its next heartbeat.</p>
      ) : null}
      <ActionDialogs
        hidden={{ jobIds: props.jobId }}
        dialogs={[
          {
            id: "cancel",
            allowed: pending || (state === "active" && !cancelRequested),
            action: props.cancel,
            label: "Cancel job…",
            title: "Cancel this job?",
            statement:
              state === "active"
                ? "A worker is running this job. It will be asked to stop at its next heartbeat; the attempt is then recorded as canceled and never retried. Its idempotency key stays bound to it."
                : "This job has not started: it becomes canceled now and will never run. Its idempotency key stays bound to it (purge releases keys).",
            confirmLabel: "Confirm cancel",
            danger: true,
          },
          {
            id: "run-now",
            allowed: state === "scheduled",
            action: props.runNow,
            label: "Run now…",
            title: "Run this job now?",
            statement:
              "This scheduled job becomes ready now, ahead of its run time; the next free worker of its queue takes it.",
            confirmLabel: "Confirm run now",
          },
          {
            id: "redrive",
            allowed: state === "failed" && redrivenTo === null,
            action: props.redrive,
            label: "Redrive…",
            title: "Redrive this failed job?",
            statement:
              "A new ready job with this job's definition (not its deadline or checkpoints) is created at attempt 0 and linked to this one. A live idempotency key of this job moves to the new job.",
          },
          {
            id: "redrive-again",
            allowed: state === "failed" && redrivenTo !== null,
            action: props.redrive,
            moreHidden: { again: "1" },
            label: "Redrive again…",
            title: "Redrive this job a second time?",
            statement: `This job was redriven already, to job ${redrivenTo ?? ""}: that job runs its work. Redriving again creates one more ready job with the same definition, so the work may run twice. Do it only when the earlier copy cannot do it.`,
          },
        ]}
      />
      {props.purge}
      {any ? null : <p className="text-sm text-slate-600">No actions apply to a {state} job.</p>}
    </div>
  );
}

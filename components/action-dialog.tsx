"use client";
import { useActionState, useId, useState } from "react";
import { Link } from "@/components/db-link";
import type { OperatorActionState, RedriveState } from "@/lib/console/wire/action-state";
import {
  ConfirmDialog,
  ConfirmForm,
  type DialogFormProps,
  type FormAction,
  ReasonForm,
  useSettled,
} from "./confirm-dialog";
import { Refusal } from "./purge-dialog";
import { buttonClass, linkClass, Notice } from "./ui";

export function ActionResult({ state }: { state: OperatorActionState | RedriveState }) {
  if (state.status === "done") {
    return (
      <Notice tone="ok" role="status">
        {state.summary}
      </Notice>
    );
  }
  return <Refusal state={state} />;
}

/** What every operator action dialog is given: its server action, the form's hidden fields, and its words. */
type DialogProps<S> = {
  action: FormAction<S>;
  hidden: Record<string, string>;
  label: string;
  title: string;
  statement: string;
  disabled?: boolean;
  /** False hides the button (the state no longer allows it) but keeps an open dialog and its result. */
  allowed?: boolean;
};

/**
 * A button that opens a confirmation dialog asking for a reason, then runs a server action (cancel,
 * run now, pause, resume). `statement` says exactly what will happen (with the count) before the
 * operator confirms. The result (how many changed and why the rest did not) stays beside the button.
 */
export function ActionDialog(
  props: DialogProps<OperatorActionState> & { confirmLabel: string; danger?: boolean; hint?: string },
) {
  return (
    <ConfirmDialog<OperatorActionState>
      {...props}
      idle={{ status: "idle" }}
      form={(p) => (
        <ConfirmForm<OperatorActionState>
          {...props}
          {...p}
          hint={props.hint ?? "Kept in the job's timeline and in the audit log."}
          pendingLabel="Working…"
          result={(state) => <ActionResult state={state} />}
        />
      )}
      result={(last) => <ActionResult state={last} />}
    />
  );
}

/** One dialog of an action bar, without what the bar gives all of them: an ActionDialog (it has a
 *  confirmLabel) or the redrive dialog. `id` keys it among its siblings. */
export type DialogSpec = { id: string } & (
  | (Omit<DialogProps<OperatorActionState>, "hidden" | "disabled"> & { confirmLabel: string; danger?: boolean })
  | (Omit<DialogProps<RedriveState>, "hidden" | "disabled"> & { moreHidden?: Record<string, string> })
);

/** An action bar's dialogs in order, over the same hidden fields (one job, or a selection of jobs). */
export function ActionDialogs(props: { hidden: Record<string, string>; disabled?: boolean; dialogs: DialogSpec[] }) {
  return props.dialogs.map(({ id, ...spec }) =>
    "confirmLabel" in spec ? (
      <ActionDialog key={id} {...spec} hidden={props.hidden} disabled={props.disabled} />
    ) : (
      <RedriveDialog
        key={id}
        {...spec}
        hidden={{ ...props.hidden, ...("moreHidden" in spec ? spec.moreHidden : {}) }}
        disabled={props.disabled}
      />
    ),
  );
}

/**
 * Redrive with a dry run first: the dialog's first button asks PostgreSQL what would be redriven
 * (nothing is written); only then can the operator confirm, with the same request id, so a double
 * submit replays instead of redriving twice.
 */
export function RedriveDialog(props: DialogProps<RedriveState>) {
  return (
    <ConfirmDialog<RedriveState>
      {...props}
      width="36rem"
      idle={{ status: "idle" }}
      form={(p) => <RedriveForm {...props} {...p} />}
      result={(last) => (last.status === "done" && last.dryRun ? null : <ActionResult state={last} />)}
    />
  );
}

function RedriveForm(props: DialogFormProps<RedriveState>) {
  const [state, formAction, pending] = useActionState(props.action, { status: "idle" });
  const [reason, setReason] = useState("");
  const [requestId] = useState(() => crypto.randomUUID());
  const id = useId();
  const redrove = state.status === "done" && !state.dryRun;
  useSettled(state, props.onResult, redrove);
  const dryRan = state.status === "done" && state.dryRun;
  const eligible = dryRan ? (state.counts.eligible ?? 0) : 0;
  const finished = redrove || state.status === "refused";
  return (
    <ReasonForm
      formAction={formAction}
      title={props.title}
      statement={props.statement}
      hidden={{ ...props.hidden, requestId }}
      finished={finished}
      reason={{
        id,
        error: state.status === "error" ? state.fieldErrors.reason : undefined,
        hint: "Kept in both jobs' timelines and in the audit log.",
        value: reason,
        onChange: setReason,
        readOnly: dryRan,
      }}
      result={<ActionResult state={state} />}
      close={props.close}
      after={
        state.status === "done" && state.results.length > 0 ? (
          <details className="text-sm" open={state.results.length <= 10}>
            <summary>Jobs ({state.results.length})</summary>
            <ul className="mt-1 max-h-48 space-y-1 overflow-auto font-mono text-xs">
              {state.results.map((r) => (
                <li key={r.sourceJobId}>
                  <Link className={linkClass} href={`/jobs/${r.sourceJobId}`}>
                    {r.sourceJobId}
                  </Link>{" "}
                  {r.status}
                  {r.jobId ? (
                    <>
                      {" → "}
                      <Link className={linkClass} href={`/jobs/${r.jobId}`}>
                        {r.jobId}
                      </Link>
                    </>
                  ) : null}
                </li>
              ))}
            </ul>
          </details>
        ) : null
      }
      submit={
        dryRan ? (
          <button
            type="submit"
            name="mode"
            value="redrive"
            className={buttonClass}
            disabled={pending || eligible === 0}
          >
            {pending ? "Working…" : `Confirm redrive of ${eligible} job${eligible === 1 ? "" : "s"}`}
          </button>
        ) : (
          <button type="submit" name="mode" value="dry-run" className={buttonClass} disabled={pending}>
            {pending ? "Working…" : "Dry run"}
          </button>
        )
      }
    />
  );
}

"use client";
import Link from "next/link";
import { useActionState, useId, useState } from "react";
import type { OperatorActionState, RedriveState } from "@/lib/console/action-state";
import { ConfirmDialog, DialogButtons, type FormAction, Hidden, ReasonField, useSettled } from "./confirm-dialog";
import { Refusal } from "./purge-dialog";
import { buttonClass, dangerButtonClass, linkClass, Notice } from "./ui";

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

/**
 * A button that opens a confirmation dialog asking for a reason, then runs a server action (cancel,
 * run now, pause, resume). `statement` says exactly what will happen (with the count) before the
 * operator confirms. The result (how many changed and why the rest did not) stays beside the button.
 */
export function ActionDialog(props: {
  action: FormAction<OperatorActionState>;
  hidden: Record<string, string>;
  label: string;
  title: string;
  statement: string;
  confirmLabel: string;
  danger?: boolean;
  disabled?: boolean;
  /** False hides the button (the state no longer allows it) but keeps an open dialog and its result. */
  allowed?: boolean;
}) {
  return (
    <ConfirmDialog<OperatorActionState>
      label={props.label}
      title={props.title}
      danger={props.danger}
      disabled={props.disabled}
      allowed={props.allowed}
      idle={{ status: "idle" }}
      form={(p) => <ActionForm {...props} {...p} />}
      result={(last) => <ActionResult state={last} />}
    />
  );
}

function ActionForm(props: {
  action: FormAction<OperatorActionState>;
  hidden: Record<string, string>;
  title: string;
  statement: string;
  confirmLabel: string;
  danger?: boolean;
  onResult: (s: OperatorActionState) => void;
  close: () => void;
}) {
  const [state, formAction, pending] = useActionState(props.action, { status: "idle" });
  const id = useId();
  const [reason, setReason] = useState("");
  useSettled(state, props.onResult, state.status === "done");
  const finished = state.status === "done" || state.status === "refused";
  return (
    <form action={formAction} className="space-y-4 p-5">
      <h2 className="text-lg font-semibold">{props.title}</h2>
      <p className="text-sm text-slate-700">{props.statement}</p>
      <Hidden fields={props.hidden} />
      {finished ? null : (
        <ReasonField
          id={id}
          error={state.status === "error" ? state.fieldErrors.reason : undefined}
          hint="Kept in the job's timeline and in the audit log."
          value={reason}
          onChange={setReason}
        />
      )}
      <ActionResult state={state} />
      <DialogButtons finished={finished} close={props.close}>
        <button type="submit" className={props.danger ? dangerButtonClass : buttonClass} disabled={pending}>
          {pending ? "Working…" : props.confirmLabel}
        </button>
      </DialogButtons>
    </form>
  );
}

/**
 * Redrive with a dry run first: the dialog's first button asks PostgreSQL what would be redriven
 * (nothing is written); only then can the operator confirm, with the same request id, so a double
 * submit replays instead of redriving twice.
 */
export function RedriveDialog(props: {
  action: FormAction<RedriveState>;
  hidden: Record<string, string>;
  label: string;
  title: string;
  statement: string;
  disabled?: boolean;
  /** False hides the button but keeps an open dialog and its result. */
  allowed?: boolean;
}) {
  return (
    <ConfirmDialog<RedriveState>
      label={props.label}
      title={props.title}
      disabled={props.disabled}
      allowed={props.allowed}
      width="36rem"
      idle={{ status: "idle" }}
      form={(p) => <RedriveForm {...props} {...p} />}
      result={(last) => (last.status === "done" && last.dryRun ? null : <ActionResult state={last} />)}
    />
  );
}

function RedriveForm(props: {
  action: FormAction<RedriveState>;
  hidden: Record<string, string>;
  title: string;
  statement: string;
  onResult: (s: RedriveState) => void;
  close: () => void;
}) {
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
    <form action={formAction} className="space-y-4 p-5">
      <h2 className="text-lg font-semibold">{props.title}</h2>
      <p className="text-sm text-slate-700">{props.statement}</p>
      <Hidden fields={{ ...props.hidden, requestId }} />
      {finished ? null : (
        <ReasonField
          id={id}
          error={state.status === "error" ? state.fieldErrors.reason : undefined}
          hint="Kept in both jobs' timelines and in the audit log."
          value={reason}
          onChange={setReason}
          readOnly={dryRan}
        />
      )}
      <ActionResult state={state} />
      {state.status === "done" && state.results.length > 0 ? (
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
      ) : null}
      <DialogButtons finished={finished} close={props.close}>
        {dryRan ? (
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
        )}
      </DialogButtons>
    </form>
  );
}

"use client";
import { useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useActionState, useEffect, useId, useRef, useState } from "react";
import type { OperatorActionState, RedriveState } from "@/lib/console/action-state";
import { buttonClass, dangerButtonClass, Field, inputClass, linkClass, Notice, secondaryButtonClass } from "./ui";

type Action<S> = (prev: S, data: FormData) => Promise<S>;

/** Hidden inputs carrying the target (jobIds, queue, filter) of an action. */
function Hidden({ fields }: { fields: Record<string, string> }) {
  return (
    <>
      {Object.entries(fields).map(([k, v]) => (
        <input key={k} type="hidden" name={k} value={v} />
      ))}
    </>
  );
}

/** After a change: refresh the server-rendered page and every live view now. */
function useRefreshAfter(done: boolean) {
  const router = useRouter();
  const queryClient = useQueryClient();
  useEffect(() => {
    if (!done) return;
    router.refresh();
    void queryClient.invalidateQueries();
  }, [done, router, queryClient]);
}

export function ActionResult({ state }: { state: OperatorActionState | RedriveState }) {
  if (state.status === "done") {
    return (
      <Notice tone="ok" role="status">
        {state.summary}
      </Notice>
    );
  }
  if (state.status === "refused") {
    return (
      <Notice tone="error" role="alert">
        Refused: {state.message}
      </Notice>
    );
  }
  if (state.status === "error" && !state.fieldErrors.reason) {
    return (
      <Notice tone="error" role="alert">
        {state.message}
      </Notice>
    );
  }
  return null;
}

/**
 * A button that opens a confirmation dialog asking for a reason, then runs a server action (cancel,
 * run now, pause, resume). `statement` says exactly what will happen (with the count) before the
 * operator confirms. The result (how many changed and why the rest did not) stays beside the button.
 */
export function ActionDialog(props: {
  action: Action<OperatorActionState>;
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
  const [round, setRound] = useState(0);
  const [last, setLast] = useState<OperatorActionState>({ status: "idle" });
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <div hidden={props.allowed === false && last.status === "idle"}>
      <button
        hidden={props.allowed === false}
        type="button"
        disabled={props.disabled}
        className={props.danger ? dangerButtonClass : secondaryButtonClass}
        onClick={() => {
          setRound((r) => r + 1);
          dialog.current?.showModal();
        }}
      >
        {props.label}
      </button>
      <dialog
        ref={dialog}
        aria-label={props.title}
        className="m-auto w-[min(32rem,calc(100vw-2rem))] whitespace-normal rounded-lg bg-white p-0 text-slate-900 shadow-xl"
      >
        <ActionForm key={round} {...props} onResult={setLast} close={() => dialog.current?.close()} />
      </dialog>
      <div className="mt-2">
        <ActionResult state={last} />
      </div>
    </div>
  );
}

function ActionForm(props: {
  action: Action<OperatorActionState>;
  hidden: Record<string, string>;
  title: string;
  statement: string;
  confirmLabel: string;
  danger?: boolean;
  onResult: (s: OperatorActionState) => void;
  close: () => void;
}) {
  const { onResult } = props;
  const [state, formAction, pending] = useActionState(props.action, { status: "idle" });
  const id = useId();
  useEffect(() => {
    if (state.status !== "idle") onResult(state);
  }, [state, onResult]);
  useRefreshAfter(state.status === "done");
  const finished = state.status === "done" || state.status === "refused";
  return (
    <form action={formAction} className="space-y-4 p-5">
      <h2 className="text-lg font-semibold">{props.title}</h2>
      <p className="text-sm text-slate-700">{props.statement}</p>
      <Hidden fields={props.hidden} />
      {finished ? null : (
        <Field
          label="Reason"
          name={`${id}-reason`}
          error={state.status === "error" ? state.fieldErrors.reason : undefined}
          hint="Kept in the job's timeline and in the audit log."
        >
          <textarea id={`${id}-reason`} name="reason" rows={3} required className={inputClass} />
        </Field>
      )}
      <ActionResult state={state} />
      <div className="flex justify-end gap-2">
        <button type="button" className={secondaryButtonClass} onClick={props.close}>
          {finished ? "Close" : "Cancel"}
        </button>
        {finished ? null : (
          <button type="submit" className={props.danger ? dangerButtonClass : buttonClass} disabled={pending}>
            {pending ? "Working…" : props.confirmLabel}
          </button>
        )}
      </div>
    </form>
  );
}

/**
 * Redrive with a dry run first: the dialog's first button asks PostgreSQL what would be redriven
 * (nothing is written); only then can the operator confirm, with the same request id, so a double
 * submit replays instead of redriving twice.
 */
export function RedriveDialog(props: {
  action: Action<RedriveState>;
  hidden: Record<string, string>;
  label: string;
  title: string;
  statement: string;
  disabled?: boolean;
  /** False hides the button but keeps an open dialog and its result. */
  allowed?: boolean;
}) {
  const [round, setRound] = useState(0);
  const [last, setLast] = useState<RedriveState>({ status: "idle" });
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <div hidden={props.allowed === false && last.status === "idle"}>
      <button
        hidden={props.allowed === false}
        type="button"
        disabled={props.disabled}
        className={secondaryButtonClass}
        onClick={() => {
          setRound((r) => r + 1);
          dialog.current?.showModal();
        }}
      >
        {props.label}
      </button>
      <dialog
        ref={dialog}
        aria-label={props.title}
        className="m-auto w-[min(36rem,calc(100vw-2rem))] whitespace-normal rounded-lg bg-white p-0 text-slate-900 shadow-xl"
      >
        <RedriveForm key={round} {...props} onResult={setLast} close={() => dialog.current?.close()} />
      </dialog>
      <div className="mt-2">{last.status === "done" && last.dryRun ? null : <ActionResult state={last} />}</div>
    </div>
  );
}

function RedriveForm(props: {
  action: Action<RedriveState>;
  hidden: Record<string, string>;
  title: string;
  statement: string;
  onResult: (s: RedriveState) => void;
  close: () => void;
}) {
  const { onResult } = props;
  const [state, formAction, pending] = useActionState(props.action, { status: "idle" });
  const [reason, setReason] = useState("");
  const [requestId] = useState(() => crypto.randomUUID());
  const id = useId();
  useEffect(() => {
    if (state.status !== "idle") onResult(state);
  }, [state, onResult]);
  const redrove = state.status === "done" && !state.dryRun;
  useRefreshAfter(redrove);
  const dryRan = state.status === "done" && state.dryRun;
  const eligible = dryRan ? (state.counts.eligible ?? 0) : 0;
  const finished = redrove || state.status === "refused";
  return (
    <form action={formAction} className="space-y-4 p-5">
      <h2 className="text-lg font-semibold">{props.title}</h2>
      <p className="text-sm text-slate-700">{props.statement}</p>
      <Hidden fields={{ ...props.hidden, requestId }} />
      {finished ? null : (
        <Field
          label="Reason"
          name={`${id}-reason`}
          error={state.status === "error" ? state.fieldErrors.reason : undefined}
          hint="Kept in both jobs' timelines and in the audit log."
        >
          <textarea
            id={`${id}-reason`}
            name="reason"
            rows={3}
            required
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            readOnly={dryRan}
            className={inputClass}
          />
        </Field>
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
      <div className="flex justify-end gap-2">
        <button type="button" className={secondaryButtonClass} onClick={props.close}>
          {finished ? "Close" : "Cancel"}
        </button>
        {finished ? null : dryRan ? (
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
      </div>
    </form>
  );
}

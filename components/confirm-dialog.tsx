"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { type ReactNode, useActionState, useEffect, useId, useRef, useState } from "react";
import { CONFIRM_DATABASE_FIELD } from "@/lib/console/wire/database-paths";
import { useProductionDatabase } from "./db-link";
import { buttonClass, dangerButtonClass, Field, inputClass, secondaryButtonClass } from "./ui";

/** A server action as React's useActionState takes it. */
export type FormAction<S> = (prev: S, data: FormData) => Promise<S>;

/** What a dialog's form is given: its server action, the target as hidden fields, its words, and the frame's callbacks. */
export type DialogFormProps<S> = {
  action: FormAction<S>;
  hidden: Record<string, string>;
  title: string;
  statement: string;
  onResult: (s: S) => void;
  close: () => void;
};

/**
 * The frame every confirming action shares (purge, cancel, run now, pause, resume, redrive): a
 * button that opens a modal dialog holding a fresh form each time (`form` gets `onResult` and
 * `close`), and the last result kept beside the button after the dialog closes. `allowed` false
 * hides the button (the state no longer allows the action) but keeps a result already shown.
 */
export function ConfirmDialog<S extends { status: string }>(props: {
  label: string;
  title: string;
  danger?: boolean;
  disabled?: boolean;
  allowed?: boolean;
  width?: "32rem" | "36rem";
  form: (p: { onResult: (s: S) => void; close: () => void }) => ReactNode;
  result: (last: S) => ReactNode;
  idle: S;
}) {
  const [round, setRound] = useState(0);
  const [last, setLast] = useState<S>(props.idle);
  const dialog = useRef<HTMLDialogElement>(null);
  const width = props.width === "36rem" ? "w-[min(36rem,calc(100vw-2rem))]" : "w-[min(32rem,calc(100vw-2rem))]";
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
        className={`m-auto ${width} whitespace-normal rounded-lg bg-white p-0 text-slate-900 shadow-xl`}
      >
        <div key={round}>{props.form({ onResult: setLast, close: () => dialog.current?.close() })}</div>
      </dialog>
      <div className="mt-2">{props.result(last)}</div>
    </div>
  );
}

/** Reports every settled state of a dialog's form to the frame, and refreshes the views after a change. */
export function useSettled<S extends { status: string }>(state: S, onResult: (s: S) => void, changed: boolean) {
  useEffect(() => {
    if (state.status !== "idle") onResult(state);
  }, [state, onResult]);
  const router = useRouter();
  const queryClient = useQueryClient();
  useEffect(() => {
    if (!changed) return;
    router.refresh();
    // Live views keep their own cache: refetch now rather than at the next (possibly paused) poll.
    void queryClient.invalidateQueries();
  }, [changed, router, queryClient]);
}

/** Hidden inputs carrying the target (jobIds, queue, filter) of an action. */
export function Hidden({ fields }: { fields: Record<string, string> }) {
  return (
    <>
      {Object.entries(fields).map(([k, v]) => (
        <input key={k} type="hidden" name={k} value={v} />
      ))}
    </>
  );
}

/**
 * The reason every operator action asks for. Controlled, so a refused or failed submit keeps what
 * was typed (React resets uncontrolled fields after a form action).
 */
export function ReasonField(props: {
  id: string;
  error: string | undefined;
  hint: string;
  value: string;
  onChange: (v: string) => void;
  readOnly?: boolean;
}) {
  return (
    <Field label="Reason" name={`${props.id}-reason`} error={props.error} hint={props.hint}>
      <textarea
        id={`${props.id}-reason`}
        name="reason"
        rows={3}
        required
        className={inputClass}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        readOnly={props.readOnly}
      />
    </Field>
  );
}

/**
 * On a production database's page, a destructive action's dialog asks for the database's name typed
 * out (the browser holds the submit until it matches; the server checks it again).
 */
function ProductionConfirmField({ id }: { id: string }) {
  const production = useProductionDatabase();
  if (production === null) return null;
  return (
    <Field
      label={`Type ${production} to confirm`}
      name={`${id}-confirm-database`}
      hint={`${production} is a production database.`}
    >
      <input
        id={`${id}-confirm-database`}
        name={CONFIRM_DATABASE_FIELD}
        required
        autoComplete="off"
        pattern={production.replaceAll(".", "\\.")}
        title={`The database's name, ${production}`}
        className={inputClass}
      />
    </Field>
  );
}

/** "Close" (never "Cancel": it would sit beside "Cancel 30 jobs") and, until the action finished, the submit button(s). */
export function DialogButtons({
  finished,
  close,
  children,
}: {
  finished: boolean;
  close: () => void;
  children: ReactNode;
}) {
  return (
    <div className="flex justify-end gap-2">
      <button type="button" className={secondaryButtonClass} onClick={close}>
        Close
      </button>
      {finished ? null : children}
    </div>
  );
}

/**
 * The body every confirming dialog shares: title, what will happen, the target as hidden inputs,
 * the reason (until the action finished), the result, then `after` (e.g. a list of jobs), and the
 * buttons (`submit` until finished, then only "Close").
 */
export function ReasonForm(props: {
  formAction: (data: FormData) => void;
  title: string;
  statement: string;
  hidden: Record<string, string>;
  finished: boolean;
  reason: Parameters<typeof ReasonField>[0];
  result: ReactNode;
  after?: ReactNode;
  close: () => void;
  submit: ReactNode;
  /** Destructive (purge, cancel, delete): on a production database the name must be typed out. */
  destructive?: boolean;
}) {
  return (
    <form action={props.formAction} className="space-y-4 p-5">
      <h2 id={`${props.reason.id}-title`} className="text-lg font-semibold">
        {props.title}
      </h2>
      <p className="text-sm text-slate-700">{props.statement}</p>
      <Hidden fields={props.hidden} />
      {props.finished ? null : <ReasonField {...props.reason} />}
      {props.finished || !props.destructive ? null : <ProductionConfirmField id={props.reason.id} />}
      {props.result}
      {props.after}
      <DialogButtons finished={props.finished} close={props.close}>
        {props.submit}
      </DialogButtons>
    </form>
  );
}

/**
 * A dialog's form for a one-step action (cancel, run now, pause, resume, purge): a reason, then one
 * confirm button. `result` renders the action's state (in the dialog, and later beside the button).
 */
export function ConfirmForm<S extends { status: string; fieldErrors?: { reason?: string } }>(
  props: DialogFormProps<S> & {
    hint: string;
    confirmLabel: string;
    pendingLabel: string;
    danger?: boolean;
    result: (state: S) => ReactNode;
    /** Below the result until the action finished (e.g. an option of the action). */
    options?: ReactNode;
  },
) {
  const [state, formAction, pending] = useActionState<S, FormData>(props.action, { status: "idle" } as Awaited<S>);
  const id = useId();
  const [reason, setReason] = useState("");
  useSettled(state, props.onResult, state.status === "done");
  const finished = state.status === "done" || state.status === "refused";
  return (
    <ReasonForm
      formAction={formAction}
      title={props.title}
      statement={props.statement}
      hidden={props.hidden}
      finished={finished}
      reason={{
        id,
        error: state.status === "error" ? state.fieldErrors?.reason : undefined,
        hint: props.hint,
        value: reason,
        onChange: setReason,
      }}
      result={props.result(state)}
      after={finished ? null : props.options}
      destructive={props.danger}
      close={props.close}
      submit={
        <button type="submit" className={props.danger ? dangerButtonClass : buttonClass} disabled={pending}>
          {pending ? props.pendingLabel : props.confirmLabel}
        </button>
      }
    />
  );
}

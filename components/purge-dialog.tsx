"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { createContext, useActionState, useContext, useEffect, useId, useRef, useState } from "react";
import type { PurgeState } from "@/lib/console/action-state";
import { dangerButtonClass, Field, inputClass, Notice, secondaryButtonClass } from "./ui";

/**
 * Whether the target can still be purged (the job page sets it from live data). When it turns false
 * the trigger button goes, but an open dialog and its result stay, so the operator sees the outcome.
 */
export const PurgeAllowed = createContext(true);

type PurgeAction = (prev: PurgeState, data: FormData) => Promise<PurgeState>;

/**
 * A "Purge…" button that opens a confirmation dialog asking for a reason. `hidden` carries the target
 * (jobId or queue) as hidden inputs. The result (purged count, bindings released, or the refusal) is
 * shown in the dialog and beside the button.
 */
export function PurgeDialog(props: {
  action: PurgeAction;
  hidden: Record<string, string>;
  label: string;
  title: string;
  description: string;
}) {
  // Each opening starts a fresh form (new action state); the last result stays beside the button.
  const [round, setRound] = useState(0);
  const [last, setLast] = useState<PurgeState>({ status: "idle" });
  const dialog = useRef<HTMLDialogElement>(null);
  const allowed = useContext(PurgeAllowed);
  return (
    <div>
      {allowed ? (
        <button
          type="button"
          className={dangerButtonClass}
          onClick={() => {
            setRound((r) => r + 1);
            dialog.current?.showModal();
          }}
        >
          {props.label}
        </button>
      ) : null}
      <dialog
        ref={dialog}
        aria-label={props.title}
        className="m-auto w-[min(32rem,calc(100vw-2rem))] whitespace-normal rounded-lg bg-white p-0 text-slate-900 shadow-xl"
      >
        <PurgeForm key={round} {...props} onResult={setLast} close={() => dialog.current?.close()} />
      </dialog>
      <div className="mt-2">
        <PurgeResult state={last} />
      </div>
    </div>
  );
}

function PurgeForm({
  action,
  hidden,
  title,
  description,
  onResult,
  close,
}: {
  action: PurgeAction;
  hidden: Record<string, string>;
  title: string;
  description: string;
  onResult: (s: PurgeState) => void;
  close: () => void;
}) {
  const [state, formAction, pending] = useActionState<PurgeState, FormData>(action, { status: "idle" });
  const router = useRouter();
  const queryClient = useQueryClient();
  const id = useId();
  // Controlled, so a refused or failed purge keeps the reason typed (React resets uncontrolled fields).
  const [reason, setReason] = useState("");
  useEffect(() => {
    if (state.status === "idle") return;
    onResult(state);
    if (state.status === "done") {
      router.refresh();
      // Live views keep their own cache: refetch now rather than at the next (possibly paused) poll.
      void queryClient.invalidateQueries();
    }
  }, [state, router, queryClient, onResult]);
  const finished = state.status === "done" || state.status === "refused";
  return (
    <form action={formAction} className="space-y-4 p-5">
      <h2 id={`${id}-title`} className="text-lg font-semibold">
        {title}
      </h2>
      <p className="text-sm text-slate-700">{description}</p>
      {Object.entries(hidden).map(([k, v]) => (
        <input key={k} type="hidden" name={k} value={v} />
      ))}
      {finished ? null : (
        <Field
          label="Reason"
          name={`${id}-reason`}
          error={state.status === "error" ? state.fieldErrors.reason : undefined}
          hint="Kept with the tombstone and in the audit log."
        >
          <textarea
            id={`${id}-reason`}
            name="reason"
            rows={3}
            required
            className={inputClass}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
          />
        </Field>
      )}
      <PurgeResult state={state} />
      <div className="flex justify-end gap-2">
        <button type="button" className={secondaryButtonClass} onClick={close}>
          {finished ? "Close" : "Cancel"}
        </button>
        {finished ? null : (
          <button type="submit" className={dangerButtonClass} disabled={pending}>
            {pending ? "Purging…" : "Confirm purge"}
          </button>
        )}
      </div>
    </form>
  );
}

function PurgeResult({ state }: { state: PurgeState }) {
  if (state.status === "done") {
    return (
      <Notice tone="ok" role="status">
        Purged {state.purged} job{state.purged === 1 ? "" : "s"} ({state.target}); released {state.releasedBindings}{" "}
        binding{state.releasedBindings === 1 ? "" : "s"}.
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

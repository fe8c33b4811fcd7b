"use client";
import { createContext, useContext } from "react";
import type { PurgeState } from "@/lib/console/wire/action-state";
import { ConfirmDialog, ConfirmForm, type FormAction } from "./confirm-dialog";
import { Notice } from "./ui";

/**
 * Whether the target can still be purged (the job page sets it from live data). When it turns false
 * the trigger button goes, but an open dialog and its result stay, so the operator sees the outcome.
 */
export const PurgeAllowed = createContext(true);

/**
 * A "Purge…" button that opens a confirmation dialog asking for a reason. `hidden` carries the target
 * (jobId or queue) as hidden inputs. The result (purged count, bindings released, or the refusal) is
 * shown in the dialog and beside the button.
 */
export function PurgeDialog(props: {
  action: FormAction<PurgeState>;
  hidden: Record<string, string>;
  label: string;
  title: string;
  description: string;
}) {
  const allowed = useContext(PurgeAllowed);
  return (
    <ConfirmDialog<PurgeState>
      label={props.label}
      title={props.title}
      danger
      allowed={allowed}
      idle={{ status: "idle" }}
      form={(p) => (
        <ConfirmForm<PurgeState>
          {...p}
          action={props.action}
          hidden={props.hidden}
          title={props.title}
          statement={props.description}
          hint="Kept with the tombstone and in the audit log."
          confirmLabel="Confirm purge"
          pendingLabel="Purging…"
          danger
          result={(state) => <PurgeResult state={state} />}
        />
      )}
      result={(last) => <PurgeResult state={last} />}
    />
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
  return <Refusal state={state} />;
}

/** A refusal, or an error that is not about the reason field (that one shows under the field). */
export function Refusal({ state }: { state: { status: string; message?: string; fieldErrors?: { reason?: string } } }) {
  if (state.status === "refused") {
    return (
      <Notice tone="error" role="alert">
        Refused: {state.message}
      </Notice>
    );
  }
  if (state.status === "error" && !state.fieldErrors?.reason) {
    return (
      <Notice tone="error" role="alert">
        {state.message}
      </Notice>
    );
  }
  return null;
}

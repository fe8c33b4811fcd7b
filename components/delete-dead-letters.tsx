"use client";
import { useState } from "react";
import type { OperatorActionState } from "@/lib/console/wire/action-state";
import { ActionResult } from "./action-dialog";
import { ConfirmDialog, ConfirmForm, type DialogFormProps, type FormAction } from "./confirm-dialog";

/**
 * "Delete…" for dead letters (a selection or a whole group): a dialog that says what will be deleted,
 * asks for a reason, and offers the one explicit choice the core needs: whether failed jobs that still
 * own a live idempotency key are deleted too (their keys released) or kept. The result stays beside
 * the button.
 */
export function DeleteDeadLettersDialog(props: {
  action: FormAction<OperatorActionState>;
  hidden: Record<string, string>;
  label: string;
  title: string;
  statement: string;
  confirmLabel: string;
  disabled?: boolean;
}) {
  return (
    <ConfirmDialog<OperatorActionState>
      label={props.label}
      title={props.title}
      danger
      disabled={props.disabled}
      width="36rem"
      idle={{ status: "idle" }}
      form={(p) => <DeleteForm {...props} {...p} />}
      result={(last) => <ActionResult state={last} />}
    />
  );
}

function DeleteForm(props: DialogFormProps<OperatorActionState> & { confirmLabel: string }) {
  const [releaseKeys, setReleaseKeys] = useState(false);
  return (
    <ConfirmForm<OperatorActionState>
      {...props}
      hint="Kept in the audit log with what was deleted."
      pendingLabel="Deleting…"
      danger
      result={(state) => <ActionResult state={state} />}
      options={
        <label className="flex items-start gap-2 text-sm text-slate-800">
          <input
            type="checkbox"
            name="releaseKeys"
            className="mt-1"
            checked={releaseKeys}
            onChange={(e) => setReleaseKeys(e.target.checked)}
          />
          <span>
            Also delete jobs that own a live key. Their idempotency keys are released: a repeat of their request becomes
            a new job. Left unticked, such jobs are kept and counted.
          </span>
        </label>
      }
    />
  );
}

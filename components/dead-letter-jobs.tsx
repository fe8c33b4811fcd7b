"use client";
import { useState } from "react";
import type { OperatorActionState, RedriveState } from "@/lib/console/wire/action-state";
import { formatTime } from "@/lib/console/wire/format";
import { RedriveDialog } from "./action-dialog";
import { DeleteDeadLettersDialog } from "./delete-dead-letters";
import { Badge, EmptyState, MonoLink, Table, Td } from "./ui";

export interface DeadLetterRow {
  id: string;
  finishedAt: string | null;
  attempt: number;
  message: string | null;
  /** The job the latest redrive of this one made, or null. */
  redrivenTo: string | null;
}

/** One dead-letter group's jobs with checkboxes; the selection can be redriven (dry run first). */
export function DeadLetterJobs(props: {
  jobs: DeadLetterRow[];
  redrive: ((prev: RedriveState, data: FormData) => Promise<RedriveState>) | null;
  remove?: ((prev: OperatorActionState, data: FormData) => Promise<OperatorActionState>) | null;
}) {
  const [selected, setSelected] = useState<Set<string>>(new Set());
  if (props.jobs.length === 0)
    return (
      <EmptyState title="No failed jobs in this group">
        Those redriven already are not listed here by default, and retention may have removed old ones.
      </EmptyState>
    );
  const allOnPage = props.jobs.every((j) => selected.has(j.id));
  const toggle = (id: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  return (
    <div className="space-y-3">
      {props.redrive ? (
        <div className="flex flex-wrap items-start gap-3">
          <p className="py-1.5 text-sm text-slate-700" aria-live="polite">
            {selected.size} selected
          </p>
          <RedriveDialog
            key={[...selected].join(",")}
            action={props.redrive}
            hidden={{ jobIds: [...selected].join(",") }}
            label={`Redrive ${selected.size} selected…`}
            disabled={selected.size === 0}
            title={`Redrive ${selected.size} selected job${selected.size === 1 ? "" : "s"}?`}
            statement="Each selected failed job gets a new ready job with its definition, linked to it; live idempotency keys move to the new jobs. Run the dry run first: it says exactly what would be redriven."
          />
          {props.remove ? (
            <DeleteDeadLettersDialog
              key={`delete-${[...selected].join(",")}`}
              action={props.remove}
              hidden={{ jobIds: [...selected].join(",") }}
              label={`Delete ${selected.size} selected…`}
              disabled={selected.size === 0}
              title={`Delete ${selected.size} failed job${selected.size === 1 ? "" : "s"}?`}
              statement={`The selected failed job${selected.size === 1 ? "" : "s"} and ${selected.size === 1 ? "its" : "their"} timeline${selected.size === 1 ? "" : "s"} are deleted for good; this cannot be undone. Jobs that are no longer failed are left alone.`}
              confirmLabel={`Delete ${selected.size} job${selected.size === 1 ? "" : "s"}`}
            />
          ) : null}
        </div>
      ) : null}
      <Table
        caption="Failed jobs of this group"
        head={[...(props.redrive ? ["Select"] : []), "Job", "Failed", "Attempts", "Message", "Redriven"]}
      >
        {props.jobs.map((j) => (
          <tr key={j.id}>
            {props.redrive ? (
              <Td>
                <input
                  type="checkbox"
                  aria-label={`Select job ${j.id}`}
                  checked={selected.has(j.id)}
                  onChange={() => toggle(j.id)}
                />
              </Td>
            ) : null}
            <Td>
              <MonoLink href={`/jobs/${j.id}`}>{j.id}</MonoLink>
            </Td>
            <Td>{formatTime(j.finishedAt)}</Td>
            <Td>{j.attempt}</Td>
            <Td wrap>{j.message ?? "—"}</Td>
            <Td>
              {j.redrivenTo ? (
                <span className="inline-flex items-center gap-1">
                  <Badge tone="ok">redriven</Badge>
                  <MonoLink href={`/jobs/${j.redrivenTo}`}>…{j.redrivenTo.slice(-8)}</MonoLink>
                </span>
              ) : (
                "—"
              )}
            </Td>
          </tr>
        ))}
      </Table>
      {props.redrive ? (
        <label className="flex items-center gap-2 text-sm">
          <input
            type="checkbox"
            checked={allOnPage}
            onChange={() => setSelected(allOnPage ? new Set() : new Set(props.jobs.map((j) => j.id)))}
          />
          Select all {props.jobs.length} on this page
        </label>
      ) : null}
    </div>
  );
}

"use client";
import { useRef } from "react";
import { Link } from "@/components/db-link";
import type { OperatorActionState, RedriveState } from "@/lib/console/wire/action-state";
import { formatTime } from "@/lib/console/wire/format";
import type { DeadLetterGroupDto } from "@/lib/console/wire/types";
import { RedriveDialog } from "./action-dialog";
import type { FormAction } from "./confirm-dialog";
import { DeleteDeadLettersDialog } from "./delete-dead-letters";
import { Card, EmptyState, linkClass, Table, Td } from "./ui";

const keyOf = (g: DeadLetterGroupDto) => `${g.queue}\u001f${g.type}\u001f${g.errorName}`;

/**
 * The dead-letter groups with a group redrive each. A group whose jobs were all redriven leaves the
 * server's list, but its row stays while the page is open (with "none left"), so the dialog that
 * redrove it keeps its result in view instead of vanishing with the row.
 */
export function DeadLetterGroups(props: {
  groups: DeadLetterGroupDto[];
  redrive: ((prev: RedriveState, data: FormData) => Promise<RedriveState>) | null;
  /** Deleting a whole group (null when read-only), at most `maxGroupDelete` jobs per confirmation. */
  remove: FormAction<OperatorActionState> | null;
  maxGroupDelete: number;
  /** The groups come from the newest failed jobs only: every count is a lower bound ("at least"). */
  atLeast?: boolean;
}) {
  const seen = useRef(new Map<string, DeadLetterGroupDto>());
  const now = new Map(props.groups.map((g) => [keyOf(g), g]));
  for (const [k, g] of now) seen.current.set(k, g);
  const rows = [...seen.current.entries()].map(([k, g]) => ({ g, gone: !now.has(k) }));
  const jobs = (n: number) =>
    `${props.atLeast ? "at least " : ""}${n.toLocaleString("en-US")} job${n === 1 && !props.atLeast ? "" : "s"}`;
  const failedJobs = (n: number) =>
    `${props.atLeast ? "at least " : ""}${n.toLocaleString("en-US")} failed job${n === 1 && !props.atLeast ? "" : "s"}`;
  if (rows.length === 0) {
    return (
      <EmptyState title="No failed jobs">
        Jobs that run out of attempts or pass their deadline show up here (those redriven already are not listed).
      </EmptyState>
    );
  }
  return (
    <Card>
      <Table
        caption="Failed jobs by queue, type and error"
        head={[
          "Queue",
          "Type",
          "Error",
          "Failed jobs",
          "Newest",
          "Newest message",
          ...(props.redrive ? ["Action"] : []),
        ]}
      >
        {rows.map(({ g, gone }) => {
          const href = `/dead-letters?${new URLSearchParams({ queue: g.queue, type: g.type, errorName: g.errorName }).toString()}`;
          return (
            <tr key={keyOf(g)}>
              <Td>{g.queue}</Td>
              <Td>{g.type}</Td>
              <Td>{g.errorName}</Td>
              <Td>
                {gone ? (
                  <span className="text-slate-700">none left (redriven or removed)</span>
                ) : (
                  <Link className={linkClass} href={href}>
                    {jobs(g.count)}
                  </Link>
                )}
              </Td>
              <Td>{formatTime(g.newestFinishedAt)}</Td>
              <Td wrap>{g.newestMessage ?? "—"}</Td>
              {props.redrive ? (
                <Td wrap className="min-w-40 space-y-2">
                  <RedriveDialog
                    action={props.redrive}
                    allowed={!gone}
                    hidden={{ group: "1", groupQueue: g.queue, groupType: g.type, groupErrorName: g.errorName }}
                    label="Redrive group…"
                    title={`Redrive ${failedJobs(g.count)}?`}
                    statement={`Every failed job of queue ${g.queue}, type ${g.type} with error ${g.errorName} (${props.atLeast ? "at least " : ""}${g.count} now) gets a new ready job with its definition, linked to it; live idempotency keys move to the new jobs. Jobs redriven before are left alone. Run the dry run first: it says exactly what would be redriven.`}
                  />
                  {props.remove ? (
                    <DeleteDeadLettersDialog
                      action={props.remove}
                      disabled={gone}
                      hidden={{ group: "1", groupQueue: g.queue, groupType: g.type, groupErrorName: g.errorName }}
                      label="Delete group…"
                      title={`Delete ${failedJobs(g.count)}?`}
                      statement={`Every failed job of queue ${g.queue}, type ${g.type} with error ${g.errorName} (${props.atLeast ? "at least " : ""}${g.count} now, at most ${props.maxGroupDelete.toLocaleString("en-US")} per confirmation) is deleted for good with its timeline; this cannot be undone.`}
                      confirmLabel={props.atLeast ? "Delete the group's jobs" : `Delete ${jobs(g.count)}`}
                    />
                  ) : null}
                </Td>
              ) : null}
            </tr>
          );
        })}
      </Table>
    </Card>
  );
}

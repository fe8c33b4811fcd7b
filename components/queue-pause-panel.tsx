"use client";
import { useRef } from "react";
import type { OperatorActionState } from "@/lib/console/wire/action-state";
import { formatTime } from "@/lib/console/wire/format";
import type { QueuePauseDto } from "@/lib/console/wire/types";
import { ActionDialog } from "./action-dialog";
import { Badge, Card, Table, Td } from "./ui";

/**
 * Pause / resume per queue, with who paused a queue, when and why. Workers claim nothing from a
 * paused queue; running jobs finish. Read-only viewers see the states without the buttons.
 */
export function QueuePausePanel(props: {
  queues: string[];
  paused: QueuePauseDto[];
  action: ((prev: OperatorActionState, data: FormData) => Promise<OperatorActionState>) | null;
}) {
  const byQueue = new Map(props.paused.map((p) => [p.queue, p]));
  // Rows never vanish while the page is open (a queue whose last job just ran would otherwise drop
  // out on refresh, taking an open dialog and its result with it).
  const seen = useRef(new Set<string>());
  for (const q of [...props.queues, ...byQueue.keys()]) seen.current.add(q);
  const names = [...seen.current].sort();
  return (
    <Card title="Pause and resume">
      {names.length === 0 ? (
        <p className="text-sm text-slate-600">No queues yet.</p>
      ) : (
        <Table
          caption="Queues, paused or running"
          head={
            props.action
              ? ["Queue", "Status", "Paused by", "Since", "Reason", "Action"]
              : ["Queue", "Status", "Paused by", "Since", "Reason"]
          }
        >
          {names.map((q) => {
            const p = byQueue.get(q);
            return (
              <tr key={q}>
                <Td>{q}</Td>
                <Td>{p ? <Badge tone="purged">paused</Badge> : <Badge>running</Badge>}</Td>
                <Td>{p?.pausedBy ?? "—"}</Td>
                <Td>{p ? formatTime(p.pausedAt) : "—"}</Td>
                <Td wrap>{p?.reason ?? "—"}</Td>
                {props.action ? (
                  <Td>
                    {/* Two dialogs, each with its own words: after a pause the live refresh hides the
                        pause button, but its open dialog keeps its title beside its result. */}
                    <ActionDialog
                      action={props.action}
                      allowed={!p}
                      hidden={{ queue: q, action: "pause" }}
                      label={`Pause ${q}…`}
                      title={`Pause queue “${q}”?`}
                      statement="Workers claim no new jobs from this queue until it is resumed (every worker sees this by its next poll). Jobs already running finish."
                      confirmLabel="Confirm pause"
                      hint="Kept in the audit log and shown beside the queue while it is paused."
                    />
                    <ActionDialog
                      action={props.action}
                      allowed={!!p}
                      hidden={{ queue: q, action: "resume" }}
                      label={`Resume ${q}…`}
                      title={`Resume queue “${q}”?`}
                      statement="Workers start claiming this queue's jobs again right away."
                      confirmLabel="Confirm resume"
                      hint="Kept in the audit log."
                    />
                  </Td>
                ) : null}
              </tr>
            );
          })}
        </Table>
      )}
    </Card>
  );
}

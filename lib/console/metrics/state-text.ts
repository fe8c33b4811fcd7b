/**
 * The state gauges of `GET /metrics` in the Prometheus text format (version 0.0.4), and the decisions
 * and key releases counted from the database (`workhorse_queue_decisions_total`,
 * `workhorse_key_releases_total`), written straight from one
 * `StateSnapshot` (docs/observability.md): every queue of the snapshot and nothing else, so
 * a queue that is gone leaves the page at the next read, and there is no series limit. (Through the
 * OpenTelemetry SDK a collection repeats every attribute set it has ever seen, caps an instrument
 * at 2,000 of them, and costs seconds for 5,000 queues.) Names, labels, help and units are those the
 * SDK's serializer gives the same gauges (`StateGauges.register`).
 */
import { DECISION_COUNTS, KEY_RELEASE_COUNTS, STATE_GAUGES, type StateSnapshot } from "@workhorse/core";

type Key = keyof typeof STATE_GAUGES;

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
export function labelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** `# HELP`, `# UNIT` and `# TYPE` of a metric family; returns its Prometheus name. */
export function familyHead(out: string[], name: string, description: string, unit: string, type: string): string {
  const n = name.replaceAll(".", "_");
  out.push(`# HELP ${n} ${description.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`);
  out.push(`# UNIT ${n} ${unit}`, `# TYPE ${n} ${type}`);
  return n;
}

/**
 * Prometheus text for the state gauges of `s` (one line per queue and gauge; bindings once), every
 * line labelled `database="<name>"` when `database` is given (the console's configured name).
 */
export function stateGaugesText(s: StateSnapshot, database?: string): string {
  const SCOPE = `${database === undefined ? "" : `database="${labelValue(database)}",`}otel_scope_name="workhorse"`;
  const out: string[] = [];
  const head = (key: Key) =>
    familyHead(out, STATE_GAUGES[key].name, STATE_GAUGES[key].description, STATE_GAUGES[key].unit, "gauge");
  const at = s.queues.map((q) => `messaging_system="workhorse",messaging_destination_name="${labelValue(q.queue)}"`);
  const n = head("depth");
  for (const state of ["scheduled", "ready", "active"] as const) {
    s.queues.forEach((q, i) => {
      out.push(`${n}{${at[i]},workhorse_job_state="${state}",${SCOPE}} ${q.depth[state]}`);
    });
  }
  const perQueue = (key: Key, value: (q: StateSnapshot["queues"][number]) => number) => {
    const name = head(key);
    s.queues.forEach((q, i) => {
      out.push(`${name}{${at[i]},${SCOPE}} ${value(q)}`);
    });
  };
  perQueue("lag", (q) => q.lagSeconds);
  perQueue("deadLetters", (q) => q.deadLetters);
  perQueue("workers", (q) => q.workers);
  perQueue("paused", (q) => (q.paused ? 1 : 0));
  const b = head("bindings");
  out.push(`${b}{workhorse_binding_state="live",${SCOPE}} ${s.bindings.live}`);
  out.push(`${b}{workhorse_binding_state="expired",${SCOPE}} ${s.bindings.expired}`);
  out.push(`${head("oldestExpired")}{${SCOPE}} ${s.bindings.oldestExpiredAgeSeconds}`);
  /** A counter family per queue and one more label; absent while it has no series. */
  const counter = (
    metric: { name: string; description: string; unit: string },
    label: string,
    rows: Array<{ queue: string; label: string; total: number }>,
  ) => {
    if (rows.length === 0) return;
    const name = familyHead(out, `${metric.name}_total`, metric.description, metric.unit, "counter");
    for (const x of rows) {
      out.push(
        `${name}{messaging_system="workhorse",messaging_destination_name="${labelValue(x.queue)}",${label}="${labelValue(x.label)}",${SCOPE}} ${x.total}`,
      );
    }
  };
  counter(
    DECISION_COUNTS,
    "workhorse_enqueue_outcome",
    s.decisions.map((x) => ({ queue: x.queue, label: x.outcome, total: x.total })),
  );
  counter(
    KEY_RELEASE_COUNTS,
    "workhorse_key_release_reason",
    s.keyReleases.map((x) => ({ queue: x.queue, label: x.reason, total: x.total })),
  );
  return `${out.join("\n")}\n`;
}

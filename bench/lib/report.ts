/** Rendering: the terminal table and the Markdown results section. */
import type { Summary } from "./measure";

export interface WriteRow {
  scenario: "accept" | "replay" | "conflict" | "batch" | "debounce" | "throttle";
  callers: number;
  contender: string;
  label: string;
  /** Jobs (requests) per call: 1, or the batch size. */
  jobsPerCall: number;
  summary: Summary;
  jobsPerSec: number;
  /** WAL bytes per job (accepted job for accept, request for replay/batch); null off PostgreSQL. */
  walBytesPerJob: number | null;
  /** The bench process's CPU per job (request), µs, user + system: the client's cost. */
  clientUsPerJob: number;
  /** The server's CPU per job (request), µs (PostgreSQL's processes, or redis-server); null when not readable. */
  serverUsPerJob: number | null;
  /** Our throughput divided by this row's, same scenario and callers (>1: we are faster). */
  oursOverThis: number | null;
}

export interface ReadRow {
  id: string;
  label: string;
  runs: number;
  p50: number;
  p95: number;
  max: number;
  plan?: string;
  sharedBuffers?: number;
}

export interface TargetRow {
  target: string;
  measured: string;
  met: boolean;
}

export const SCENARIO_TITLES: Record<WriteRow["scenario"], string> = {
  accept: "keyed accept (new key per call)",
  replay: "keyed replay (live key, same request)",
  conflict: "conflict (live key, different payload: time to the typed error)",
  batch: "batch (1,000 keyed requests per call, half new)",
  debounce: "debounce repeat (live key, pending job: replaced in place)",
  throttle: "throttle repeat (live key, same request: coalesced)",
};

const SCENARIOS = Object.keys(SCENARIO_TITLES) as WriteRow["scenario"][];

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => (Number.isFinite(n) ? (n < 10 ? n.toFixed(2) : n.toFixed(1)) : "-");
const ratio = (n: number | null) => (n === null ? "" : `${n.toFixed(2)}x`);
const us = (n: number | null) => (n === null ? "" : n < 10 ? n.toFixed(1) : Math.round(n).toLocaleString("en-US"));

/** The contenders Workhorse's client CPU is compared with, in the CPU table's column order. */
export const CPU_COMPARED = [
  { id: "floor", title: "floor" },
  { id: "pg-boss", title: "pg-boss" },
  { id: "graphile", title: "graphile-worker" },
  { id: "bullmq-pg", title: "BullMQ (PostgreSQL)" },
] as const;

/**
 * One row per scenario and caller count: Workhorse's client CPU per request (µs) and, per compared
 * contender, its own and Workhorse's divided by it (above 1: Workhorse spends more).
 */
function cpuRatioRows(rows: WriteRow[]): string[][] {
  const out: string[][] = [];
  for (const scenario of SCENARIOS) {
    for (const callers of [...new Set(rows.filter((r) => r.scenario === scenario).map((r) => r.callers))]) {
      const at = (id: string) =>
        rows.find((r) => r.scenario === scenario && r.callers === callers && r.contender === id);
      const mine = at("ours");
      if (!mine) continue;
      const cells = CPU_COMPARED.map(({ id }) => {
        const other = at(id);
        return other ? `${us(other.clientUsPerJob)} (${ratio(mine.clientUsPerJob / other.clientUsPerJob)})` : "";
      });
      out.push([SCENARIO_SHORT[scenario], String(callers), us(mine.clientUsPerJob), us(mine.serverUsPerJob), ...cells]);
    }
  }
  return out;
}

const SCENARIO_SHORT: Record<WriteRow["scenario"], string> = {
  accept: "keyed accept",
  replay: "replay",
  conflict: "conflict",
  batch: "batched request",
  debounce: "debounce",
  throttle: "throttle",
};

const CPU_HEADER = [
  "scenario",
  "callers",
  "Workhorse client µs/req",
  "Workhorse server µs/req",
  ...CPU_COMPARED.map((c) => `${c.title} client µs (Workhorse ÷ it)`),
];

/** The client CPU table that opens the results (terminal). */
export function terminalCpu(rows: WriteRow[]): string {
  return table(CPU_HEADER, cpuRatioRows(rows), 1);
}

/** The client CPU table that opens the results (Markdown). */
export function markdownCpu(rows: WriteRow[]): string {
  return mdTable(CPU_HEADER, cpuRatioRows(rows), ["l", ...CPU_HEADER.slice(1).map(() => "r" as const)]);
}

function table(header: string[], rows: string[][], rightFrom = 1): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const fmt = (r: string[]) =>
    r.map((c, i) => (i >= rightFrom ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join("  ");
  return [fmt(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(fmt)].join("\n");
}

export function terminalWrites(rows: WriteRow[]): string {
  const out: string[] = [];
  for (const scenario of SCENARIOS) {
    const of = rows.filter((r) => r.scenario === scenario);
    if (!of.length) continue;
    out.push(`\n${SCENARIO_TITLES[scenario]}`);
    out.push(
      table(
        [
          "callers",
          "contender",
          scenario === "batch" ? "jobs/s" : "calls/s",
          "p50 ms",
          "p95 ms",
          "p99 ms",
          "ours ÷ this",
          "WAL B/job",
          "client µs/req",
          "server µs/req",
        ],
        of.map((r) => [
          String(r.callers),
          r.label,
          int(r.jobsPerSec),
          ms(r.summary.p50),
          ms(r.summary.p95),
          ms(r.summary.p99),
          ratio(r.oursOverThis),
          r.walBytesPerJob === null ? "" : int(r.walBytesPerJob),
          us(r.clientUsPerJob),
          us(r.serverUsPerJob),
        ]),
        2,
      ),
    );
  }
  return out.join("\n");
}

export function terminalReads(rows: ReadRow[]): string {
  return table(
    ["query", "p50 ms", "p95 ms", "max ms", "buffers", "plan"],
    rows.map((r) => [
      r.label,
      ms(r.p50),
      ms(r.p95),
      ms(r.max),
      r.sharedBuffers === undefined ? "" : int(r.sharedBuffers),
      r.plan ?? "",
    ]),
    1,
  )
    .split("\n")
    .map((l) => l.trimEnd())
    .join("\n");
}

export function terminalTargets(rows: TargetRow[]): string {
  return table(
    ["target", "measured", "met"],
    rows.map((r) => [r.target, r.measured, r.met ? "yes" : "NO"]),
    3,
  );
}

function mdTable(header: string[], rows: string[][], align: ("l" | "r")[]): string {
  const sep = align.map((a) => (a === "r" ? "---:" : "---"));
  return [header, sep, ...rows].map((r) => `| ${r.join(" | ")} |`).join("\n");
}

export function markdownWrites(rows: WriteRow[]): string {
  const out: string[] = [];
  for (const scenario of SCENARIOS) {
    const of = rows.filter((r) => r.scenario === scenario);
    if (!of.length) continue;
    out.push(`#### ${SCENARIO_TITLES[scenario]}\n`);
    out.push(
      mdTable(
        [
          "callers",
          "contender",
          scenario === "batch" ? "jobs/s" : "calls/s",
          "p50 ms",
          "p95 ms",
          "p99 ms",
          "ours ÷ this",
          "WAL B/job",
          "client µs/req",
          "server µs/req",
        ],
        of.map((r) => [
          String(r.callers),
          r.label,
          int(r.jobsPerSec),
          ms(r.summary.p50),
          ms(r.summary.p95),
          ms(r.summary.p99),
          ratio(r.oursOverThis),
          r.walBytesPerJob === null ? "n/a" : int(r.walBytesPerJob),
          us(r.clientUsPerJob),
          r.serverUsPerJob === null ? "n/a" : us(r.serverUsPerJob),
        ]),
        ["r", "l", "r", "r", "r", "r", "r", "r", "r", "r"],
      ),
    );
    out.push("");
  }
  return out.join("\n");
}

export function markdownReads(rows: ReadRow[]): string {
  return mdTable(
    ["query", "p50 ms", "p95 ms", "max ms", "buffers", "plan (one EXPLAIN ANALYZE)"],
    rows.map((r) => [
      r.label,
      ms(r.p50),
      ms(r.p95),
      ms(r.max),
      r.sharedBuffers === undefined ? "" : int(r.sharedBuffers),
      r.plan ? `\`${r.plan}\`` : "",
    ]),
    ["l", "r", "r", "r", "r", "l"],
  );
}

export function markdownTargets(rows: TargetRow[]): string {
  return mdTable(
    ["target", "measured", "met"],
    rows.map((r) => [r.target, r.measured, r.met ? "yes" : "**no**"]),
    ["l", "l", "l"],
  );
}

export const fmt = { int, ms, ratio, us };

import "server-only";
/**
 * The console's Prometheus endpoint (`GET /metrics`, docs/observability.md): off (404) unless
 * `WORKHORSE_METRICS_TOKEN` is set, and then answered only to `Authorization: Bearer <token>`
 * (401 otherwise, before anything is read or computed). No console session is needed. It serves
 * the state gauges (one cached read of PostgreSQL per 15 s, however many scrapers) and the core
 * metrics of this console process (its own enqueues and operator actions), in the Prometheus text
 * format: the process's own metrics through the SDK's Prometheus exporter used as a pull reader, the
 * state gauges written from their snapshot (state-text.ts).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
import { StateGauges, type StateSnapshot } from "@workhorse/core";
import type { DatabaseConfig } from "../databases/databases";
import { consoleDatabases, openDatabase } from "../databases/db";
import { consoleMetrics, metricsToken } from "./meter";
import { stateGaugesText } from "./state-text";

/** Whether `authorization` is `Bearer <token>`: compared in constant time (over SHA-256 digests, so lengths leak nothing). */
export function bearerMatches(authorization: string | null, token: string): boolean {
  const m = /^Bearer +(\S+)$/i.exec(authorization ?? "");
  const given = createHash("sha256")
    .update(m ? (m[1] as string) : "")
    .digest();
  const expected = createHash("sha256").update(token).digest();
  return timingSafeEqual(given, expected) && m !== null;
}

const TEXT = "text/plain; version=0.0.4; charset=utf-8";

function plain(status: number, body: string, extra: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", ...extra },
  });
}

/** `GET /metrics`. */
export async function metricsResponse(request: Request): Promise<Response> {
  const token = metricsToken();
  if (!token) {
    return plain(
      404,
      "404 Not Found: metrics are off (WORKHORSE_METRICS_TOKEN is unset or shorter than 16 characters).\n",
    );
  }
  if (!bearerMatches(request.headers.get("authorization"), token)) {
    return plain(401, "401 Unauthorized: send Authorization: Bearer <WORKHORSE_METRICS_TOKEN>.\n", {
      "www-authenticate": 'Bearer realm="workhorse-metrics"',
    });
  }
  const m = consoleMetrics();
  m.gauges ??= new Map();
  const gauges = m.gauges;
  const databases = consoleDatabases();
  for (const d of databases) {
    if (!gauges.has(d.name)) gauges.set(d.name, new StateGauges(openDatabase(d).pool, { maxAgeMs: stateMaxAgeMs() }));
  }
  try {
    // Every database's state, read at once, written from its snapshot (state-text.ts) with its
    // `database` label; a database whose read fails is left out (logged), the others still answer.
    const [{ resourceMetrics, errors }, ...states] = await Promise.all([
      m.exporter.collect(),
      ...databases.map((d) =>
        (gauges.get(d.name) as StateGauges).read().catch((err: unknown) => {
          console.error(`[console] metrics (${d.name}): ${(err as Error)?.message ?? String(err)}`);
          return null;
        }),
      ),
    ]);
    for (const err of errors) console.error(`[console] metrics: ${(err as Error)?.message ?? String(err)}`);
    const body = new PrometheusSerializer().serialize(resourceMetrics) + stateFamilies(databases, states);
    return new Response(body, { status: 200, headers: { "content-type": TEXT, "cache-control": "no-store" } });
  } catch (err) {
    console.error(`[console] metrics failed: ${(err as Error)?.message ?? String(err)}`);
    return plain(503, "503 Service Unavailable: the metrics could not be collected. Try again shortly.\n");
  }
}

/**
 * The state lines of every database, grouped by metric family (the text format wants one family's
 * lines together, after one HELP/TYPE): each database's text is split at its family heads and the
 * families are joined in the order the first database gave them.
 */
function stateFamilies(databases: readonly DatabaseConfig[], states: (StateSnapshot | null)[]): string {
  const families = new Map<string, string[]>();
  databases.forEach((d, i) => {
    const state = states[i];
    if (!state) return;
    let head = "";
    for (const line of stateGaugesText(state, d.name).split("\n")) {
      if (line === "") continue;
      if (line.startsWith("# HELP ")) head = line;
      if (!families.has(head)) families.set(head, []);
      const lines = families.get(head) as string[];
      if (!line.startsWith("#") || !lines.includes(line)) lines.push(line);
    }
  });
  return [...families.values()].map((lines) => `${lines.join("\n")}\n`).join("");
}

/** `WORKHORSE_METRICS_MAX_AGE_MS`: how long one read of the state serves (default 15,000; at least 1,000). */
function stateMaxAgeMs(): number {
  const v = Number(process.env.WORKHORSE_METRICS_MAX_AGE_MS ?? 15_000);
  return Number.isInteger(v) && v >= 1000 && v <= 3_600_000 ? v : 15_000;
}

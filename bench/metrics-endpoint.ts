/**
 * What `/metrics` costs at scale: the state gauges' statements (and the decisions counted since the
 * previous read) and the whole scrape (the process's metrics collected and serialised by the SDK,
 * the state written from its snapshot, as lib/console/metrics/metrics.ts does it) over a database seeded with
 * bench/read-surface.ts's rows (1,000,000 jobs and bindings by default).
 *
 *   npx tsx bench/metrics-endpoint.ts [--rows=1000000] [--runs=50]
 *
 * Cold: every scrape reads PostgreSQL (maxAgeMs 0; what the first scrape, or one after twice the
 * cache age, waits for). Cached: the default 15 s cache, as scrapes between reads see it.
 */
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { migrate, StateGauges } from "@workhorse/core";
import pg from "pg";
import { stateGaugesText } from "../lib/console/metrics/state-text";
import { startBenchServer } from "./lib/env";
import { seed } from "./read-surface";

const flags = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const ROWS = Number(flags.get("rows") ?? 1_000_000);
const RUNS = Number(flags.get("runs") ?? 50);

const server = await startBenchServer();
const url = await server.freshDatabase("bench_metrics");
const pool = new pg.Pool({ connectionString: url, max: 2 });
try {
  await migrate(pool);
  const t0 = performance.now();
  await seed(pool, ROWS);
  console.log(
    `[bench] seeded ${ROWS.toLocaleString("en-US")} jobs in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );
  const pct = (xs: number[], p: number) =>
    [...xs].sort((a, b) => a - b)[Math.ceil((p / 100) * xs.length) - 1] as number;
  for (const [label, maxAgeMs] of [
    ["cold (every scrape reads PostgreSQL)", 0],
    ["cached (15 s)", 15_000],
  ] as const) {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const meterProvider = new MeterProvider({ readers: [exporter] });
    const gauges = new StateGauges(pool, { maxAgeMs });
    const scrape = async () => {
      const [{ resourceMetrics }, state] = await Promise.all([exporter.collect(), gauges.read()]);
      return new PrometheusSerializer().serialize(resourceMetrics) + stateGaugesText(state);
    };
    for (let i = 0; i < 3; i++) await scrape();
    const ms: number[] = [];
    let bytes = 0;
    for (let i = 0; i < RUNS; i++) {
      const s = performance.now();
      bytes = (await scrape()).length;
      ms.push(performance.now() - s);
    }
    console.log(
      `${label}: p50 ${pct(ms, 50).toFixed(2)} ms, p95 ${pct(ms, 95).toFixed(2)} ms, max ${Math.max(...ms).toFixed(2)} ms (${RUNS} scrapes, ${bytes} bytes)`,
    );
    await meterProvider.shutdown();
  }
} finally {
  await pool.end();
  await server.stop();
}

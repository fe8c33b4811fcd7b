// `npm run example -- --otel`: the OpenTelemetry SDK wired as an application would (explicit
// providers here; `metrics.setGlobalMeterProvider` works the same), a pull reader for the metrics,
// an in-memory exporter for the spans, and the state gauges on the same provider. At the end it
// prints every metric point and span the example recorded.
import { MeterProvider, type MetricData, MetricReader } from "@opentelemetry/sdk-metrics";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { StateGauges, type TelemetryOptions } from "@workhorse/core";
import type pg from "pg";

/** A reader the example collects from on demand (the Prometheus exporter is one such reader). */
class PullReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

export function exampleTelemetry(pool: pg.Pool) {
  const reader = new PullReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spans = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] });
  new StateGauges(pool).register(meterProvider);
  const options: TelemetryOptions = { meterProvider, tracerProvider, scopes: ["invoice-capture"] };
  return {
    options,
    async print(): Promise<void> {
      const { resourceMetrics } = await reader.collect();
      console.log("\nMetrics recorded (name [unit] {attributes} value):");
      for (const m of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)) printMetric(m);
      console.log("\nSpans recorded (name, kind, attributes, events):");
      for (const s of spans.getFinishedSpans()) {
        const events = s.events.map((e) => `${e.name}${e.attributes ? ` ${JSON.stringify(e.attributes)}` : ""}`);
        console.log(
          `  ${s.name} (${["internal", "server", "client", "producer", "consumer"][s.kind]}) ${JSON.stringify(s.attributes)}${events.length ? ` events: ${events.join("; ")}` : ""}`,
        );
      }
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  };
}

function printMetric(m: MetricData): void {
  for (const p of m.dataPoints) {
    const v = p.value as number | { count: number; sum?: number };
    const shown = typeof v === "number" ? String(v) : `count ${v.count}, sum ${(v.sum ?? 0).toFixed(4)}`;
    const attrs = Object.entries(p.attributes)
      .filter(([k]) => k !== "messaging.system")
      .map(([k, val]) => `${k}=${JSON.stringify(val)}`)
      .join(", ");
    console.log(`  ${m.descriptor.name} [${m.descriptor.unit}] {${attrs}} ${shown}`);
  }
}

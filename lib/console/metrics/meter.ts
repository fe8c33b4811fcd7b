import "server-only";
/**
 * The console process's OpenTelemetry meter provider, read by `GET /metrics` (metrics.ts) and
 * given to the console's own `Queue` (db.ts) when metrics are on.
 */
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import type { StateGauges } from "@workhorse/core";

import { MIN_TOKEN_LENGTH } from "../databases/config";

interface ConsoleMetrics {
  meterProvider: MeterProvider;
  exporter: PrometheusExporter;
  /** One per configured database, made on the first authorised scrape; serialized by metrics.ts from their snapshots, not through the SDK. */
  gauges: Map<string, StateGauges> | null;
}

const g = globalThis as { __workhorseConsoleMetrics?: ConsoleMetrics };

/** The console process's meter provider (made on first use; kept on globalThis across dev reloads). */
export function consoleMetrics(): ConsoleMetrics {
  if (!g.__workhorseConsoleMetrics) {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    g.__workhorseConsoleMetrics = { meterProvider: new MeterProvider({ readers: [exporter] }), exporter, gauges: null };
  }
  return g.__workhorseConsoleMetrics;
}

/** The configured token, or null when metrics are off. */
export function metricsToken(env: Record<string, string | undefined> = process.env): string | null {
  const token = env.WORKHORSE_METRICS_TOKEN;
  return token && token.length >= MIN_TOKEN_LENGTH ? token : null;
}

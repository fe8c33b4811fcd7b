import { metricsResponse } from "@/lib/console/metrics/metrics";

export const dynamic = "force-dynamic";

/** Prometheus text; bearer token only (WORKHORSE_METRICS_TOKEN), no console session (docs/observability.md). */
export function GET(request: Request) {
  return metricsResponse(request);
}

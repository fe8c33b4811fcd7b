/**
 * The console's live JSON endpoints (app/api/*), one place for their URLs. Client components poll
 * them through `useLive`; each route returns the same DTO the server-rendered page started from.
 * `query` is the page's own search string ("" or "?queue=billing…"), already built from the
 * filter allowlist (lib/console/reads/filters.ts).
 */
export const liveUrl = {
  overview: () => "/api/overview",
  workers: () => "/api/workers",
  maintenance: () => "/api/maintenance",
  queues: (queue?: string) => (queue === undefined ? "/api/queues" : `/api/queues?queue=${encodeURIComponent(queue)}`),
  job: (id: string) => `/api/jobs/${encodeURIComponent(id)}`,
  jobs: (query: string) => `/api/jobs${query}`,
  bindings: (query: string) => `/api/bindings${query}`,
  conflicts: (query: string) => `/api/conflicts${query}`,
  audit: (query: string) => `/api/audit${query}`,
  series: (params: URLSearchParams) => `/api/series?${params}`,
} as const;

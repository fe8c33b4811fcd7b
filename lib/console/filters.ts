/**
 * Parsing of list filters from URL search params, shared by pages (first render) and `app/api/*`
 * routes (polling). Unknown or malformed values are dropped, never passed to SQL: every column and
 * direction comes from an allowlist, every value is a bound parameter.
 */
import { z } from "zod";
import { BINDING_MODES, JOB_STATES, OBSERVATION_OUTCOMES } from "./types";

export type RawParams = Record<string, string | string[] | undefined> | URLSearchParams;

function get(params: RawParams, name: string): string | undefined {
  const v = params instanceof URLSearchParams ? (params.get(name) ?? undefined) : params[name];
  const s = Array.isArray(v) ? v[0] : v;
  const t = s?.trim();
  // No queue, type, tag, scope or actor holds a control character (PostgreSQL text cannot even
  // hold NUL, and a lone surrogate cannot be sent as UTF-8): such a value filters nothing, drop it.
  return t && !/\p{Cc}/u.test(t) && t.isWellFormed() ? t : undefined;
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uuid = z
  .string()
  .regex(UUID_RE)
  .transform((s) => s.toLowerCase());
const name = z.string().min(1).max(128);
const scope = z.string().min(1).max(256);

function pick<T>(schema: z.ZodType<T>, value: string | undefined): T | undefined {
  if (value === undefined) return undefined;
  const r = schema.safeParse(value);
  return r.success ? r.data : undefined;
}

export interface JobFilters {
  queue?: string;
  type?: string;
  state?: (typeof JOB_STATES)[number];
  tag?: string;
  after?: string;
  before?: string;
}

export function parseJobFilters(params: RawParams): JobFilters {
  return {
    queue: pick(name, get(params, "queue")),
    type: pick(name, get(params, "type")),
    state: pick(z.enum(JOB_STATES), get(params, "state")),
    tag: pick(name, get(params, "tag")),
    after: pick(uuid, get(params, "after")),
    before: pick(uuid, get(params, "before")),
  };
}

export const BINDING_STATUSES = ["live", "expired"] as const;

export interface BindingFilters {
  status: (typeof BINDING_STATUSES)[number];
  scope?: string;
  mode?: (typeof BINDING_MODES)[number];
  /** `<expires_at in microseconds since epoch>_<job id>` */
  after?: { expiresAtUs: string; jobId: string };
}

export function parseBindingFilters(params: RawParams): BindingFilters {
  const rawAfter = get(params, "after");
  let after: BindingFilters["after"];
  if (rawAfter) {
    const i = rawAfter.lastIndexOf("_");
    const t = rawAfter.slice(0, i);
    const id = rawAfter.slice(i + 1);
    if (i > 0 && UUID_RE.test(id) && /^\d{1,17}$/.test(t)) after = { expiresAtUs: t, jobId: id.toLowerCase() };
  }
  return {
    status: pick(z.enum(BINDING_STATUSES), get(params, "status")) ?? "live",
    scope: pick(scope, get(params, "scope")),
    mode: pick(z.enum(BINDING_MODES), get(params, "mode")),
    after,
  };
}

export const TIME_WINDOWS = { "15m": 15 * 60_000, "1h": 3_600_000, "24h": 86_400_000, "7d": 7 * 86_400_000 } as const;
export type TimeWindow = keyof typeof TIME_WINDOWS;

export interface ObservationFilters {
  outcome?: (typeof OBSERVATION_OUTCOMES)[number];
  scope?: string;
  queue?: string;
  since?: TimeWindow;
  after?: string;
}

export function parseObservationFilters(params: RawParams): ObservationFilters {
  return {
    outcome: pick(z.enum(OBSERVATION_OUTCOMES), get(params, "outcome")),
    scope: pick(scope, get(params, "scope")),
    queue: pick(name, get(params, "queue")),
    since: pick(z.enum(Object.keys(TIME_WINDOWS) as [TimeWindow, ...TimeWindow[]]), get(params, "since")),
    after: pick(z.string().regex(/^\d{1,18}$/), get(params, "after")),
  };
}

export const AUDIT_ACTIONS = [
  "enqueue_test",
  "purge_job",
  "purge_queue",
  "run_maintenance",
  "sign_in",
  "sign_out",
  "sign_out_everywhere",
] as const;

export interface AuditFilters {
  action?: (typeof AUDIT_ACTIONS)[number];
  actor?: string;
  /** `<microseconds since epoch>_<id>` */
  after?: { at: string; id: string };
}

export function parseAuditFilters(params: RawParams): AuditFilters {
  const rawAfter = get(params, "after");
  let after: AuditFilters["after"];
  if (rawAfter) {
    const i = rawAfter.lastIndexOf("_");
    const t = rawAfter.slice(0, i);
    const id = rawAfter.slice(i + 1);
    if (i > 0 && UUID_RE.test(id) && /^\d{1,17}$/.test(t)) after = { at: t, id: id.toLowerCase() };
  }
  return {
    action: pick(z.enum(AUDIT_ACTIONS), get(params, "action")),
    actor: pick(z.string().min(1).max(200), get(params, "actor")),
    after,
  };
}

/** Search params for links: drops empty values. */
export function toQuery(values: Record<string, string | undefined | null>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v) sp.set(k, v);
  const s = sp.toString();
  return s ? `?${s}` : "";
}

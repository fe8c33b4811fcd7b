/**
 * Parsing of list filters from URL search params, shared by pages (first render) and `app/api/*`
 * routes (polling). Unknown or malformed values are dropped, never passed to SQL: every column and
 * direction comes from an allowlist, every value is a bound parameter.
 */

import { AUDIT_ACTIONS, isQueueName, ONE_DAY_MS } from "@workhorse/core/client";
import { z } from "zod";
import {
  BINDING_MODES,
  LISTED_OUTCOMES,
  SERIES_WINDOWS,
  type SeriesWindow,
  STATE_TABS,
  type StateTab,
} from "../wire/types";

type RawParams = Record<string, string | string[] | undefined> | URLSearchParams;

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
// Names have no control characters (the core's rule); no filter value may hold NUL, which
// PostgreSQL's text cannot store (the query would fail instead of finding nothing).
const name = z
  .string()
  .min(1)
  .max(128)
  .refine((s) => !/\p{Cc}/u.test(s));
const scope = z
  .string()
  .min(1)
  .max(256)
  .refine((s) => !s.includes("\0"));

function pick<T>(schema: z.ZodType<T>, value: string | undefined): T | undefined {
  if (value === undefined) return undefined;
  const r = schema.safeParse(value);
  return r.success ? r.data : undefined;
}

export interface JobFilters {
  /** Queue, type and tag match by prefix: `invoice` finds `invoice-capture`. */
  queue?: string;
  type?: string;
  state?: StateTab;
  tag?: string;
  /** Only jobs with an error recorded (a failed attempt, retried or not). */
  error?: boolean;
  /** Only pending jobs whose run time has come (what the queues page counts as ready). */
  due?: boolean;
  after?: string;
  before?: string;
}

export function parseJobFilters(params: RawParams): JobFilters {
  return {
    queue: pick(name, get(params, "queue")),
    type: pick(name, get(params, "type")),
    state: pick(z.enum(STATE_TABS), get(params, "state")),
    tag: pick(name, get(params, "tag")),
    error: get(params, "error") === "1" ? true : undefined,
    due: get(params, "due") === "1" ? true : undefined,
    after: pick(uuid, get(params, "after")),
    before: pick(uuid, get(params, "before")),
  };
}

const BINDING_STATUSES = ["live", "expired"] as const;

export interface BindingFilters {
  status: (typeof BINDING_STATUSES)[number];
  scope?: string;
  mode?: (typeof BINDING_MODES)[number];
  /** `<expires_at in microseconds since epoch>_<job id>` */
  after?: { expiresAtUs: string; jobId: string };
}

/** A keyset cursor `<microseconds since epoch>_<uuid>`, the id lower-cased; undefined when absent or malformed. */
function microsCursor(raw: string | undefined): { us: string; id: string } | undefined {
  if (!raw) return undefined;
  const i = raw.lastIndexOf("_");
  const us = raw.slice(0, i);
  const id = raw.slice(i + 1);
  return i > 0 && UUID_RE.test(id) && /^\d{1,17}$/.test(us) ? { us, id: id.toLowerCase() } : undefined;
}

export function parseBindingFilters(params: RawParams): BindingFilters {
  const cursor = microsCursor(get(params, "after"));
  const after: BindingFilters["after"] = cursor && { expiresAtUs: cursor.us, jobId: cursor.id };
  return {
    status: pick(z.enum(BINDING_STATUSES), get(params, "status")) ?? "live",
    scope: pick(scope, get(params, "scope")),
    mode: pick(z.enum(BINDING_MODES), get(params, "mode")),
    after,
  };
}

export const TIME_WINDOWS = { "15m": 15 * 60_000, "1h": 3_600_000, "24h": ONE_DAY_MS, "7d": 7 * ONE_DAY_MS } as const;
type TimeWindow = keyof typeof TIME_WINDOWS;

export interface ObservationFilters {
  outcome?: (typeof LISTED_OUTCOMES)[number];
  /** Scope, queue and type match by prefix. */
  scope?: string;
  queue?: string;
  type?: string;
  /** A 12-hex key digest (exact). */
  digest?: string;
  since?: TimeWindow;
  /** A custom range, UTC (`2026-12-01T02:30` from a datetime-local field, or full ISO). */
  from?: Date;
  to?: Date;
  after?: string;
  /** Filters given but unreadable (not applied), by parameter name, sorted: the page says so. */
  invalid?: string[];
}

/** `YYYY-MM-DDTHH:MM[:SS]` read as UTC (the console shows UTC everywhere), or a full ISO string. */
const utcTime = z
  .string()
  .max(40)
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?$/)
  .transform((s) => new Date(/(Z|[+-]\d{2}:\d{2})$/.test(s) ? s : `${s}Z`))
  .refine((d) => !Number.isNaN(d.getTime()));

export function parseObservationFilters(params: RawParams): ObservationFilters & { invalid: string[] } {
  const f = {
    outcome: pick(z.enum(LISTED_OUTCOMES), get(params, "outcome")),
    scope: pick(scope, get(params, "scope")),
    queue: pick(name, get(params, "queue")),
    type: pick(name, get(params, "type")),
    digest: pick(
      z
        .string()
        .regex(/^[0-9a-fA-F]{12}$/)
        .transform((s) => s.toLowerCase()),
      get(params, "digest"),
    ),
    since: pick(z.enum(Object.keys(TIME_WINDOWS) as [TimeWindow, ...TimeWindow[]]), get(params, "since")),
    from: pick(utcTime, get(params, "from")),
    to: pick(utcTime, get(params, "to")),
    // An observation id, or for `replaced` rows `<microseconds>_<event seq>`.
    after: pick(z.string().regex(/^(\d{1,18}|\d{1,17}_\d{1,18})$/), get(params, "after")),
  };
  const invalid = (["after", "digest", "from", "outcome", "queue", "scope", "since", "to", "type"] as const).filter(
    (k) => get(params, k) !== undefined && f[k] === undefined,
  );
  return { ...f, invalid };
}

export { AUDIT_ACTIONS };

export interface AuditFilters {
  action?: (typeof AUDIT_ACTIONS)[number];
  actor?: string;
  /** `<microseconds since epoch>_<id>` */
  after?: { at: string; id: string };
}

export function parseAuditFilters(params: RawParams): AuditFilters {
  const cursor = microsCursor(get(params, "after"));
  const after: AuditFilters["after"] = cursor && { at: cursor.us, id: cursor.id };
  return {
    action: pick(z.enum(AUDIT_ACTIONS), get(params, "action")),
    actor: pick(
      z
        .string()
        .min(1)
        .max(200)
        .refine((s) => !s.includes("\0")),
      get(params, "actor"),
    ),
    after,
  };
}

interface SeriesParams {
  window: SeriesWindow;
  queue: string | null;
}

/**
 * A queue name exactly as it was enqueued (a `/queues/<name>` path segment, `/api/queues?queue=`,
 * both built from the name itself), or null when the core would refuse it as a queue name. Nothing
 * is trimmed: "orders " and "orders" are two queues, and "orders\n" is none.
 */
export function parseQueueName(value: string | undefined): string | null {
  return isQueueName(value) ? value : null;
}

export function parseSeriesParams(params: RawParams): SeriesParams {
  return {
    window: pick(z.enum(SERIES_WINDOWS), get(params, "window")) ?? "1h",
    queue: pick(name, get(params, "queue")) ?? null,
  };
}

/** Search params for links: drops empty values. */
export function toQuery(values: Record<string, string | undefined | null>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v) sp.set(k, v);
  const s = sp.toString();
  return s ? `?${s}` : "";
}

import "server-only";
/**
 * The fleet page: every configured database's figures at a glance, each read in parallel with its
 * own timeout, so a database that is down, slow or on another schema shows as such (with its error)
 * while the others answer. Never migrates; an old schema comes with the command that migrates it.
 */
import { schemaStatus } from "@/lib/enqueue";
import { fleetExtras } from "@/lib/enqueue/store/console-fleet";
import { selectStateRows } from "@/lib/enqueue/store/state-gauges";
import { type DatabaseConfig, migrateCommand } from "./databases";
import type { ConsoleDb } from "./db";
import { eachDatabase, errorText } from "./deadline";

/** How long one database's read may take before the page shows it as slow. */
export const FLEET_TIMEOUT_MS = 1500;

export interface FleetFigures {
  /** Due pending jobs (ready to be claimed) over every queue. */
  ready: number;
  scheduled: number;
  active: number;
  /** Seconds since the oldest due job became due (0 when none is). */
  oldestReadySeconds: number;
  deadLetters: number;
  conflictsLastHour: number;
  replaysLastHour: number;
  workers: number;
}

export interface FleetEntry {
  name: string;
  production: boolean;
  readonly: boolean;
  /** `ok`; `old`/`missing`: the schema is behind this console; `newer`: ahead of it; `down`: an error; `slow`: no answer in time. */
  status: "ok" | "old" | "missing" | "newer" | "down" | "slow";
  /** What went wrong (down, slow), or what to do (old, missing, newer). */
  message: string | null;
  schemaVersion: number | null;
  figures: FleetFigures | null;
  readMs: number;
}

async function figuresOf(db: ConsoleDb): Promise<FleetFigures> {
  const [rows, extras] = await Promise.all([selectStateRows(db.pool), fleetExtras(db.pool)]);
  const f: FleetFigures = {
    ready: 0,
    scheduled: 0,
    active: 0,
    oldestReadySeconds: 0,
    deadLetters: 0,
    conflictsLastHour: Number(extras?.conflicts ?? 0),
    replaysLastHour: Number(extras?.replays ?? 0),
    workers: Number(extras?.workers ?? 0),
  };
  for (const r of rows) {
    if (r.metric === "depth" && (r.label === "ready" || r.label === "scheduled" || r.label === "active")) {
      f[r.label] += r.value;
    } else if (r.metric === "lag") f.oldestReadySeconds = Math.max(f.oldestReadySeconds, r.value);
    else if (r.metric === "dead_letters") f.deadLetters += r.value;
  }
  return f;
}

async function readOne(config: DatabaseConfig, db: ConsoleDb): Promise<Omit<FleetEntry, "readMs">> {
  const base = { name: config.name, production: config.production, readonly: config.readonly };
  const schema = await schemaStatus(db.pool);
  if (schema.state === "missing") {
    return {
      ...base,
      status: "missing",
      message: `No Workhorse schema: run \`${migrateCommand(config.name)}\`.`,
      schemaVersion: null,
      figures: null,
    };
  }
  const figures = await figuresOf(db).catch(() => null);
  if (schema.state === "old") {
    return {
      ...base,
      status: "old",
      message: `Schema version ${schema.version}, this console needs ${schema.latest}: run \`${migrateCommand(config.name)}\`.`,
      schemaVersion: schema.version,
      figures,
    };
  }
  if (schema.state === "newer") {
    return {
      ...base,
      status: "newer",
      message: `Schema version ${schema.version} is newer than this console knows (${schema.latest}): deploy the newer console.`,
      schemaVersion: schema.version,
      figures,
    };
  }
  return {
    ...base,
    status: "ok",
    message: null,
    schemaVersion: schema.version,
    figures: figures ?? (await figuresOf(db)),
  };
}

/** Every database's entry, in the configured order; each settles within `timeoutMs`. */
export async function readFleet(
  databases: readonly DatabaseConfig[],
  open: (d: DatabaseConfig) => ConsoleDb,
  timeoutMs = FLEET_TIMEOUT_MS,
): Promise<FleetEntry[]> {
  const unread = (d: DatabaseConfig, status: "down" | "slow", message: string): Omit<FleetEntry, "readMs"> => ({
    name: d.name,
    production: d.production,
    readonly: d.readonly,
    status,
    message,
    schemaVersion: null,
    figures: null,
  });
  const results = await eachDatabase(databases, timeoutMs, (d) => readOne(d, open(d)), {
    failed: (d, err) => unread(d, "down", errorText(err)),
    slow: (d) => unread(d, "slow", `No answer within ${timeoutMs} ms.`),
  });
  return results.map((r) => ({ ...r.value, readMs: r.ms }));
}

import "server-only";
/**
 * The fleet page: every configured database's figures at a glance, each read in parallel with its
 * own timeout, so a database that is down, slow or on another schema shows as such (with its error)
 * while the others answer. Never migrates; an old schema comes with the command that migrates it.
 */
import { schemaStatus } from "@workhorse/core";
import { FLEET_COUNT_CAP, fleetFigures } from "@/lib/store/console/fleet";
import { type DatabaseConfig, migrateCommand } from "../databases/databases";
import type { ConsoleDb } from "../databases/db";
import { eachDatabase, errorText } from "../databases/deadline";

/** How long one database's read may take before the page shows it as slow. */
export const FLEET_TIMEOUT_MS = 1500;

export { FLEET_COUNT_CAP };

/**
 * One database's figures. Counts stop at `FLEET_COUNT_CAP` (1,000): past it the number is the cap
 * and its `...Capped` flag is set (the page shows "1,000+"), so the read is bounded whatever the
 * database's size (lib/store/console/fleet.ts).
 */
export interface FleetFigures {
  /** Due pending jobs (ready to be claimed) over every queue, up to the cap. */
  ready: number;
  readyCapped: boolean;
  /** Seconds since the oldest due job became due (0 when none is). */
  oldestReadySeconds: number;
  /** Failed jobs not redriven, up to the cap. */
  deadLetters: number;
  deadLettersCapped: boolean;
  conflictsLastHour: number;
  replaysLastHour: number;
  /** Running workers (each counted once, whatever queues it lists). */
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
  const f = await fleetFigures(db.pool);
  return {
    ready: f.ready,
    readyCapped: f.ready_capped,
    oldestReadySeconds: f.oldest_ready_seconds,
    deadLetters: f.dead_letters,
    deadLettersCapped: f.dead_letters_capped,
    conflictsLastHour: f.conflicts,
    replaysLastHour: f.replays,
    workers: f.workers,
  };
}

async function readOne(config: DatabaseConfig, db: ConsoleDb): Promise<Omit<FleetEntry, "readMs">> {
  const base = { name: config.name, production: config.production, readonly: config.readonly };
  // Both at once: the figures' statement fails on a database without the schema, and then only the
  // schema's answer is shown.
  const [schema, read] = await Promise.all([
    schemaStatus(db.pool),
    figuresOf(db).then(
      (f) => ({ ok: true as const, f }),
      (err: unknown) => ({ ok: false as const, err }),
    ),
  ]);
  const figures = read.ok ? read.f : null;
  if (schema.state === "missing") {
    return {
      ...base,
      status: "missing",
      message: `No Workhorse schema: run \`${migrateCommand(config.name)}\`.`,
      schemaVersion: null,
      figures: null,
    };
  }
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
  if (!read.ok) throw read.err; // the schema is current, so the database itself failed: shown as down
  return {
    ...base,
    status: "ok",
    message: null,
    schemaVersion: schema.version,
    figures: read.f,
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

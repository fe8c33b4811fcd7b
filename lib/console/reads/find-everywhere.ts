import "server-only";
/**
 * "Which database has this key?": find by key and by key digest in every configured database at
 * once, each with its own timeout. A key is hashed by each database's own `Queue`, so with that
 * installation's secret; a digest only matches in the database whose secret made it.
 */
import { owningJob } from "@/lib/store/console/keys";
import type { DatabaseConfig } from "../databases/databases";
import type { ConsoleDb } from "../databases/db";
import { eachDatabase, errorText } from "../databases/deadline";
import type { KeyEverywhere } from "../wire/types";
import { lookupDigest } from "./digest";

/** How long one database may take to answer a cross-database lookup. */
export const EVERYWHERE_TIMEOUT_MS = 1500;

type Row = KeyEverywhere[number];

const outcomes = {
  failed: (d: DatabaseConfig, err: unknown): Row => ({ ...none(d), status: "down", message: errorText(err) }),
  slow: (d: DatabaseConfig): Row => ({
    ...none(d),
    status: "slow",
    message: `No answer within ${EVERYWHERE_TIMEOUT_MS} ms.`,
  }),
};

function none(d: DatabaseConfig): Row {
  return { database: d.name, status: "none", jobId: null, jobState: null, queue: null, message: null };
}

/** `read` in every database at once, each within `EVERYWHERE_TIMEOUT_MS`, in the configured order. */
async function everywhere(
  databases: readonly DatabaseConfig[],
  read: (d: DatabaseConfig) => Promise<Row>,
): Promise<KeyEverywhere> {
  return (await eachDatabase(databases, EVERYWHERE_TIMEOUT_MS, read, outcomes)).map((r) => r.value);
}

/** The key (in `scope`) in every database: where a binding holds it, and the job that owns it. */
export async function findKeyEverywhere(
  databases: readonly DatabaseConfig[],
  open: (d: DatabaseConfig) => ConsoleDb,
  key: string,
  scope: string,
): Promise<KeyEverywhere> {
  return everywhere(databases, async (d) => {
    const db = open(d);
    const binding = await db.queue.findBinding({ key, scope });
    if (!binding) return none(d);
    const job = await owningJob(db.pool, binding.jobId);
    return {
      database: d.name,
      status: "found",
      jobId: binding.jobId,
      jobState: job?.id ? job.state : null,
      queue: job?.id ? job.queue : null,
      message: null,
    };
  });
}

/** The digest in every database: bindings (with their jobs) or observations under it. */
export async function findDigestEverywhere(
  databases: readonly DatabaseConfig[],
  open: (d: DatabaseConfig) => ConsoleDb,
  digest: string,
): Promise<KeyEverywhere> {
  return everywhere(databases, async (d) => {
    const found = await lookupDigest(open(d).pool, digest);
    const first = found.bindings[0];
    if (!first && found.observations.length === 0 && found.released.length === 0) return none(d);
    return {
      database: d.name,
      status: "found",
      jobId: first?.binding.jobId ?? found.observations[0]?.jobId ?? found.released[0]?.jobId ?? null,
      jobState: first?.job?.state ?? null,
      queue: first?.job?.queue ?? null,
      message:
        found.bindings.length > 1
          ? `${found.bindings.length} bindings`
          : first
            ? null
            : "no live binding; seen in the log",
    };
  });
}

import "server-only";
/**
 * Find by key: scope + raw key -> the binding and its owning job, or, when no live binding exists,
 * what became of the key. A read model: the key is hashed by lib/enqueue in this process and the
 * state returned holds its digest, preview and length, never the key.
 */
import type pg from "pg";
import { answeredByServer, DEFAULT_SCOPE, EnqueueValidationError, type Queue, withPoolClient } from "@/lib/enqueue";
import type { FieldErrors, FindKeyState, KeyHistory } from "./action-state";
import { debounceFields } from "./jobs";
import { iso } from "./read-queries";
import type { JobStateName } from "./wire-types";

const text = (v: FormDataEntryValue | null): string => (typeof v === "string" ? v : "");

/**
 * Scope + raw key -> binding and owning job. The key is hashed by lib/enqueue in this process; the
 * state returned holds its digest, preview and length, never the key.
 */
export async function findByKey(queue: Queue, pool: pg.Pool, form: FormData): Promise<FindKeyState> {
  const key = text(form.get("key"));
  const scope = text(form.get("scope")).trim() || DEFAULT_SCOPE;
  if (key === "") return { status: "error", message: "Enter the key.", fieldErrors: { key: "Key is required" } };
  let binding: Awaited<ReturnType<Queue["findBinding"]>>;
  try {
    binding = await queue.findBinding({ key, scope });
  } catch (err) {
    if (err instanceof EnqueueValidationError) {
      const fieldErrors: FieldErrors = {};
      for (const i of err.issues) fieldErrors[i.option === "scope" ? "scope" : "key"] ??= `${i.option}: ${i.rule}`;
      return { status: "error", message: "Check the highlighted fields.", fieldErrors };
    }
    throw err;
  }
  const described = await queue.describeKey({ key, scope });
  if (binding) {
    // One round trip: the owning job (if it still exists) and the server's clock for the countdown.
    const { rows } = await pool.query<{
      id: string | null;
      state: JobStateName;
      queue: string;
      type: string;
      created_at: Date;
      purged_at: Date | null;
      now: Date;
    }>(
      `select j.id, j.state, j.queue, j.type, j.created_at, j.purged_at, now() as now
         from (select 1) one left join workhorse.job j on j.id = $1`,
      [binding.jobId],
    );
    const row = rows[0];
    const j = row?.id ? row : null;
    return {
      status: "found",
      scope,
      binding: {
        ...binding,
        createdAt: iso(binding.createdAt),
        expiresAt: iso(binding.expiresAt),
        ...debounceFields(binding.createdAt, binding.schedule, binding.maxWaitMs),
      },
      job: j?.id
        ? {
            id: j.id,
            state: j.state,
            queue: j.queue,
            type: j.type,
            createdAt: iso(j.created_at),
            purgedAt: j.purged_at ? iso(j.purged_at) : null,
          }
        : null,
      now: iso(row?.now ?? new Date()),
    };
  }
  return {
    status: "none",
    scope,
    keyDigest: described.keyDigest,
    keyLength: described.keyLength,
    history: await keyHistory(pool, scope, [described.keyDigest, described.legacyKeyDigest]),
  };
}

/** Milliseconds the "what happened to this key" search may take before we answer "unknown". */
const HISTORY_TIMEOUT_MS = 500;

/**
 * What became of a key with no binding: the newest job that was accepted under it (jobs carry their
 * scope and key hash), or, for jobs accepted before the storage upgrade, the newest `enqueued` event
 * carrying its digest and scope. Neither has an index for this, so the search is bounded by a
 * statement timeout.
 */
async function keyHistory(pool: pg.Pool, scope: string, digests: string[]): Promise<KeyHistory> {
  try {
    return await withPoolClient(
      pool,
      async (client) => {
        try {
          await client.query("begin read only");
          await client.query(`set local statement_timeout = ${HISTORY_TIMEOUT_MS}`);
          const { rows } = await client.query<{ job_id: string; purged_at: Date | null; expires_at: string | null }>(
            `select x.job_id, j.purged_at, x.expires_at
               from (select j.id as job_id, j.created_at as at,
                            to_jsonb(j.created_at + j.key_ttl_ms * interval '1 millisecond') #>> '{}' as expires_at
                       from workhorse.job j
                      where j.key_scope = $2 and left(encode(j.key_hash, 'hex'), 12) = any($1::text[])
                     union all
                     select e.job_id, e.at, e.data->>'expiresAt'
                       from workhorse.job_event e
                      where e.kind = 'enqueued' and e.data->>'keyDigest' = any($1::text[]) and e.data->>'scope' = $2) x
               left join workhorse.job j on j.id = x.job_id
              order by x.at desc limit 1`,
            [digests, scope],
          );
          await client.query("commit");
          const r = rows[0];
          if (!r) return { kind: "never_seen" } as const;
          if (r.purged_at) return { kind: "released", jobId: r.job_id, purgedAt: iso(r.purged_at) } as const;
          return {
            kind: "expired_cleaned",
            jobId: r.job_id,
            expiredAt: r.expires_at ? iso(r.expires_at) : null,
          } as const;
        } catch (err) {
          await client.query("rollback").catch(() => {});
          throw err;
        }
      },
      answeredByServer,
    );
  } catch {
    return { kind: "unknown" };
  }
}

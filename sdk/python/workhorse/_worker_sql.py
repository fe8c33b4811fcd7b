"""Every statement the worker sends, one function each: the same SQL functions, arguments and
meaning as the TypeScript worker's (lib/store/worker/claims.ts). Writes about a running attempt
are fenced by (job id, attempt, lease token): a stale attempt's write matches no row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from psycopg_pool import ConnectionPool

from .worker_types import ClaimedJob

_CLAIM = """select id::text, queue, type, payload, attempt, max_attempts, run_at, deadline, execution_timeout_ms,
                   concurrency_key, tags, created_at, lease_expires_at
              from workhorse.claim_jobs(%s::text[], %s::text[], %s::text, %s::integer, %s::integer, %s::boolean)"""
_HEARTBEAT = """select id::text, lease_owner, cancel_requested
                  from workhorse.heartbeat_jobs(%s::uuid[], %s::integer[], %s::text[], %s::integer)"""
_COMPLETE = "select id::text from workhorse.complete_jobs(%s::uuid[], %s::integer[], %s::text[], %s::jsonb[])"
_CANCEL = "select id from workhorse.cancel_attempt(%s::uuid, %s::integer, %s::text)"
_FAIL = """select state, run_at, delay_ms
             from workhorse.fail_job(%s::uuid, %s::integer, %s::text, %s::jsonb, %s::text, %s::jsonb)"""
_RELEASE = "select id from workhorse.release_jobs(%s::uuid[], %s::integer[], %s::text[], %s::text)"
_READ_CHECKPOINT = "select value from workhorse.job_checkpoint where job_id = %s::uuid and name = %s::text"
_SAVE_CHECKPOINT = """select status, value
                        from workhorse.save_checkpoint(%s::uuid, %s::integer, %s::text, %s::text, %s::jsonb, %s::integer)"""


def _rows(pool: ConnectionPool, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with pool.connection() as conn:
        return conn.execute(sql, params).fetchall()


def claim_jobs(
    pool: ConnectionPool, queues: list[str], types: list[str] | None, lease_token: str, limit: int, lease_ms: int, reap: bool
) -> list[ClaimedJob]:
    """``workhorse.claim_jobs``: up to ``limit`` due jobs, oldest ``run_at`` first, leased to ``lease_token``;
    ``reap`` gives lapsed leases back first."""
    rows = _rows(pool, _CLAIM, [queues, types, lease_token, limit, lease_ms, reap])
    return [
        ClaimedJob(
            id=r[0], queue=r[1], type=r[2], payload=r[3], attempt=r[4], max_attempts=r[5], run_at=r[6], deadline=r[7],
            execution_timeout_ms=None if r[8] is None else int(r[8]), concurrency_key=r[9], tags=list(r[10] or []),
            created_at=r[11], lease_expires_at=r[12], lease_owner=lease_token,
        )  # fmt: skip
        for r in rows
    ]


@dataclass(frozen=True)
class HeartbeatRow:
    id: str
    lease_owner: str
    cancel_requested: bool


def heartbeat(pool: ConnectionPool, jobs: list[ClaimedJob], lease_ms: int) -> list[HeartbeatRow]:
    """``workhorse.heartbeat_jobs``: extends these attempts' leases; missing ones lost theirs."""
    rows = _rows(pool, _HEARTBEAT, [[j.id for j in jobs], [j.attempt for j in jobs], [j.lease_owner for j in jobs], lease_ms])
    return [HeartbeatRow(r[0], r[1], bool(r[2])) for r in rows]


def complete_jobs(pool: ConnectionPool, batch: list[tuple[ClaimedJob, str]]) -> set[str]:
    """``workhorse.complete_jobs``: records these attempts ``succeeded`` with their results (JSON text)."""
    rows = _rows(pool, _COMPLETE, [
        [j.id for j, _ in batch], [j.attempt for j, _ in batch], [j.lease_owner for j, _ in batch], [t for _, t in batch],
    ])  # fmt: skip
    return {r[0] for r in rows}


def cancel_attempt(pool: ConnectionPool, job: ClaimedJob) -> bool:
    """``workhorse.cancel_attempt``: an operator-canceled attempt becomes ``canceled``; False when stale."""
    return len(_rows(pool, _CANCEL, [job.id, job.attempt, job.lease_owner])) > 0


@dataclass(frozen=True)
class FailRow:
    state: str
    run_at: datetime | None
    delay_ms: int | None


def fail_job(pool: ConnectionPool, job: ClaimedJob, error_json: str, cause: str, default_policy_json: str) -> FailRow | None:
    """``workhorse.fail_job``: records a failed attempt and schedules a retry or fails the job; None when stale."""
    rows = _rows(pool, _FAIL, [job.id, job.attempt, job.lease_owner, error_json, cause, default_policy_json])
    if not rows:
        return None
    r = rows[0]
    return FailRow(r[0], r[1], None if r[2] is None else int(r[2]))


def release_job(pool: ConnectionPool, job: ClaimedJob, reason: Literal["shutdown"]) -> bool:
    """``workhorse.release_jobs``: gives an attempt back (``ready``, attempt not counted); False when stale."""
    return len(_rows(pool, _RELEASE, [[job.id], [job.attempt], [job.lease_owner], reason])) > 0


def read_checkpoint(pool: ConnectionPool, job_id: str, name: str) -> tuple[Any] | None:
    """The checkpoint an earlier attempt stored under ``name``, as a 1-tuple (its value may be null)."""
    rows = _rows(pool, _READ_CHECKPOINT, [job_id, name])
    return (rows[0][0],) if rows else None


def save_checkpoint(
    pool: ConnectionPool, job: ClaimedJob, name: str, value_json: str, lease_ms: int
) -> tuple[Literal["saved", "exists", "stale"], Any] | None:
    """``workhorse.save_checkpoint``: ``saved``, ``exists`` (another run stored it first; its value), or ``stale``."""
    rows = _rows(pool, _SAVE_CHECKPOINT, [job.id, job.attempt, job.lease_owner, name, value_json, lease_ms])
    return (rows[0][0], rows[0][1]) if rows else None

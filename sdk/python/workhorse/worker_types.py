"""The worker's public types: the claimed job a handler receives, the events and the counters
(the TypeScript worker's names in snake_case, docs/worker.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

#: Why an attempt failed, as ``fail_job``'s ``p_cause`` and the event data say it.
FailureCause = Literal["error", "execution_timed_out", "deadline_exceeded"]

#: What the worker reports about its own attempts (``on_event``); the durable record is ``workhorse.job_event``.
EventKind = Literal[
    "claimed", "succeeded", "retry_scheduled", "failed", "checkpoint_saved", "lease_lost", "stale", "released",
    "abandoned", "canceled",
]  # fmt: skip


@dataclass(frozen=True)
class ClaimedJob:
    """A job as its handler receives it: one claimed attempt."""

    id: str
    queue: str
    type: str
    payload: Any
    #: 1-based attempt number of this run.
    attempt: int
    max_attempts: int
    run_at: datetime
    deadline: datetime | None
    execution_timeout_ms: int | None
    concurrency_key: str | None
    tags: list[str]
    created_at: datetime
    #: When the lease lapses unless heartbeats extend it (PostgreSQL's clock).
    lease_expires_at: datetime
    #: The lease token stored as ``lease_owner``: ``<worker_id>~<claim>``, new for every claim call.
    lease_owner: str


@dataclass(frozen=True)
class WorkerEvent:
    """One attempt transition. ``cause``/``error`` for ``retry_scheduled`` and ``failed``; ``run_at``/``delay_ms``
    for ``retry_scheduled``; ``duration_ms`` for ``succeeded``; ``name`` for ``checkpoint_saved``."""

    kind: EventKind
    job: ClaimedJob
    cause: FailureCause | None = None
    error: dict[str, Any] | None = None
    run_at: datetime | None = None
    delay_ms: int | None = None
    duration_ms: int | None = None
    name: str | None = None


@dataclass
class WorkerStats:
    """Counters since ``start()``; ``running`` is the handlers running now."""

    claimed: int = 0
    succeeded: int = 0
    retried: int = 0
    failed: int = 0
    stale: int = 0
    released: int = 0
    canceled: int = 0
    running: int = 0

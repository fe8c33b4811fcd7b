"""Options, results and read models of the Python client (the TypeScript API's names in snake_case)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Outcome = Literal["accepted", "replayed", "replaced", "non_replaceable", "coalesced"]
NonReplaceableReason = Literal["incompatible_key_mode", "not_pending", "window_elapsed_pending"]


@dataclass(frozen=True)
class Idempotency:
    """One job per scoped key while the binding lives (``ttl_ms``, default 24 h)."""

    key: str
    scope: str | None = None
    ttl_ms: int | None = None


@dataclass(frozen=True)
class Debounce:
    """One pending job per key, replaced by later requests while its window is open."""

    key: str
    window_ms: int
    scope: str | None = None
    schedule: Literal["reset", "preserve"] | None = None
    max_wait_ms: int | None = None


@dataclass(frozen=True)
class Throttle:
    """The first request per window makes a job; equivalent ones coalesce onto it."""

    key: str
    window_ms: int
    scope: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """``RetryPolicy.fixed(delay_ms)`` or ``RetryPolicy.exponential(initial_delay_ms, multiplier, max_delay_ms)``."""

    type: Literal["fixed", "exponential"]
    delay_ms: int | None = None
    initial_delay_ms: int | None = None
    multiplier: int | None = None
    max_delay_ms: int | None = None

    @staticmethod
    def fixed(delay_ms: int) -> RetryPolicy:
        return RetryPolicy("fixed", delay_ms=delay_ms)

    @staticmethod
    def exponential(initial_delay_ms: int, multiplier: int, max_delay_ms: int) -> RetryPolicy:
        return RetryPolicy(
            "exponential", initial_delay_ms=initial_delay_ms, multiplier=multiplier, max_delay_ms=max_delay_ms
        )


@dataclass(frozen=True)
class EnqueueOptions:
    """Everything optional; at most one of ``idempotency``, ``debounce``, ``throttle``."""

    queue: str | None = None
    run_at: datetime | None = None
    max_attempts: int | None = None
    retry_policy: RetryPolicy | None = None
    deadline: datetime | None = None
    execution_timeout_ms: int | None = None
    concurrency_key: str | None = None
    tags: list[str] | None = None
    idempotency: Idempotency | None = None
    debounce: Debounce | None = None
    throttle: Throttle | None = None
    source: str | None = None


@dataclass(frozen=True)
class EnqueueRequest:
    """One request of ``enqueue_many``."""

    type: str
    payload: Any
    options: EnqueueOptions | dict[str, Any] | None = None


@dataclass(frozen=True)
class EnqueueResult:
    """What PostgreSQL decided for one request; ``reason`` only with ``non_replaceable``."""

    job_id: str
    outcome: Outcome
    reason: NonReplaceableReason | None = None
    key_preview: str | None = None
    key_digest: str | None = None
    key_length: int | None = None


@dataclass(frozen=True)
class KeyDescription:
    scope: str
    key_preview: str
    key_digest: str
    key_length: int
    legacy_key_digest: str


@dataclass(frozen=True)
class BindingInfo:
    scope: str
    key_preview: str
    key_digest: str
    key_length: int
    job_id: str
    mode: str
    request_digest: str | None
    ttl_ms: int | None
    created_at: datetime
    expires_at: datetime
    expired: bool
    schedule: str | None
    max_wait_ms: int | None


@dataclass(frozen=True)
class Job:
    id: str
    queue: str
    type: str
    payload: Any
    state: str
    run_at: datetime
    attempt: int
    max_attempts: int
    retry_policy: dict[str, int] | None
    deadline: datetime | None
    execution_timeout_ms: int | None
    concurrency_key: str | None
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result: Any
    last_error: Any
    redrive_job_ids: list[str] = field(default_factory=list)

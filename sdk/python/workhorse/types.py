"""Options, results and read models of the Python client (the TypeScript API's names in snake_case)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

Outcome = Literal["accepted", "replayed", "replaced", "non_replaceable", "coalesced"]
NonReplaceableReason = Literal["incompatible_key_mode", "not_pending", "window_elapsed_pending"]


class Unset:
    """The type of ``UNSET``, the default of every optional option field: the option is not given
    and takes its default. ``None`` is not "not given": like TypeScript's ``null`` (and a ``None`` in
    a mapping of options), it is refused with an ``EnqueueValidationError`` naming the option."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNSET"


#: An option left out (the default of the option dataclasses' optional fields).
UNSET: Final = Unset()


@dataclass(frozen=True)
class Idempotency:
    """One job per scoped key while the binding lives (``ttl_ms``, default 24 h; ``scope``, default
    ``"default"``). Leave a field out for its default; ``None`` is refused.

    ``hold_until`` (``"finished"`` or ``"started"``): the key is held until its job finishes (or until a
    worker starts it) instead of for a time; with it ``ttl_ms`` has no default (given, the key is also
    released when it runs out). docs/enqueue.md, "Key lifetimes"."""

    key: str
    scope: str | Unset = UNSET
    ttl_ms: int | Unset = UNSET
    hold_until: Literal["finished", "started"] | Unset = UNSET


@dataclass(frozen=True)
class Debounce:
    """One pending job per key, replaced by later requests while its window is open."""

    key: str
    window_ms: int
    scope: str | Unset = UNSET
    schedule: Literal["reset", "preserve"] | Unset = UNSET
    max_wait_ms: int | Unset = UNSET
    #: Held until the job starts or finishes, replaceable while pending (docs/enqueue.md, "Key lifetimes").
    hold_until: Literal["finished", "started"] | Unset = UNSET


@dataclass(frozen=True)
class Throttle:
    """The first request per window makes a job; equivalent ones coalesce onto it."""

    key: str
    window_ms: int
    scope: str | Unset = UNSET


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
    """Everything optional; at most one of ``idempotency``, ``debounce``, ``throttle``. A field left
    out (``UNSET``) takes its default; an explicit ``None`` is refused with an
    ``EnqueueValidationError`` naming the option, as TypeScript refuses ``null``."""

    queue: str | Unset = UNSET
    run_at: datetime | Unset = UNSET
    max_attempts: int | Unset = UNSET
    retry_policy: RetryPolicy | Unset = UNSET
    deadline: datetime | Unset = UNSET
    execution_timeout_ms: int | Unset = UNSET
    concurrency_key: str | Unset = UNSET
    tags: list[str] | Unset = UNSET
    idempotency: Idempotency | Unset = UNSET
    debounce: Debounce | Unset = UNSET
    throttle: Throttle | Unset = UNSET
    source: str | Unset = UNSET


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
    #: None when the key has no time limit (a key lifetime without ``ttl_ms``).
    expires_at: datetime | None
    expired: bool
    schedule: str | None
    max_wait_ms: int | None
    #: The key's lifetime (``"finished"`` or ``"started"``), or None.
    hold_until: str | None = None


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

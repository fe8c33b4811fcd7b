"""Workhorse, the Python client: scoped idempotent enqueue on PostgreSQL (docs/clients.md)."""

from ._attempt import Handler, JobContext
from .errors import (
    DeadlineExceededError,
    EnqueueIdempotencyConflictError,
    EnqueueValidationError,
    ExecutionTimeoutError,
    JobCanceledError,
    LeaseLostError,
    NotStorableError,
    ValidationIssue,
    WorkerConfigError,
    WorkerStoppingError,
    WorkhorseDatabaseError,
    WorkhorseError,
)
from .queue import Queue
from .types import (
    UNSET,
    BindingInfo,
    Debounce,
    EnqueueOptions,
    EnqueueRequest,
    EnqueueResult,
    Idempotency,
    Job,
    KeyDescription,
    RetryPolicy,
    Throttle,
    Unset,
)
from .worker import Worker
from .worker_types import ClaimedJob, FailureCause, WorkerEvent, WorkerStats

__all__ = [
    "BindingInfo",
    "ClaimedJob",
    "DeadlineExceededError",
    "Debounce",
    "EnqueueIdempotencyConflictError",
    "EnqueueOptions",
    "EnqueueRequest",
    "EnqueueResult",
    "EnqueueValidationError",
    "ExecutionTimeoutError",
    "FailureCause",
    "Handler",
    "Idempotency",
    "Job",
    "JobCanceledError",
    "JobContext",
    "KeyDescription",
    "LeaseLostError",
    "NotStorableError",
    "Queue",
    "RetryPolicy",
    "Throttle",
    "UNSET",
    "Unset",
    "ValidationIssue",
    "Worker",
    "WorkerConfigError",
    "WorkerEvent",
    "WorkerStats",
    "WorkerStoppingError",
    "WorkhorseDatabaseError",
    "WorkhorseError",
]

"""Workhorse, the Python client: scoped idempotent enqueue on PostgreSQL (docs/clients.md)."""

from .errors import (
    EnqueueIdempotencyConflictError,
    EnqueueValidationError,
    ValidationIssue,
    WorkhorseDatabaseError,
    WorkhorseError,
)
from .queue import Queue
from .types import (
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
)

__all__ = [
    "BindingInfo",
    "Debounce",
    "EnqueueIdempotencyConflictError",
    "EnqueueOptions",
    "EnqueueRequest",
    "EnqueueResult",
    "EnqueueValidationError",
    "Idempotency",
    "Job",
    "KeyDescription",
    "Queue",
    "RetryPolicy",
    "Throttle",
    "ValidationIssue",
    "WorkhorseDatabaseError",
    "WorkhorseError",
]

"""Typed errors. None of them ever carries a raw key: only its preview, digest and length."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
import json


class WorkhorseError(Exception):
    """Base of every Workhorse error; ``code`` is stable across languages."""

    code = "WORKHORSE"


@dataclass(frozen=True)
class ValidationIssue:
    """One failed input rule: ``option`` is a dotted path (``options.idempotency.key``)."""

    option: str
    rule: str
    path: str | None = None


class EnqueueValidationError(WorkhorseError):
    """Bad input, refused before anything is sent to PostgreSQL (nothing is written)."""

    code = "ENQUEUE_VALIDATION"

    def __init__(self, issues: list[ValidationIssue]):
        self.issues: list[ValidationIssue] = list(issues) or [ValidationIssue("(input)", "is invalid")]
        first = self.issues[0]
        self.option: str = first.option
        self.rule: str = first.rule
        more = f" (and {len(self.issues) - 1} more)" if len(self.issues) > 1 else ""
        super().__init__(f"{first.option}: {first.rule}{more}")


def _differing(fields: list[str]) -> str:
    """"payload differs", "payload and type differ", "maxAttempts, payload and type differ"."""
    if len(fields) <= 1:
        return f"{fields[0] if fields else 'the request'} differs"
    return f"{', '.join(fields[:-1])} and {fields[-1]} differ"


class EnqueueIdempotencyConflictError(WorkhorseError):
    """A live scoped key is bound to a job whose request differs. Nothing was written."""

    code = "ENQUEUE_IDEMPOTENCY_CONFLICT"

    def __init__(
        self,
        *,
        scope: str,
        key_preview: str,
        key_digest: str,
        key_length: int,
        existing_job_id: str | None,
        existing_mode: str,
        conflicting_fields: list[str],
        stored_request_digest: str,
        rejected_request_digest: str,
        ordinal: int,
        payload_paths: list[str] | None = None,
        payload_paths_truncated: bool = False,
    ):
        self.scope = scope
        self.key_preview = key_preview
        self.key_digest = key_digest
        self.key_length = key_length
        self.existing_job_id = existing_job_id
        self.existing_mode = existing_mode
        self.conflicting_fields = conflicting_fields
        self.stored_request_digest = stored_request_digest
        self.rejected_request_digest = rejected_request_digest
        self.ordinal = ordinal
        self.payload_paths = payload_paths
        self.payload_paths_truncated = payload_paths_truncated
        owner = f"job {existing_job_id}" if existing_job_id else "an earlier request of the same batch"
        super().__init__(
            f"Idempotency key {key_preview} (digest {key_digest}, scope {json.dumps(scope, ensure_ascii=False)}) "
            f"is bound to {owner} with a different request: {_differing(conflicting_fields)}. "
            "Use a new key for new work, or repeat the original request."
        )


class WorkhorseDatabaseError(WorkhorseError):
    """Anything else PostgreSQL (or the connection) said; ``retryable`` when repeating may succeed."""

    code = "DATABASE"

    def __init__(self, message: str, cause: BaseException | None, retryable: bool = False):
        super().__init__(message)
        self.__cause__ = cause
        self.retryable = retryable



class QueueClosedError(WorkhorseError):
    """A call made after ``close()`` on this ``Queue``: nothing was checked or sent. Create a new
    ``Queue`` to enqueue again (calls made before ``close()`` complete)."""

    def __init__(self) -> None:
        super().__init__("this Queue was closed; create a new Queue to enqueue again")


class WorkerConfigError(WorkhorseError):
    """A ``Worker`` option is missing or out of range; ``option`` names it."""

    code = "WORKER_CONFIG"

    def __init__(self, option: str, rule: str):
        super().__init__(f"{option}: {rule}")
        self.option = option
        self.rule = rule


class ExecutionTimeoutError(WorkhorseError):
    """The attempt ran longer than the job's ``execution_timeout_ms``: the handler's stop signal fires."""

    code = "EXECUTION_TIMED_OUT"

    def __init__(self, timeout_ms: int):
        super().__init__(f"The attempt ran longer than its executionTimeoutMs ({timeout_ms} ms).")
        self.timeout_ms = timeout_ms


class DeadlineExceededError(WorkhorseError):
    """The job's deadline passed while the attempt ran: the handler's stop signal fires."""

    code = "DEADLINE_EXCEEDED"

    def __init__(self, deadline: datetime):
        iso = deadline.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        super().__init__(f"The job's deadline ({iso}) passed.")
        self.deadline = deadline


class LeaseLostError(WorkhorseError):
    """This attempt no longer holds the job (its lease lapsed and the job was reaped or claimed
    again). The stop signal fires with it, ``heartbeat()``/``checkpoint()`` raise it, and nothing
    the attempt reports afterwards is recorded."""

    code = "LEASE_LOST"

    def __init__(self, job_id: str, attempt: int):
        super().__init__(f"Attempt {attempt} of job {job_id} lost its lease; another attempt owns the job now.")
        self.job_id = job_id
        self.attempt = attempt


class WorkerStoppingError(WorkhorseError):
    """The worker is stopping and its grace period ran out: the stop signal fires with it.
    ``grace_ms``: the grace ``stop()`` gave running attempts (the worker always sets it)."""

    code = "WORKER_STOPPING"

    def __init__(self, grace_ms: int | None = None) -> None:
        if grace_ms is None:
            super().__init__("The worker is shutting down; the attempt will be released and run again.")
        else:
            super().__init__(
                f"The worker is shutting down and its {grace_ms} ms grace period ran out; the attempt will be"
                " released and run again (a longer stop(grace_ms=...) lets attempts finish)."
            )
        self.grace_ms = grace_ms


class JobCanceledError(WorkhorseError):
    """An operator canceled the job while it ran (seen at a heartbeat): the stop signal fires with it."""

    code = "JOB_CANCELED"

    def __init__(self, job_id: str):
        super().__init__(f"Job {job_id} was canceled by an operator.")
        self.job_id = job_id


class NotStorableError(WorkhorseError):
    """A handler's result or a checkpoint value that cannot be stored as JSON."""

    code = "NOT_STORABLE"

    def __init__(self, what: str, reason: str):
        super().__init__(f"{what} cannot be stored as JSON: {reason}")

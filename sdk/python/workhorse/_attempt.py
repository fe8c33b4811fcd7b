"""One attempt a worker holds: its stop signal, what its handler is given (``JobContext``), the
bounded error summary stored in ``last_error`` and the JSON text of results and checkpoints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import threading
import time
import traceback
from typing import Any, Literal, TypeVar

from psycopg_pool import ConnectionPool

from . import _worker_sql as sql
from ._payload import encode_payload
from .errors import EnqueueValidationError, JobCanceledError, LeaseLostError, NotStorableError
from .worker_types import ClaimedJob, WorkerEvent

T = TypeVar("T")

#: Why an attempt's stop signal fired.
StopCause = Literal["execution_timed_out", "deadline_exceeded", "lease_lost", "shutdown", "canceled"]

_NAME, _MESSAGE, _STACK, _CAUSE_DEPTH = 128, 1000, 4000, 2


def _clean(s: str, limit: int) -> str:
    """Well-formed (a lone surrogate becomes U+FFFD, a pair is joined), NUL-free (jsonb refuses U+0000), bounded."""
    t = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace").replace("\x00", "\ufffd")
    return t[: limit - 1] + "…" if len(t) > limit else t


def summarize_error(err: BaseException, depth: int = 0) -> dict[str, Any]:
    """The ``last_error`` shape the TypeScript worker stores: ``name`` (the class name, <= 128), ``message``
    (<= 1,000), ``stack`` (the formatted traceback, first 4,000 characters), ``code`` when the error has a
    string or integer ``code`` (or a psycopg ``sqlstate``), and ``cause`` (``__cause__``, else the implicit
    ``__context__``) summarised the same way up to two levels. Never raises."""
    try:
        out: dict[str, Any] = {"name": _clean(type(err).__name__ or "Error", _NAME)}
        try:
            message = str(err)
        except Exception:
            message = "(the message could not be read)"
        out["message"] = _clean(message, _MESSAGE)
        try:
            out["stack"] = _clean("".join(traceback.format_exception(err, chain=False)), _STACK)
        except Exception:
            pass
        code = getattr(err, "code", None)
        if code is None:
            code = getattr(err, "sqlstate", None)
        if isinstance(code, (str, int)) and not isinstance(code, bool):
            out["code"] = _clean(str(code), _NAME)
        cause = err.__cause__ or (None if err.__suppress_context__ else err.__context__)
        if cause is not None and depth < _CAUSE_DEPTH:
            out["cause"] = summarize_error(cause, depth + 1)
        return out
    except Exception:
        return {"name": "Error", "message": "(the raised value could not be read)"}


def to_json_text(value: Any, what: str, max_bytes: int) -> str:
    """JSON text for a ``jsonb`` column (a result, a checkpoint value) under the payload's rules
    (plain JSON values, storable strings, at most ``max_bytes``); raises ``NotStorableError`` naming the rule."""
    try:
        return encode_payload(value, max_bytes, what)[0]
    except EnqueueValidationError as err:
        raise NotStorableError(what, err.rule) from None


@dataclass(eq=False)
class Running:
    """One attempt this worker holds: handler running, or its outcome being written."""

    key: str
    job: ClaimedJob
    started_at: float = field(default_factory=time.monotonic)
    cond: threading.Condition = field(default_factory=threading.Condition)
    stopped: threading.Event = field(default_factory=threading.Event)
    cause: StopCause | None = None
    reason: BaseException | None = None
    interrupted_at: float | None = None
    #: The handler returned or raised (or was abandoned): lease loss no longer matters to it.
    settled: bool = False
    finished: bool = False
    ok: bool = False
    value: Any = None
    error: BaseException | None = None

    def interrupt(self, cause: StopCause, reason: BaseException) -> None:
        with self.cond:
            if self.cause is not None:
                return
            self.cause, self.reason = cause, reason
            if self.interrupted_at is None:
                self.interrupted_at = time.monotonic()
            self.stopped.set()
            self.cond.notify_all()


@dataclass(frozen=True)
class AttemptDeps:
    """What an attempt needs from its worker."""

    pool: ConnectionPool
    worker_id: str
    lease_ms: int
    max_result_bytes: int
    on_event: Callable[[WorkerEvent], None]
    lose_lease: Callable[[Running], None]
    retrying: Callable[[Running, Callable[[], Any]], Any]


class JobContext:
    """What a handler gets besides the payload.

    Python cannot stop a thread from outside, so stopping is cooperative: ``stopped`` (a
    ``threading.Event``) is set when the attempt should stop, and ``stop_reason`` says why:
    ``ExecutionTimeoutError``, ``DeadlineExceededError``, ``LeaseLostError``, ``WorkerStoppingError``
    or ``JobCanceledError`` (an operator's cancel, seen at the next heartbeat). ``sleep()`` and
    ``raise_if_stopped()`` raise that reason; a long handler should call one of them between steps.
    """

    def __init__(self, r: Running, deps: AttemptDeps):
        self._r = r
        self._deps = deps

    @property
    def job(self) -> ClaimedJob:
        return self._r.job

    @property
    def job_id(self) -> str:
        return self._r.job.id

    @property
    def attempt(self) -> int:
        """1-based attempt number."""
        return self._r.job.attempt

    @property
    def worker_id(self) -> str:
        return self._deps.worker_id

    @property
    def stopped(self) -> threading.Event:
        return self._r.stopped

    @property
    def stop_reason(self) -> BaseException | None:
        return self._r.reason if self._r.stopped.is_set() else None

    def raise_if_stopped(self) -> None:
        """Raises the stop reason once the attempt was told to stop."""
        reason = self.stop_reason
        if reason is not None:
            raise reason

    def sleep(self, seconds: float) -> None:
        """Sleeps, but raises the stop reason as soon as the attempt is told to stop."""
        self._r.stopped.wait(seconds)
        self.raise_if_stopped()

    def heartbeat(self) -> None:
        """Extends this attempt's lease now (the worker also heartbeats on its own). Raises
        ``LeaseLostError`` when the attempt no longer holds the job."""
        r, job = self._r, self._r.job
        if r.cause == "lease_lost":
            raise LeaseLostError(job.id, job.attempt)
        rows = sql.heartbeat(self._deps.pool, [job], self._deps.lease_ms)
        if not rows:
            self._deps.lose_lease(r)
            raise LeaseLostError(job.id, job.attempt)
        if rows[0].cancel_requested:
            r.interrupt("canceled", JobCanceledError(job.id))

    def checkpoint(self, name: str, fn: Callable[[], T]) -> T:
        """Runs ``fn`` once per job: its JSON value is stored in ``workhorse.job_checkpoint`` (with a
        ``checkpoint_saved`` event, one transaction, fenced by the lease), and a later attempt gets the
        stored value back without running ``fn``. The value comes back as JSON round-trips it, the same on
        every attempt. Crash window: if the process dies after ``fn``'s external effect but before the
        checkpoint commits, the next attempt runs ``fn`` again, so give the effect an idempotency key
        (``f"{ctx.job_id}:{name}"``). Names: 1..128 characters without control characters. Raises
        ``LeaseLostError`` (nothing stored) when the attempt lost the job meanwhile."""
        if not isinstance(name, str) or not 1 <= len(name) <= 128 or any(_is_control(c) for c in name):
            raise TypeError("checkpoint name must be 1..128 characters without control characters")
        if not callable(fn):
            raise TypeError("checkpoint(name, fn): fn must be callable")
        r, job, d = self._r, self._r.job, self._deps
        if r.cause == "lease_lost":
            raise LeaseLostError(job.id, job.attempt)
        stored = d.retrying(r, lambda: sql.read_checkpoint(d.pool, job.id, name))
        if stored is not None:
            return stored[0]  # type: ignore[no-any-return]
        value_json = to_json_text(fn(), f"checkpoint {name!r}", d.max_result_bytes)
        row = d.retrying(r, lambda: sql.save_checkpoint(d.pool, job, name, value_json, d.lease_ms))
        if row is None or row[0] == "stale":
            d.lose_lease(r)
            raise LeaseLostError(job.id, job.attempt)
        if row[0] == "saved":
            d.on_event(WorkerEvent("checkpoint_saved", job, name=name))
        return row[1]  # type: ignore[no-any-return]


def _is_control(c: str) -> bool:
    o = ord(c)
    return o < 0x20 or 0x7F <= o <= 0x9F


#: A handler: ``handler(payload, ctx)``; its return value is stored as the job's result (JSON),
#: raising fails the attempt (retried by the job's retry policy until ``max_attempts``).
Handler = Callable[[Any, JobContext], Any]

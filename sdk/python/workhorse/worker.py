"""``Worker``: runs the jobs a ``Queue`` accepted, over the same SQL functions as the TypeScript
worker (``claim_jobs``, ``heartbeat_jobs``, ``complete_jobs``, ``fail_job``, ``cancel_attempt``,
``release_jobs``, ``save_checkpoint``; docs/worker.md). Delivery is at least once: a handler may run
again after a crash, a lost lease or a lost acknowledgement, so handlers must tolerate repeats."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
import json
import os
import secrets
import select
import signal
import socket
import sys
import threading
import time
from types import FrameType, TracebackType
from typing import Any, Literal

import psycopg
from psycopg_pool import ConnectionPool

from . import _worker_sql as sql
from ._attempt import AttemptDeps, Handler, JobContext, Running, StopCause, summarize_error, to_json_text
from ._completions import CompletionWriter
from .errors import (
    DeadlineExceededError,
    ExecutionTimeoutError,
    JobCanceledError,
    LeaseLostError,
    NotStorableError,
    WorkerConfigError,
    WorkerStoppingError,
)
from ._calls import is_retryable
from .queue import WAKE_CHANNEL
from .types import RetryPolicy
from .worker_types import ClaimedJob, FailureCause, WorkerEvent, WorkerStats

_DEFAULT_PAYLOAD_BYTES = 1024 * 1024
_ONE_DAY_MS = 86_400_000
_ONE_YEAR_MS = 365 * _ONE_DAY_MS
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(n: int) -> str:
    out = ""
    while True:
        n, d = divmod(n, 36)
        out = _B36[d] + out
        if n == 0:
            return out


def _int(option: str, value: int | None, fallback: int, lo: int, hi: int) -> int:
    v = fallback if value is None else value
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise WorkerConfigError(option, f"must be an integer {lo}..{hi} (got {value!r})")
    return v


def _policy_json(p: RetryPolicy | None) -> str:
    d: dict[str, int | None]
    if p is None:
        d = {"initialDelayMs": 1000, "multiplier": 2, "maxDelayMs": 3_600_000}
    elif p.type == "fixed":
        d = {"initialDelayMs": p.delay_ms, "multiplier": 1, "maxDelayMs": p.delay_ms}
    else:
        d = {"initialDelayMs": p.initial_delay_ms, "multiplier": p.multiplier, "maxDelayMs": p.max_delay_ms}
    for k, v in d.items():
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= _ONE_YEAR_MS:
            raise WorkerConfigError(f"default_retry_policy.{k}", f"must be an integer 0..{_ONE_YEAR_MS}")
    return json.dumps(d, separators=(",", ":"))


class Worker:
    """Claims due jobs of ``queues`` with leases and runs their handlers, each in its own thread.

    ```python
    def capture(payload, ctx):
        charge = ctx.checkpoint("charge", lambda: psp.charge(payload["invoiceId"], idempotency_key=f"{ctx.job_id}:charge"))
        return {"chargeId": charge["id"]}

    with Worker(pool, {"invoice.capture": capture}, queues=["billing"], concurrency=4):
        ...  # running; leaving the block is stop()
    Worker(pool, handlers).run()  # or: block until SIGINT/SIGTERM, then stop gracefully
    ```

    Options (the TypeScript ``WorkerOptions`` in snake_case, same defaults and bounds): ``handlers`` by job
    type, ``"*"`` for every other type (only types with a handler are claimed); ``queues`` (default
    ``["default"]``); ``concurrency`` 1..1000 (1); ``lease_ms`` 200..86,400,000 (30,000);
    ``heartbeat_interval_ms`` below the lease (``lease_ms // 3``); ``poll_interval_ms`` (1,000);
    ``reap_interval_ms`` (1,000); ``abort_grace_ms`` (5,000): how long a handler may take to settle after its
    stop signal fires before its slot is freed and its outcome recorded anyway; ``max_result_bytes`` (1 MiB);
    ``default_retry_policy`` for jobs enqueued without one (exponential 1 s, x2, cap 1 h); ``listen``
    (``LISTEN workhorse_jobs`` on one dedicated connection; False polls only); ``worker_id``
    (``<host>/<pid>/<random>``); ``on_event``; ``on_error`` (default: a line on stderr).
    The pool is the application's: the worker never closes it. Raises ``WorkerConfigError``.
    """

    def __init__(
        self,
        pool: ConnectionPool,
        handlers: Mapping[str, Handler],
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 1,
        lease_ms: int = 30_000,
        heartbeat_interval_ms: int | None = None,
        poll_interval_ms: int = 1000,
        reap_interval_ms: int = 1000,
        abort_grace_ms: int = 5000,
        max_result_bytes: int = _DEFAULT_PAYLOAD_BYTES,
        default_retry_policy: RetryPolicy | None = None,
        listen: bool = True,
        worker_id: str | None = None,
        on_event: Callable[[WorkerEvent], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ):
        if not isinstance(pool, ConnectionPool):
            raise WorkerConfigError("pool", "must be a psycopg_pool.ConnectionPool")
        if isinstance(queues, str) or not queues or any(not isinstance(q, str) or not q for q in queues):
            raise WorkerConfigError("queues", "must be a non-empty list of queue names")
        if not isinstance(handlers, Mapping) or not handlers:
            raise WorkerConfigError("handlers", 'must map job types (or "*") to functions')
        for t, fn in handlers.items():
            if not callable(fn):
                raise WorkerConfigError(f"handlers.{t}", "must be a function")
        self._pool = pool
        self._handlers = dict(handlers)
        self._queues = list(dict.fromkeys(queues))
        self._types = None if "*" in self._handlers else list(self._handlers)
        self._concurrency = _int("concurrency", concurrency, 1, 1, 1000)
        self._lease_ms = _int("lease_ms", lease_ms, 30_000, 200, _ONE_DAY_MS)
        self._heartbeat_ms = _int("heartbeat_interval_ms", heartbeat_interval_ms, self._lease_ms // 3, 10, self._lease_ms - 1)
        self._poll_ms = _int("poll_interval_ms", poll_interval_ms, 1000, 10, 3_600_000)
        self._reap_ms = _int("reap_interval_ms", reap_interval_ms, 1000, 0, 3_600_000)
        self._abort_grace_ms = _int("abort_grace_ms", abort_grace_ms, 5000, 0, 3_600_000)
        self._max_result_bytes = _int("max_result_bytes", max_result_bytes, _DEFAULT_PAYLOAD_BYTES, 2, 256 * 1024 * 1024)
        self._default_policy_json = _policy_json(default_retry_policy)
        wid = worker_id if worker_id is not None else f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"
        if not isinstance(wid, str) or not 1 <= len(wid) <= 200:
            raise WorkerConfigError("worker_id", "must be 1..200 characters")
        self.worker_id: str = wid
        self._listen = listen
        self._on_event_cb = on_event
        self._on_error = on_error
        self._max_pending = max(self._concurrency, 32)

        self._lock = threading.Condition()  # guards everything below; notified on every change the loop waits for
        self._state: Literal["idle", "running", "stopping", "stopped"] = "idle"
        self._running: dict[str, Running] = {}
        self._busy = 0
        self._wanted = True
        self._give_up = False
        self._last_reap = float("-inf")
        self._claim_seq = secrets.randbelow(2**40)
        self._counters = WorkerStats()
        self._threads: list[threading.Thread] = []
        self._background_stop = threading.Event()
        self._stopped = threading.Event()
        self._heartbeat_stop = threading.Event()
        self._stop_requested = threading.Event()
        self._completions = CompletionWriter(lambda batch: sql.complete_jobs(self._pool, batch), self._persist, self._report)
        self._wake_r, self._wake_w = socket.socketpair()

    # --- lifecycle

    def start(self) -> None:
        """Starts claiming in background threads (the LISTEN connection comes up in the background)."""
        with self._lock:
            if self._state != "idle":
                raise WorkerConfigError("start", f"cannot start a worker that is {self._state}")
            self._state = "running"
        self._completions.start()
        for target, name in ((self._loop, "claim"), (self._heartbeats, "heartbeat")) + (
            ((self._listen_loop, "listen"),) if self._listen else ()
        ):
            t = threading.Thread(target=target, name=f"workhorse-{name}", daemon=True)
            self._threads.append(t)
            t.start()

    def stop(self, grace_ms: int = 30_000) -> None:
        """Stops claiming, waits up to ``grace_ms`` for running handlers, then sets their stop signals
        (``WorkerStoppingError``), waits up to ``abort_grace_ms``, and releases what is still running
        back to ``ready`` without counting the attempt. Never closes the pool. Safe to call twice."""
        self._stop_requested.set()
        with self._lock:
            state = self._state
            if state == "idle":
                self._state = "stopped"
                self._wake_r.close()
                self._wake_w.close()
                self._stopped.set()
            elif state == "running":
                self._state = "stopping"
                self._lock.notify_all()
        if state == "running":
            self._shutdown(grace_ms)
        self._stopped.wait()

    def _shutdown(self, grace_ms: int) -> None:
        self._wake_w.send(b"x")
        loop = next(t for t in self._threads if t.name == "workhorse-claim")
        loop.join()
        self._background_stop.set()
        self._wait_idle(grace_ms / 1000)
        with self._lock:
            attempts = list(self._running.values())
        for r in attempts:
            r.interrupt("shutdown", WorkerStoppingError(grace_ms))
        self._wait_idle(self._abort_grace_ms / 1000 + 5)
        self._give_up = True  # outcome writes still retrying (database down) stop; leases lapse instead
        self._wait_idle(None)
        self._heartbeat_stop.set()
        self._completions.close()
        for t in self._threads:
            t.join()
        self._wake_r.close()
        self._wake_w.close()
        with self._lock:
            self._state = "stopped"
        self._stopped.set()

    def _wait_idle(self, timeout_s: float | None) -> None:
        end = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            while self._running:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return
                self._lock.wait(left)

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def run(self, grace_ms: int = 30_000, signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM)) -> None:
        """Starts, blocks until one of ``signals`` arrives (call from the main thread) or another thread
        calls ``stop()``, then stops with ``grace_ms``. A second signal while draining raises
        ``KeyboardInterrupt`` (SIGINT's default) or ends the process (SIGTERM's default): leases of what
        still runs then lapse."""
        asked = self._stop_requested
        previous: dict[int, Any] = {}

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            for s, h in previous.items():
                signal.signal(s, h)  # the next one acts at once
            asked.set()

        for s in signals:
            previous[s] = signal.signal(s, on_signal)
        try:
            self.start()
            while not asked.wait(1.0):
                pass
            self.stop(grace_ms)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)

    @property
    def state(self) -> Literal["idle", "running", "stopping", "stopped"]:
        """``running`` between ``start()`` and ``stop()``; ``stopping`` once ``stop()`` began: no claim starts
        any more (a job taken by a claim already in flight is given straight back), handlers drain."""
        with self._lock:
            return self._state

    def stats(self) -> WorkerStats:
        """Counters since start."""
        with self._lock:
            c = self._counters
            return WorkerStats(c.claimed, c.succeeded, c.retried, c.failed, c.stale, c.released, c.canceled, self._busy)

    # --- reporting

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self._counters, name, getattr(self._counters, name) + 1)

    def _event(self, e: WorkerEvent) -> None:
        if self._on_event_cb is None:
            return
        try:
            self._on_event_cb(e)
        except Exception as err:
            self._report(err)

    def _report(self, err: BaseException) -> None:
        try:
            if self._on_error is not None:
                self._on_error(err)
            else:
                print(f"[workhorse worker {self.worker_id}] {err}", file=sys.stderr)
        except Exception:
            pass  # an error reporter that raises must not take the worker down

    # --- claiming

    def _want(self) -> None:
        with self._lock:
            self._wanted = True
            self._lock.notify_all()

    def _lease_token(self) -> str:
        self._claim_seq += 1
        return f"{self.worker_id}~{_base36(self._claim_seq)}"

    def _loop(self) -> None:
        backoff = 0.0
        next_poll = time.monotonic() + self._poll_ms / 1000
        while True:
            with self._lock:
                if self._state != "running":
                    return
                now = time.monotonic()
                if now >= next_poll:
                    self._wanted = True
                    next_poll = now + self._poll_ms / 1000
                free = self._concurrency - self._busy
                writing = len(self._running) - self._busy
                if free <= 0 or not self._wanted or writing >= self._max_pending:
                    self._lock.wait(next_poll - now)
                    continue
                self._wanted = False
            reap = (time.monotonic() - self._last_reap) * 1000 >= self._reap_ms
            try:
                jobs = sql.claim_jobs(self._pool, self._queues, self._types, self._lease_token(), free, self._lease_ms, reap)
                if reap:
                    self._last_reap = time.monotonic()
                backoff = 0.0
            except Exception as err:
                self._report(err)
                backoff = min(backoff * 2 if backoff else 0.1, 5.0)
                with self._lock:
                    self._wanted = True
                    if self._state == "running":
                        self._lock.wait(backoff)
                continue
            for job in jobs:
                self._count("claimed")
                with self._lock:
                    stopping = self._state != "running"
                if stopping:  # stop() began while the claim was in flight: give the job straight back
                    try:
                        claimed = job
                        self._persist(lambda: sql.release_job(self._pool, claimed, "shutdown"))
                    except Exception as err:
                        self._report(err)
                    continue
                self._launch(job)
            if len(jobs) == free:
                with self._lock:
                    self._wanted = True

    def _launch(self, job: ClaimedJob) -> None:
        # Keyed by lease token, not attempt: after a claim lost in a server crash the same worker can
        # claim the job again with the same attempt number while the first run is still winding down.
        r = Running(key=f"{job.id}:{job.lease_owner}", job=job)
        with self._lock:
            self._running[r.key] = r
            self._busy += 1
        self._event(WorkerEvent("claimed", job))
        threading.Thread(target=self._execute, args=(r,), name=f"workhorse-job-{job.id}", daemon=True).start()

    # --- one attempt

    def _deps(self) -> AttemptDeps:
        return AttemptDeps(self._pool, self.worker_id, self._lease_ms, self._max_result_bytes, self._event,
                           self._lose_lease, self._retrying)  # fmt: skip

    def _lose_lease(self, r: Running) -> None:
        with r.cond:
            if r.cause == "lease_lost":
                return
            if not r.settled:
                self._event(WorkerEvent("lease_lost", r.job))
            r.cause = None  # lease loss overrides a timeout: the attempt may not record anything now
            r.interrupt("lease_lost", LeaseLostError(r.job.id, r.job.attempt))

    def _retrying(self, r: Running, op: Callable[[], Any]) -> Any:
        return self._persist(op, stop=lambda: r.stopped.is_set() or self._give_up, max_delay=2.0)

    def _persist(self, op: Callable[[], Any], stop: Callable[[], bool] | None = None, max_delay: float = 5.0) -> Any:
        """Runs a write until it lands: transient failures (connection lost, server restarting) are retried
        with backoff (the writes are fenced, so repeating one is safe) until ``stop`` says to give up."""
        delay = 0.1
        while True:
            try:
                return op()
            except Exception as err:
                if not is_retryable(err) or (stop or (lambda: self._give_up))():
                    raise
                self._report(err)
                time.sleep(delay)
                delay = min(delay * 2, max_delay)

    def _run_handler(self, r: Running, handler: Handler | None) -> None:
        try:
            if handler is None:
                raise LookupError(f"no handler for job type {json.dumps(r.job.type)}")
            value = handler(r.job.payload, JobContext(r, self._deps()))
            ok, err = True, None
        except BaseException as e:  # noqa: BLE001 - a handler's SystemExit must not kill the worker either
            value, ok, err = None, False, e
        with r.cond:
            r.finished, r.ok, r.value, r.error = True, ok, value, err
            r.cond.notify_all()

    def _supervise(self, r: Running) -> bool:
        """Waits for the handler, firing its stop signal at its execution timeout or deadline. Returns
        False when it did not settle within ``abort_grace_ms`` after the signal fired (abandoned)."""
        job = r.job
        timeouts: list[tuple[float, StopCause, BaseException]] = []
        if job.execution_timeout_ms is not None:
            timeouts.append((r.started_at + job.execution_timeout_ms / 1000, "execution_timed_out",
                             ExecutionTimeoutError(job.execution_timeout_ms)))  # fmt: skip
        if job.deadline is not None:
            left = (job.deadline - datetime.now(timezone.utc)).total_seconds()
            timeouts.append((time.monotonic() + left, "deadline_exceeded", DeadlineExceededError(job.deadline)))
        timeouts.sort(key=lambda t: t[0])
        with r.cond:
            while not r.finished:
                now = time.monotonic()
                if r.interrupted_at is None:
                    if timeouts and timeouts[0][0] <= now:
                        _, cause, reason = timeouts.pop(0)
                        r.interrupt(cause, reason)
                        continue
                    r.cond.wait(timeouts[0][0] - now if timeouts else None)
                else:
                    until = r.interrupted_at + self._abort_grace_ms / 1000
                    if now >= until:
                        return False
                    r.cond.wait(until - now)
            return True

    def _execute(self, r: Running) -> None:
        try:
            job = r.job
            handler = self._handlers.get(job.type) or self._handlers.get("*")
            threading.Thread(target=self._run_handler, args=(r, handler), name=f"workhorse-handler-{job.id}",
                             daemon=True).start()  # fmt: skip
            settled = self._supervise(r)
            with r.cond:
                r.settled = True
            with self._lock:
                self._busy -= 1
                self._lock.notify_all()
            if not settled:
                self._event(WorkerEvent("abandoned", job))
                self._report(RuntimeError(f"handler for job {job.id} (attempt {job.attempt}) ignored its stop signal"))
            self._record(r, settled)
        except Exception as err:
            self._report(err)
        finally:
            with self._lock:
                self._running.pop(r.key, None)
                self._lock.notify_all()

    def _record(self, r: Running, settled: bool) -> None:
        job = r.job
        with r.cond:
            cause, reason, ok, value, error = r.cause, r.reason, settled and r.ok, r.value, r.error
        failed = not settled or not ok
        if cause == "lease_lost":
            self._count("stale")
            self._event(WorkerEvent("stale", job))
        elif cause == "shutdown" and failed:
            if self._persist(lambda: sql.release_job(self._pool, job, "shutdown")):
                self._count("released")
                self._event(WorkerEvent("released", job))
        elif cause in ("execution_timed_out", "deadline_exceeded"):
            assert reason is not None
            self._fail(job, summarize_error(reason), cause)  # type: ignore[arg-type]
        elif cause == "canceled" and failed:
            if self._persist(lambda: sql.cancel_attempt(self._pool, job)):
                self._count("canceled")
                self._event(WorkerEvent("canceled", job))
            else:
                self._count("stale")
                self._event(WorkerEvent("stale", job))
        elif not ok:
            assert error is not None
            self._fail(job, summarize_error(error), "error")
        else:
            try:
                text = to_json_text(value, f"the result of job {job.id}", self._max_result_bytes)
            except Exception as err:
                self._fail(job, summarize_error(err), "error")
                return
            written = self._completions.complete(job, text)
            if isinstance(written, BaseException):
                # PostgreSQL refused this result (it passed our checks, so the rules disagree somewhere): the
                # attempt fails with the reason instead of waiting for its lease to lapse.
                code = getattr(written, "sqlstate", None)
                why = f"{written} (SQLSTATE {code})" if code else str(written)
                self._fail(job, summarize_error(NotStorableError(f"the result of job {job.id}", why)), "error")
                return
            if written == "recorded":
                self._count("succeeded")
                self._event(WorkerEvent("succeeded", job, duration_ms=round((time.monotonic() - r.started_at) * 1000)))
            else:
                self._count("stale")
                self._event(WorkerEvent("stale", job))

    def _fail(self, job: ClaimedJob, error: dict[str, Any], cause: FailureCause) -> None:
        error_json = json.dumps(error, ensure_ascii=False, separators=(",", ":"))
        row = self._persist(lambda: sql.fail_job(self._pool, job, error_json, cause, self._default_policy_json))
        if row is None:
            self._count("stale")
            self._event(WorkerEvent("stale", job))
        elif row.state == "failed":
            self._count("failed")
            self._event(WorkerEvent("failed", job, cause=cause, error=error))
        elif row.state == "canceled":
            # An operator's cancel arrived before the next heartbeat: the would-be retry became `canceled`.
            self._count("canceled")
            self._event(WorkerEvent("canceled", job))
        else:
            self._count("retried")
            self._event(WorkerEvent("retry_scheduled", job, cause=cause, error=error, run_at=row.run_at, delay_ms=row.delay_ms))

    # --- heartbeats and wake-ups

    def _heartbeats(self) -> None:
        """One statement extends every running attempt's lease; missing ones lost theirs, and an
        operator's cancel sets its attempt's stop signal."""
        while not self._heartbeat_stop.wait(self._heartbeat_ms / 1000):
            with self._lock:
                attempts = [r for r in self._running.values() if r.cause != "lease_lost"]
            if not attempts:
                continue
            try:
                rows = sql.heartbeat(self._pool, [r.job for r in attempts], self._lease_ms)
            except Exception as err:
                self._report(err)
                continue
            held = {f"{x.id}:{x.lease_owner}" for x in rows}
            canceled = {f"{x.id}:{x.lease_owner}" for x in rows if x.cancel_requested}
            for r in attempts:
                # A settled attempt may be missing because its own outcome just landed; its write is fenced anyway.
                if r.key not in held and not r.settled:
                    self._lose_lease(r)
                elif r.key in canceled and not r.settled:
                    r.interrupt("canceled", JobCanceledError(r.job.id))

    def _listen_loop(self) -> None:
        """The dedicated LISTEN connection, reconnected with backoff (100 ms doubling to 5 s); every
        (re)connect triggers a claim, covering notifications missed meanwhile."""
        backoff = 0.0
        while not self._background_stop.is_set() and self._state == "running":
            conn: psycopg.Connection[Any] | None = None
            try:
                kwargs: dict[str, Any] = {**self._pool.kwargs, "autocommit": True}
                listening: psycopg.Connection[Any] = psycopg.connect(self._pool.conninfo, **kwargs)
                conn = listening
                listening.execute(f"listen {WAKE_CHANNEL}")
                backoff = 0.0
                self._want()
                pg = listening.pgconn
                while self._state == "running":
                    ready, _, _ = select.select([pg.socket, self._wake_r], [], [])
                    if self._wake_r in ready:
                        return
                    pg.consume_input()
                    while (n := pg.notifies()) is not None:
                        if n.relname.decode() == WAKE_CHANNEL and n.extra.decode() in self._queues:
                            self._want()
                    if pg.status != psycopg.pq.ConnStatus.OK:
                        raise psycopg.OperationalError("the LISTEN connection was closed")
            except Exception as err:
                if self._state != "running":
                    return
                self._report(RuntimeError(f"LISTEN connection lost: {err}"))
                backoff = min(backoff * 2 if backoff else 0.1, 5.0)
                ready, _, _ = select.select([self._wake_r], [], [], backoff)
                if ready:
                    return
            finally:
                if conn is not None:
                    conn.close()

"""The Python worker over the TypeScript worker's SQL functions: runs, retries, dead letters, leases
lapsing after a SIGKILL (with the checkpoint reused), timeouts and deadlines, operator cancel,
graceful stop on SIGTERM, and a job enqueued by the TypeScript core."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
import json
import os
from pathlib import Path
import queue as queue_mod
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any
import uuid

from psycopg_pool import ConnectionPool
import pytest

from workhorse import (
    EnqueueOptions,
    JobCanceledError,
    JobContext,
    Queue,
    RetryPolicy,
    Worker,
    WorkerConfigError,
    WorkerEvent,
)

from .conftest import run_ts

PROC = Path(__file__).parent / "worker_proc.py"


def wait_until(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Polls ``check`` until it returns something truthy (a condition, not a fixed sleep)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def job_row(pool: ConnectionPool, job_id: str) -> dict[str, Any]:
    with pool.connection() as conn:
        cur = conn.execute(
            "select state, attempt, result, last_error, lease_owner from workhorse.job where id = %s::uuid", (job_id,)
        )
        r = cur.fetchone()
    assert r is not None
    return {"state": r[0], "attempt": r[1], "result": r[2], "last_error": r[3], "lease_owner": r[4]}


def events(pool: ConnectionPool, job_id: str) -> list[tuple[str, Any]]:
    with pool.connection() as conn:
        rows = conn.execute("select kind, data from workhorse.job_event where job_id = %s::uuid order by seq", (job_id,)).fetchall()
    return [(r[0], r[1]) for r in rows]


def finished(pool: ConnectionPool, job_id: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        row = job_row(pool, job_id)
        return row if row["state"] in ("succeeded", "failed", "canceled") else None

    return check


@contextmanager
def running(pool: ConnectionPool, handlers: dict[str, Any], queue: str, **options: Any) -> Iterator[Worker]:
    options = {"poll_interval_ms": 50, "reap_interval_ms": 0, **options}
    worker = Worker(pool, handlers, queues=[queue], **options)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop(grace_ms=5000)


def fresh_queue() -> str:
    return f"py-{uuid.uuid4().hex[:10]}"


def test_a_job_enqueued_from_python_runs_and_its_result_is_stored(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    seen: list[tuple[Any, int, str]] = []
    got: list[WorkerEvent] = []

    def capture(payload: Any, ctx: JobContext) -> Any:
        seen.append((payload, ctx.attempt, ctx.job.queue))
        return {"chargeId": f"ch-{payload['invoiceId']}", "amount": 4200}

    job_id = queue.enqueue("invoice.capture", {"invoiceId": "INV-1"}, EnqueueOptions(queue=q))
    with running(pool, {"invoice.capture": capture}, q, on_event=got.append) as worker:
        row = wait_until("the job to finish", finished(pool, job_id))
        assert worker.stats().succeeded == 1
    assert seen == [({"invoiceId": "INV-1"}, 1, q)]
    assert (row["state"], row["attempt"], row["result"]) == ("succeeded", 1, {"chargeId": "ch-INV-1", "amount": 4200})
    assert row["lease_owner"].startswith(worker.worker_id + "~")
    assert [k for k, _ in events(pool, job_id)] == ["claimed", "succeeded"]
    assert [e.kind for e in got] == ["claimed", "succeeded"]


def test_a_failing_handler_is_retried_then_dead_lettered_with_its_error(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    attempts: list[int] = []

    def broken(payload: Any, ctx: JobContext) -> Any:
        attempts.append(ctx.attempt)
        try:
            raise KeyError("psp")
        except KeyError as inner:
            raise ValueError(f"card declined on attempt {ctx.attempt}") from inner

    job_id = queue.enqueue("t.broken", {}, EnqueueOptions(queue=q, max_attempts=3, retry_policy=RetryPolicy.fixed(10)))
    with running(pool, {"t.broken": broken}, q) as worker:
        row = wait_until("the job to fail", finished(pool, job_id))
        stats = worker.stats()
    assert attempts == [1, 2, 3]
    assert (stats.retried, stats.failed) == (2, 1)
    assert (row["state"], row["attempt"]) == ("failed", 3)
    err = row["last_error"]
    assert (err["name"], err["message"]) == ("ValueError", "card declined on attempt 3")
    assert err["stack"].startswith("Traceback (most recent call last):") and "in broken" in err["stack"]
    assert err["cause"]["name"] == "KeyError" and err["cause"]["message"] == "'psp'"
    kinds = [k for k, _ in events(pool, job_id)]
    assert kinds == ["claimed", "retry_scheduled", "claimed", "retry_scheduled", "claimed", "failed"]
    retry = events(pool, job_id)[1][1]
    assert (retry["attempt"], retry["cause"], retry["delayMs"], retry["error"]["message"]) == (1, "error", 10, "card declined on attempt 1")
    failed = events(pool, job_id)[-1][1]
    assert (failed["reason"], failed["cause"]) == ("max_attempts", "error")


def test_the_default_retry_policy_and_the_job_policy_set_the_delay(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()

    def broken(payload: Any, ctx: JobContext) -> Any:
        raise RuntimeError("no")

    default = queue.enqueue("t.x", {}, EnqueueOptions(queue=q, max_attempts=2))
    own = queue.enqueue("t.x", {}, EnqueueOptions(queue=q, max_attempts=2, retry_policy=RetryPolicy.exponential(700_000, 2, 800_000)))
    with running(pool, {"t.x": broken}, q, default_retry_policy=RetryPolicy.fixed(600_000)):
        for job_id in (default, own):
            wait_until("a retry", lambda job_id=job_id: job_row(pool, job_id)["state"] == "scheduled")
    assert events(pool, default)[-1][1]["delayMs"] == 600_000
    assert events(pool, own)[-1][1]["delayMs"] == 700_000


class Proc:
    """A worker process whose output lines are read by a thread, so waiting for one can time out."""

    def __init__(self, cfg: dict[str, Any]):
        self.p = subprocess.Popen([sys.executable, str(PROC), json.dumps(cfg)], stdout=subprocess.PIPE, text=True)
        self.lines: queue_mod.Queue[str | None] = queue_mod.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self.line("ready") == "ready"

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def line(self, prefix: str, timeout: float = 30.0) -> str:
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue_mod.Empty:
                raise AssertionError(f"no line starting with {prefix!r} within {timeout} s") from None
            if line is None:
                raise AssertionError(f"worker process ended before printing {prefix!r}")
            if line.startswith(prefix):
                return line

    def kill_if_running(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def test_a_killed_workers_lease_lapses_and_another_worker_reuses_its_checkpoint(
    queue: Queue, pool: ConnectionPool, database_url: str
) -> None:
    q = fresh_queue()
    job_id = queue.enqueue("t.block", {"n": 7}, EnqueueOptions(queue=q, max_attempts=3))
    proc = Proc({"url": database_url, "queue": q, "mode": "checkpoint_then_block", "lease_ms": 2000})
    try:
        assert proc.line("checkpointed") == f"checkpointed {job_id}"
        proc.p.send_signal(signal.SIGKILL)
        assert proc.p.wait(10) == -signal.SIGKILL
    finally:
        proc.kill_if_running()
    assert (job_row(pool, job_id)["state"], job_row(pool, job_id)["attempt"]) == ("active", 1)
    ran_again: list[int] = []

    def resume(payload: Any, ctx: JobContext) -> Any:
        charge = ctx.checkpoint("charge", lambda: ran_again.append(ctx.attempt) or {"chargeId": "again"})
        return {"charge": charge, "attempt": ctx.attempt}

    with running(pool, {"t.block": resume}, q):
        row = wait_until("the job to finish", finished(pool, job_id))
    assert ran_again == []  # the stage the killed attempt stored is not run again
    assert (row["state"], row["attempt"]) == ("succeeded", 2)
    assert row["result"] == {"charge": {"chargeId": "ch-7", "attempt": 1}, "attempt": 2}
    kinds = [k for k, _ in events(pool, job_id)]
    assert kinds == ["claimed", "checkpoint_saved", "lease_expired", "claimed", "succeeded"]


def test_an_execution_timeout_fires_the_stop_signal_and_fails_the_attempt(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    reasons: list[str] = []

    def slow(payload: Any, ctx: JobContext) -> Any:
        ctx.stopped.wait(30)
        reasons.append(type(ctx.stop_reason).__name__)
        ctx.raise_if_stopped()

    job_id = queue.enqueue("t.slow", {}, EnqueueOptions(queue=q, max_attempts=1, execution_timeout_ms=200))
    with running(pool, {"t.slow": slow}, q):
        row = wait_until("the job to fail", finished(pool, job_id))
    assert reasons == ["ExecutionTimeoutError"]
    assert row["state"] == "failed"
    assert (row["last_error"]["name"], row["last_error"]["code"]) == ("ExecutionTimeoutError", "EXECUTION_TIMED_OUT")
    assert row["last_error"]["message"] == "The attempt ran longer than its executionTimeoutMs (200 ms)."
    kinds = [k for k, _ in events(pool, job_id)]
    assert kinds == ["claimed", "execution_timed_out", "failed"]


def test_a_deadline_passing_while_the_handler_runs_fails_the_job_without_retries(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    reasons: list[str] = []

    def slow(payload: Any, ctx: JobContext) -> Any:
        try:
            ctx.sleep(30)
        finally:
            reasons.append(type(ctx.stop_reason).__name__)

    deadline = datetime.now(timezone.utc) + timedelta(milliseconds=2000)
    job_id = queue.enqueue("t.slow", {}, EnqueueOptions(queue=q, max_attempts=5, deadline=deadline))
    with running(pool, {"t.slow": slow}, q):
        row = wait_until("the job to fail", finished(pool, job_id))
    assert reasons == ["DeadlineExceededError"]
    assert (row["state"], row["attempt"], row["last_error"]["name"]) == ("failed", 1, "DeadlineExceededError")
    kinds = [k for k, _ in events(pool, job_id)]
    assert kinds[-2:] == ["deadline_exceeded", "failed"]
    assert events(pool, job_id)[-1][1]["reason"] == "deadline_exceeded"


def test_an_operator_cancel_reaches_the_running_handler(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    started = threading.Event()
    reasons: list[BaseException | None] = []

    def long(payload: Any, ctx: JobContext) -> Any:
        started.set()
        ctx.stopped.wait(30)
        reasons.append(ctx.stop_reason)
        ctx.raise_if_stopped()

    job_id = queue.enqueue("t.long", {}, EnqueueOptions(queue=q, max_attempts=5))
    with running(pool, {"t.long": long}, q, lease_ms=3000, heartbeat_interval_ms=100) as worker:
        assert started.wait(30)
        with pool.connection() as conn:  # the statement the TypeScript core's cancelJobs sends
            r = conn.execute("select canceled, cancel_requested from workhorse.cancel_jobs(array[%s]::uuid[], %s, %s)",
                             (job_id, "ops@example.com", "customer asked")).fetchone()  # fmt: skip
        assert r == (0, 1)
        row = wait_until("the job to be canceled", finished(pool, job_id))
        assert worker.stats().canceled == 1
    assert len(reasons) == 1 and isinstance(reasons[0], JobCanceledError)
    assert (row["state"], row["attempt"]) == ("canceled", 1)
    kinds = [k for k, _ in events(pool, job_id)]
    assert kinds == ["claimed", "cancel_requested", "canceled"]


def test_sigterm_stops_claiming_lets_handlers_finish_and_releases_the_rest(
    queue: Queue, pool: ConnectionPool, database_url: str
) -> None:
    q = fresh_queue()
    with tempfile.TemporaryDirectory() as tmp:
        release = os.path.join(tmp, "go")
        finishing = queue.enqueue("t.finish", {"release": release}, EnqueueOptions(queue=q))
        stopping = queue.enqueue("t.stop", {}, EnqueueOptions(queue=q))
        proc = Proc({"url": database_url, "queue": q, "mode": "drain", "grace_ms": 1500})
        try:
            started = {proc.line("started"), proc.line("started")}
            assert started == {f"started {finishing}", f"started {stopping}"}
            proc.p.send_signal(signal.SIGTERM)
            assert proc.line("stopping") == "stopping"  # the worker has stopped claiming
            late = queue.enqueue("t.finish", {"release": release}, EnqueueOptions(queue=q))
            Path(release).touch()  # the first handler finishes inside the grace period
            assert proc.line("stop signal") == "stop signal WorkerStoppingError 1500"
            stats = json.loads(proc.line("stopped").removeprefix("stopped "))
            assert proc.p.wait(30) == 0
        finally:
            proc.kill_if_running()
    assert (stats["succeeded"], stats["released"]) == (1, 1)
    assert job_row(pool, finishing)["state"] == "succeeded"
    released = job_row(pool, stopping)
    assert (released["state"], released["attempt"]) == ("ready", 0)
    assert [k for k, _ in events(pool, stopping)] == ["claimed", "released"]
    assert events(pool, stopping)[-1][1]["reason"] == "shutdown"
    # The late job's handler never ran (it would have finished: the release file exists). A claim already in
    # flight when the signal landed may have taken it; such a job is given straight back, uncounted.
    assert (job_row(pool, late)["state"], job_row(pool, late)["attempt"]) == ("ready", 0)
    late_events = [k for k, _ in events(pool, late)]
    assert late_events in ([], ["claimed", "released"])
    assert stats["claimed"] == 2 + len(late_events) // 2


def test_a_job_enqueued_by_the_typescript_core_is_run_by_the_python_worker(pool: ConnectionPool, database_url: str) -> None:
    q = fresh_queue()
    out = run_ts("enqueue.ts", database_url, {"type": "invoice.capture", "payload": {"invoiceId": "INV-TS", "amountCents": 4200},
                                              "options": {"queue": q, "idempotency": {"key": f"k-{uuid.uuid4()}"}}})  # fmt: skip
    job_id = out["result"]["jobId"]

    def capture(payload: Any, ctx: JobContext) -> Any:
        return {"captured": payload["invoiceId"], "cents": payload["amountCents"]}

    with running(pool, {"invoice.capture": capture}, q):
        row = wait_until("the job to finish", finished(pool, job_id))
    assert (row["state"], row["result"]) == ("succeeded", {"captured": "INV-TS", "cents": 4200})


def test_a_notification_wakes_the_worker_long_before_its_next_poll(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    ran = threading.Event()
    claims: list[str] = []
    with running(pool, {"t.n": lambda p, c: ran.set()}, q, poll_interval_ms=3_600_000,
                 on_event=lambda e: claims.append(e.kind)):  # fmt: skip
        queue.enqueue("t.n", {}, EnqueueOptions(queue=q))  # the Queue's wake-up after the commit
        assert ran.wait(20)
    assert claims[0] == "claimed"


def test_run_returns_when_another_thread_stops_the_worker(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    ran = threading.Event()
    worker = Worker(pool, {"t.r": lambda p, c: ran.set()}, queues=[q], poll_interval_ms=50)
    stopper = threading.Thread(target=lambda: ran.wait(30) and worker.stop(grace_ms=5000))
    stopper.start()
    job_id = queue.enqueue("t.r", {}, EnqueueOptions(queue=q))
    worker.run()
    stopper.join()
    assert worker.state == "stopped"
    assert job_row(pool, job_id)["state"] == "succeeded"


def test_an_attempt_whose_lease_was_taken_records_nothing(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    started = threading.Event()
    reasons: list[str] = []

    def long(payload: Any, ctx: JobContext) -> Any:
        started.set()
        ctx.stopped.wait(30)
        reasons.append(type(ctx.stop_reason).__name__)
        return {"late": True}  # fenced out: another attempt owns the job

    job_id = queue.enqueue("t.long", {}, EnqueueOptions(queue=q))
    got: list[str] = []
    with running(pool, {"t.long": long}, q, lease_ms=3000, heartbeat_interval_ms=100, on_event=lambda e: got.append(e.kind)) as worker:
        assert started.wait(30)
        with pool.connection() as conn:  # as if the lease had lapsed and another worker had claimed the job
            conn.execute("update workhorse.job set lease_owner = 'elsewhere~1', lease_expires_at = now() + interval '1 hour' where id = %s::uuid", (job_id,))
        wait_until("the stale outcome", lambda: worker.stats().stale == 1)
    assert reasons == ["LeaseLostError"]
    assert got == ["claimed", "lease_lost", "stale"]
    row = job_row(pool, job_id)
    assert (row["state"], row["result"], row["lease_owner"]) == ("active", None, "elsewhere~1")


def test_a_handler_that_ignores_its_stop_signal_is_abandoned_and_its_attempt_recorded(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    let_go = threading.Event()

    def stubborn(payload: Any, ctx: JobContext) -> Any:
        let_go.wait(30)  # never looks at ctx.stopped
        return {"too": "late"}

    job_id = queue.enqueue("t.s", {}, EnqueueOptions(queue=q, max_attempts=1, execution_timeout_ms=100))
    got: list[str] = []
    try:
        with running(pool, {"t.s": stubborn}, q, abort_grace_ms=100, on_event=lambda e: got.append(e.kind)):
            row = wait_until("the job to fail", finished(pool, job_id))
    finally:
        let_go.set()
    assert got == ["claimed", "abandoned", "failed"]
    assert (row["state"], row["last_error"]["name"]) == ("failed", "ExecutionTimeoutError")


def test_a_result_json_cannot_hold_fails_the_attempt_with_not_storable(queue: Queue, pool: ConnectionPool) -> None:
    q = fresh_queue()
    job_id = queue.enqueue("t.nan", {}, EnqueueOptions(queue=q, max_attempts=1))
    with running(pool, {"t.nan": lambda p, c: {"ratio": float("nan")}}, q):
        row = wait_until("the job to fail", finished(pool, job_id))
    assert (row["state"], row["last_error"]["name"], row["last_error"]["code"]) == ("failed", "NotStorableError", "NOT_STORABLE")
    assert row["last_error"]["message"].startswith(f"the result of job {job_id} cannot be stored as JSON: ")


def test_completions_go_one_statement_at_a_time_and_each_job_is_recorded_once(
    queue: Queue, pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workhorse import _worker_sql

    q = fresh_queue()
    real = _worker_sql.complete_jobs
    sizes: list[int] = []
    in_flight = [0, 0]  # now, most at once
    guard = threading.Lock()

    def spy(pool_: ConnectionPool, batch: list[Any]) -> set[str]:
        with guard:
            in_flight[0] += 1
            in_flight[1] = max(in_flight)
            sizes.append(len(batch))
        try:
            return real(pool_, batch)  # the real statement against the real database
        finally:
            with guard:
                in_flight[0] -= 1

    monkeypatch.setattr(_worker_sql, "complete_jobs", spy)
    ids = [queue.enqueue("t.n", {"n": i}, EnqueueOptions(queue=q)) for i in range(24)]
    with running(pool, {"t.n": lambda p, c: {"n": p["n"]}}, q, concurrency=8) as worker:
        rows = [wait_until("the job to finish", finished(pool, job_id)) for job_id in ids]
        assert worker.stats().succeeded == 24
    assert [r["result"] for r in rows] == [{"n": i} for i in range(24)]
    assert (sum(sizes), in_flight[1]) == (24, 1)


def test_options_are_checked(pool: ConnectionPool) -> None:
    with pytest.raises(WorkerConfigError) as caught:
        Worker(pool, {"t": lambda p, c: None}, concurrency=0)
    assert caught.value.option == "concurrency"
    with pytest.raises(WorkerConfigError) as caught:
        Worker(pool, {})
    assert caught.value.option == "handlers"
    with pytest.raises(WorkerConfigError) as caught:
        Worker(pool, {"t": lambda p, c: None}, lease_ms=1000, heartbeat_interval_ms=1000)
    assert caught.value.option == "heartbeat_interval_ms"

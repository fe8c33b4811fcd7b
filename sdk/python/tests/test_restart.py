"""Keyed calls through connection loss: the same ids are proposed again (p_retry), so a lost answer
is recovered as the accept it was, and a PostgreSQL restart costs neither a duplicate nor a crash."""

from __future__ import annotations

from collections.abc import Callable
import threading
import time
import uuid

import psycopg
import pytest

from workhorse import (
    EnqueueIdempotencyConflictError,
    EnqueueOptions,
    EnqueueRequest,
    Idempotency,
    Queue,
    WorkhorseDatabaseError,
)

from .conftest import Server


def jobs_per_key(queue: Queue, scope: str) -> dict[str, int]:
    with queue._pool.connection() as conn:
        rows = conn.execute(
            "select encode(key_hash, 'hex'), count(distinct job_id) from workhorse.key_binding where scope = %s group by 1",
            (scope,),
        ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def test_a_lost_answer_is_recovered_as_accepted(queue: Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    real_send = queue._send
    calls: list[bool] = []

    def send_then_lose_the_answer(requests, ids, retry):  # type: ignore[no-untyped-def]
        calls.append(retry)
        rows = real_send(requests, ids, retry)  # committed
        if len(calls) == 1:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return rows

    monkeypatch.setattr(queue, "_send", send_then_lose_the_answer)
    result = queue.enqueue_with_result("t", {"n": 1}, EnqueueOptions(idempotency=Idempotency(key=str(uuid.uuid4()))))
    assert calls == [False, True]
    assert result.outcome == "accepted"
    assert queue.retry_stats["recovered_accepts"] == 1
    batch = queue.enqueue_many([
        EnqueueRequest("t", {}, EnqueueOptions(idempotency=Idempotency(key=str(uuid.uuid4())))) for _ in range(3)
    ])  # fmt: skip
    assert [r.outcome for r in batch] == ["accepted"] * 3


def test_unkeyed_calls_are_not_repeated(queue: Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []

    def lose(requests, ids, retry):  # type: ignore[no-untyped-def]
        calls.append(retry)
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(queue, "_send", lose)
    with pytest.raises(psycopg.OperationalError):
        queue.enqueue("t", {})
    assert calls == [False]


def test_postgresql_restart_during_keyed_calls(server: Server, pool) -> None:  # type: ignore[no-untyped-def]
    if server.data is None:
        pytest.skip("DATABASE_URL given: this run does not own the server, so it does not restart it")
    # The most tries the TypeScript core allows (about 40 s of backoff): a restart on a loaded
    # machine (a shutdown checkpoint, then recovery) must not exhaust them.
    queue = Queue(pool, retry_attempts=20)
    scope = f"restart-{uuid.uuid4()}"
    results: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def produce(worker: int) -> None:
        i = 0
        while not stop.is_set() or i < 20:
            key = f"{worker}-{i}"
            try:
                r = queue.enqueue_with_result("t", {"i": i}, EnqueueOptions(idempotency=Idempotency(key=key, scope=scope)))
                results.append((key, r.job_id))
                # The same request again always replays the same job.
                again = queue.enqueue_with_result("t", {"i": i}, EnqueueOptions(idempotency=Idempotency(key=key, scope=scope)))
                assert again.job_id == r.job_id and again.outcome == "replayed"
            except BaseException as err:  # noqa: BLE001
                errors.append(err)
                return
            i += 1

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    while len(results) < 15:
        time.sleep(0.01)
    # Calls in flight when the server stops, for certain: a transaction of the test's own holds the
    # binding table, so the producers' next accepts wait inside PostgreSQL until the restart ends
    # them. (Without it, all three could be between calls at that moment and meet only fresh
    # connections afterwards: no retry, and nothing tested.)
    blocker = psycopg.connect(server.url)
    blocker.execute("lock table workhorse.key_binding in exclusive mode")
    time.sleep(0.3)
    server.pg_ctl("-m", "fast", "-w", "restart")
    blocker.close()
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(timeout=120)
    assert errors == [], (errors, queue.retry_stats)
    assert queue.retry_stats["retries"] > 0, queue.retry_stats
    per_key = jobs_per_key(queue, scope)
    assert len(per_key) == len(results) == len({k for k, _ in results}), (len(per_key), len(results))
    assert set(per_key.values()) == {1}, per_key
    with queue._pool.connection() as conn:
        jobs = {r[0] for r in conn.execute(
            "select job_id::text from workhorse.key_binding where scope = %s", (scope,)).fetchall()}  # fmt: skip
    assert jobs == {j for _, j in results}


class _CutTries:
    """Ends tries of an enqueue inside PostgreSQL: a transaction of the test's own holds
    workhorse.key_binding in ACCESS EXCLUSIVE mode (every enqueue of a keyed request reads it, even
    one that only finds a conflict), so a try waits on that lock until ``cut`` terminates its backend
    (pg_terminate_backend, from another connection): the client loses its connection mid-call."""

    def __init__(self, url: str):
        self._admin = psycopg.connect(url, autocommit=True)
        self._blocker = psycopg.connect(url)
        self._blocker_pid = self._blocker.info.backend_pid
        self._blocker.execute("lock table workhorse.key_binding in access exclusive mode")

    def _poll(self, sql: str, params: tuple[object, ...], what: str) -> list[tuple[object, ...]]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rows = self._admin.execute(sql, params).fetchall()
            if rows:
                return rows
            time.sleep(0.005)
        raise AssertionError(f"timed out waiting for {what}")

    def cut(self) -> None:
        """Waits for the next try to wait on the lock, terminates its backend, waits until it is gone."""
        rows = self._poll("select pid from pg_stat_activity where %s = any(pg_blocking_pids(pid))"
                          " and position('workhorse.enqueue' in query) > 0",
                          (self._blocker_pid,), "a try waiting on the lock")  # fmt: skip
        assert len(rows) == 1, rows
        pid = rows[0][0]
        # With a timeout, pg_terminate_backend returns once the backend has exited (PostgreSQL 14+).
        assert self._admin.execute("select pg_terminate_backend(%s, 30000)", (pid,)).fetchone() == (True,)

    def release(self) -> None:
        self._blocker.rollback()

    def close(self) -> None:
        self._blocker.close()
        self._admin.close()


def _in_thread(fn: Callable[[], object]) -> Callable[[], object]:
    """Runs ``fn`` in a thread; the returned function joins it and returns its result or error."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as err:  # noqa: BLE001
            out.append(err)

    thread = threading.Thread(target=run)
    thread.start()

    def join() -> object:
        thread.join(timeout=60)
        assert not thread.is_alive(), "the call did not finish"
        return out[0]

    return join


def test_a_conflict_on_the_second_try_is_not_an_exhausted_retry(database_url: str, pool) -> None:  # type: ignore[no-untyped-def]
    queue = Queue(pool)
    scope = f"conflict-retry-{uuid.uuid4()}"
    key = EnqueueOptions(idempotency=Idempotency(key="k", scope=scope))
    bound = queue.enqueue("t", {"a": 1}, key)
    cutter = _CutTries(database_url)
    try:
        join = _in_thread(lambda: queue.enqueue("t", {"b": 2}, key))  # the same key, another request
        cutter.cut()  # the first try loses its connection
        cutter.release()  # the second try runs and meets the key bound to another request
        err = join()
    finally:
        cutter.release()
        cutter.close()
    assert isinstance(err, EnqueueIdempotencyConflictError), err
    assert err.existing_job_id == bound
    assert queue.retry_stats == {"retried_calls": 1, "retries": 1, "recovered_accepts": 0, "exhausted": 0}


def test_every_try_losing_its_connection_is_one_exhausted_call(database_url: str, pool) -> None:  # type: ignore[no-untyped-def]
    queue = Queue(pool, retry_attempts=3, retry_max_delay_ms=0)
    scope = f"exhausted-{uuid.uuid4()}"
    queue.enqueue("t", {"warm": 1}, EnqueueOptions(idempotency=Idempotency(key="warm", scope=scope)))  # the secret read
    key = EnqueueOptions(idempotency=Idempotency(key="k", scope=scope))
    cutter = _CutTries(database_url)
    try:
        join = _in_thread(lambda: queue.enqueue("t", {"c": 3}, key))
        for _ in range(3):  # every try
            cutter.cut()
        err = join()
    finally:
        cutter.release()
        cutter.close()
    assert isinstance(err, WorkhorseDatabaseError) and err.retryable, err
    assert queue.retry_stats == {"retried_calls": 1, "retries": 2, "recovered_accepts": 0, "exhausted": 1}

"""``Queue.close()`` and ``aio.Queue.close()``: calls made before it finish and their wake-up is
sent; calls made after it raise ``QueueClosedError`` and send nothing; ``with`` / ``async with``
close on the way out. The pool is never closed."""

from __future__ import annotations

import asyncio
import select
import threading
import time
import uuid

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool
import pytest

from workhorse import EnqueueOptions, Idempotency, Queue, QueueClosedError, aio
from workhorse.queue import WAKE_CHANNEL


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def jobs_of(pool: ConnectionPool, queue_name: str) -> int:
    with pool.connection() as conn:
        row = conn.execute("select count(*)::int from workhorse.job where queue = %s", [queue_name]).fetchone()
        assert row is not None
        return int(row[0])


def test_a_call_after_close_raises_and_writes_nothing(pool: ConnectionPool) -> None:
    q = name("closed")
    with Queue(pool) as queue:
        queue.enqueue("t", {}, EnqueueOptions(queue=q))
    for call in (
        lambda: queue.enqueue("t", {}, EnqueueOptions(queue=q)),
        lambda: queue.enqueue_many([]),
        lambda: queue.find_binding("k"),
        lambda: queue.describe_key("k"),
        lambda: queue.get_job(str(uuid.uuid4())),
    ):
        with pytest.raises(QueueClosedError, match="create a new Queue"):
            call()
    queue.close()  # twice is fine
    assert jobs_of(pool, q) == 1
    assert not pool.closed and Queue(pool).enqueue("t", {}, EnqueueOptions(queue=q))  # the pool stays open


def test_close_waits_for_a_call_in_flight_and_sends_its_wake_up(pool: ConnectionPool, database_url: str) -> None:
    q, key = name("closing"), name("k")
    options = EnqueueOptions(queue=q, idempotency=Idempotency(key=key))
    queue = Queue(pool)
    with psycopg.connect(database_url, autocommit=True) as listener, psycopg.connect(database_url) as holder:
        listener.execute(f'listen "{WAKE_CHANNEL}"')
        # The holder's open transaction binds the key: the queue's call on it waits on that row.
        queue.enqueue("t", {"n": 1}, options, conn=holder)
        answers: list[str] = []
        in_flight = threading.Thread(target=lambda: answers.append(queue.enqueue_with_result("t", {"n": 1}, options).outcome))
        in_flight.start()
        wait_until_blocked(holder, key)
        closing = threading.Thread(target=queue.close)
        closing.start()
        closing.join(0.3)
        assert closing.is_alive(), "close() returned while a call made before it was still waiting"
        with pytest.raises(QueueClosedError):
            queue.enqueue("t", {"n": 2}, EnqueueOptions(queue=q))
        holder.rollback()  # the waiting call now takes the key itself
        closing.join(30)
        assert not closing.is_alive() and answers == ["accepted"]
        waker = queue._waker
        assert waker is not None and not waker._pending and not waker._sending, "close() returned before the wake-up was sent"
        assert q in heard_on(listener, q)
    assert jobs_of(pool, q) == 1


def wait_until_blocked(holder: psycopg.Connection, key_hint: str) -> None:
    """Until another backend waits on a lock the holder's transaction holds."""
    with psycopg.connect(holder.info.dsn, autocommit=True) as watcher:
        for _ in range(300):
            row = watcher.execute(
                "select count(*)::int from pg_stat_activity where wait_event_type = 'Lock' and %s = any(pg_blocking_pids(pid))",
                [holder.info.backend_pid],
            ).fetchone()
            if row and row[0] > 0:
                return
            select.select([], [], [], 0.01)
    raise AssertionError(f"no call waited on the holder's key {key_hint}")


def heard_on(listener: psycopg.Connection, q: str) -> list[str]:
    """The wake-ups the listener hears until it hears q's (at most 10 s)."""
    pg, heard = listener.pgconn, []
    deadline = time.monotonic() + 10
    while q not in heard and time.monotonic() < deadline:
        select.select([pg.socket], [], [], 0.2)
        pg.consume_input()
        while (n := pg.notifies()) is not None:
            heard.append(n.extra.decode())
    return heard


def test_aio_close_refuses_later_calls_and_async_with_closes(database_url: str) -> None:
    async def main() -> None:
        async with AsyncConnectionPool(database_url, min_size=1, max_size=4) as apool:
            q = name("aio-closed")
            async with aio.Queue(apool) as queue:
                first = asyncio.ensure_future(queue.enqueue_with_result("t", {}, EnqueueOptions(queue=q)))
                await asyncio.sleep(0)  # the call is made before close()
            assert (await first).outcome == "accepted"
            with pytest.raises(QueueClosedError):
                await queue.enqueue("t", {}, EnqueueOptions(queue=q))
            with pytest.raises(QueueClosedError):
                await queue.get_job(str(uuid.uuid4()))
            assert not apool.closed

    asyncio.run(main())

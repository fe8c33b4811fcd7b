"""Wake-ups: the enqueue statement sends no NOTIFY; after its commit the Queue wakes listeners of
the queues that got a job, in a statement of its own (as the TypeScript core does)."""

from __future__ import annotations

from collections.abc import Iterator
import select
import threading
import time
import uuid

import psycopg
from psycopg_pool import ConnectionPool
import pytest

from workhorse import EnqueueOptions, EnqueueRequest, Idempotency, Queue
from workhorse.queue import WAKE_CHANNEL


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def listener(database_url: str) -> Iterator[psycopg.Connection]:
    """A connection of its own that LISTENs on workhorse_jobs, as a worker's does."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"listen {WAKE_CHANNEL}")
        yield conn


def next_wake(conn: psycopg.Connection) -> str:
    """The payload (a queue name) of the next workhorse_jobs notification, within 10 s (read off
    the idle connection's socket, as the worker's LISTEN loop does)."""
    pg = conn.pgconn
    deadline = time.monotonic() + 10
    while (n := pg.notifies()) is None:
        ready, _, _ = select.select([pg.socket], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError("no wake-up arrived")
        pg.consume_input()
    assert n.relname.decode() == WAKE_CHANNEL
    return n.extra.decode()


def marker(pool: ConnectionPool) -> str:
    """A notification of the test's own, sent after everything before it committed: PostgreSQL
    delivers notifications in commit order, so a listener that gets the marker next got nothing else."""
    m = name("marker")
    with pool.connection() as conn:
        conn.execute("select pg_notify(%s, %s)", (WAKE_CHANNEL, m))
    return m


def test_an_enqueue_wakes_listeners_after_its_commit(queue: Queue, pool: ConnectionPool, listener: psycopg.Connection) -> None:
    q = name("wake")
    job_id = queue.enqueue("wake.one", {}, EnqueueOptions(queue=q))
    assert next_wake(listener) == q
    with pool.connection() as conn:
        assert conn.execute("select count(*) from workhorse.job where id = %s", (job_id,)).fetchone() == (1,)

    # A batch wakes each queue that got a job once; a replay (no new job) wakes nobody.
    a, b, k = name("wake-a"), name("wake-b"), f"k-{uuid.uuid4()}"
    queue.enqueue_many([
        EnqueueRequest("wake.many", 1, EnqueueOptions(queue=a)),
        EnqueueRequest("wake.many", 2, EnqueueOptions(queue=b, idempotency=Idempotency(key=k))),
        EnqueueRequest("wake.many", 3, EnqueueOptions(queue=a)),
    ])  # fmt: skip
    assert sorted([next_wake(listener), next_wake(listener)]) == sorted([a, b])
    again = queue.enqueue_with_result("wake.many", 2, EnqueueOptions(queue=b, idempotency=Idempotency(key=k)))
    assert again.outcome == "replayed"
    m = marker(pool)
    assert next_wake(listener) == m


def test_the_enqueue_statement_sends_no_notify(pool: ConnectionPool, listener: psycopg.Connection) -> None:
    """Its commit would take PostgreSQL's global notify lock and serialise committing enqueues: with
    the wake-up turned off, a listener gets nothing from single calls and batches."""
    quiet = Queue(pool, notify=False)
    q = name("quiet")
    quiet.enqueue("quiet.one", 1, EnqueueOptions(queue=q))
    quiet.enqueue("quiet.one", 2, EnqueueOptions(queue=q, idempotency=Idempotency(key=f"k-{uuid.uuid4()}")))
    quiet.enqueue_many([EnqueueRequest("quiet.many", 3, EnqueueOptions(queue=q)),
                        EnqueueRequest("quiet.many", 4, EnqueueOptions(queue=name("quiet")))])  # fmt: skip
    m = marker(pool)
    assert next_wake(listener) == m


def test_one_thread_sends_the_wake_ups_of_many_accepts(queue: Queue, listener: psycopg.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """30 accepts one after another start one wake-up thread, not one each (a thread start per accept
    cost ~40 µs and a turn of the GIL), and every queue is still woken after its job committed."""
    started: list[str] = []
    real_start = threading.Thread.start

    def counting_start(self: threading.Thread) -> None:
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    queues = [name(f"one-thread-{i}") for i in range(30)]
    for q in queues:
        queue.enqueue("wake.thread", {}, EnqueueOptions(queue=q))
    woken: set[str] = set()
    while not woken.issuperset(queues):
        woken.add(next_wake(listener))
    assert started.count("workhorse-wake") == 1

"""Enqueue inside the caller's transaction (``conn=``): the job, its key and its wake-up commit or
roll back with the caller's own writes; replays and conflicts are decided in that transaction."""

from __future__ import annotations

from collections.abc import Iterator
import select
import time
import uuid

import psycopg
from psycopg_pool import ConnectionPool
import pytest

from workhorse import (
    EnqueueIdempotencyConflictError,
    EnqueueOptions,
    EnqueueRequest,
    EnqueueValidationError,
    Idempotency,
    Queue,
)
from workhorse.queue import WAKE_CHANNEL


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection]:
    """The caller's own connection, in a transaction (psycopg's default), with its orders table."""
    with psycopg.connect(database_url) as c:
        c.execute("create table if not exists tx_test_orders (id text primary key)")
        c.commit()
        yield c


def count(pool: ConnectionPool, sql: str, *args: object) -> int:
    with pool.connection() as c:
        row = c.execute(sql, args).fetchone()
        return int(row[0]) if row else 0


def heard(listener: psycopg.Connection, seconds: float) -> list[str]:
    """The workhorse_jobs notifications that reach ``listener`` within ``seconds`` (read off the idle
    connection's socket, as a worker's LISTEN loop does)."""
    pg = listener.pgconn
    out: list[str] = []
    deadline = time.monotonic() + seconds
    while True:
        while (n := pg.notifies()) is not None:
            out.append(n.extra.decode())
        left = deadline - time.monotonic()
        if left <= 0 or out:
            return out
        ready, _, _ = select.select([pg.socket], [], [], left)
        if ready:
            pg.consume_input()


def test_the_job_commits_with_the_callers_write(queue: Queue, pool: ConnectionPool, conn: psycopg.Connection) -> None:
    order, q = name("order"), name("tx-commit")
    options = EnqueueOptions(queue=q, idempotency=Idempotency(key=order))
    conn.execute("insert into tx_test_orders (id) values (%s)", (order,))
    job_id = queue.enqueue("order.place", {"order": order}, options, conn=conn)
    assert count(pool, "select count(*) from workhorse.job where id = %s", job_id) == 0  # not before the commit
    conn.commit()
    assert count(pool, "select count(*) from workhorse.job where id = %s", job_id) == 1
    assert count(pool, "select count(*) from tx_test_orders where id = %s", order) == 1
    again = queue.enqueue_with_result("order.place", {"order": order}, options)
    assert (again.outcome, again.job_id) == ("replayed", job_id)


def test_the_wake_up_goes_with_the_commit(queue: Queue, database_url: str, conn: psycopg.Connection) -> None:
    q = name("tx-wake")
    with psycopg.connect(database_url, autocommit=True) as listener:
        listener.execute(f"listen {WAKE_CHANNEL}")
        queue.enqueue("order.place", {}, EnqueueOptions(queue=q), conn=conn)
        assert heard(listener, 0.3) == []  # nothing before the commit
        conn.commit()
        assert heard(listener, 10) == [q]


def test_the_job_rolls_back_with_the_callers_write(queue: Queue, pool: ConnectionPool, conn: psycopg.Connection) -> None:
    order = name("order")
    options = EnqueueOptions(queue="tx-rollback", idempotency=Idempotency(key=order))
    conn.execute("insert into tx_test_orders (id) values (%s)", (order,))
    results = queue.enqueue_many(
        [EnqueueRequest("order.place", 1, options), EnqueueRequest("order.audit", 2, EnqueueOptions(queue="tx-rollback"))],
        conn=conn,
    )
    conn.rollback()
    ids = [r.job_id for r in results]
    assert count(pool, "select count(*) from workhorse.job where id = any(%s::uuid[])", ids) == 0
    assert count(pool, "select count(*) from tx_test_orders where id = %s", order) == 0
    fresh = queue.enqueue_with_result("order.place", 1, options)
    assert fresh.outcome == "accepted" and fresh.job_id != ids[0]


def test_replays_and_conflicts_inside_the_transaction(queue: Queue, pool: ConnectionPool, conn: psycopg.Connection) -> None:
    options = EnqueueOptions(queue="tx-decide", idempotency=Idempotency(key=name("k")))
    first = queue.enqueue("order.place", {"n": 1}, options)

    replay = queue.enqueue_with_result("order.place", {"n": 1}, options, conn=conn)
    assert (replay.outcome, replay.job_id) == ("replayed", first)

    # In a savepoint, a conflict is the typed error and the transaction goes on.
    with pytest.raises(EnqueueIdempotencyConflictError) as caught:
        with conn.transaction():
            queue.enqueue("order.place", {"n": 2}, options, conn=conn)
    assert caught.value.existing_job_id == first and "payload" in caught.value.conflicting_fields
    order = name("order")
    conn.execute("insert into tx_test_orders (id) values (%s)", (order,))
    conn.commit()
    assert count(pool, "select count(*) from tx_test_orders where id = %s", order) == 1

    # Without one, the conflict aborts the transaction, as any SQL error does.
    with pytest.raises(EnqueueIdempotencyConflictError):
        queue.enqueue("order.place", {"n": 3}, options, conn=conn)
    with pytest.raises(psycopg.errors.InFailedSqlTransaction):
        conn.execute("select 1")
    conn.rollback()


def test_conn_must_be_a_connection(queue: Queue, pool: ConnectionPool) -> None:
    with pytest.raises(EnqueueValidationError) as caught:
        queue.enqueue("t", 1, conn=pool)  # type: ignore[arg-type]
    assert caught.value.issues[0].option == "conn"

"""``workhorse.aio.Queue``: the same calls, outcomes, errors and statements as the blocking Queue,
over an AsyncConnectionPool. Each test runs its own event loop (``asyncio.run``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any
import uuid

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool
import pytest

from workhorse import (
    EnqueueIdempotencyConflictError,
    EnqueueOptions,
    EnqueueRequest,
    EnqueueValidationError,
    Idempotency,
    Queue,
    aio,
)
from workhorse.queue import WAKE_CHANNEL

from .test_close import heard_on


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def run(database_url: str, body: Callable[[aio.Queue, AsyncConnectionPool], Awaitable[None]], **options: Any) -> None:
    async def main() -> None:
        async with AsyncConnectionPool(database_url, min_size=1, max_size=8) as pool:
            queue = aio.Queue(pool, **options)
            try:
                await body(queue, pool)
            finally:
                await queue.close()

    asyncio.run(main())


def test_accept_replay_conflict_and_a_batch(database_url: str) -> None:
    async def body(queue: aio.Queue, _pool: AsyncConnectionPool) -> None:
        options = EnqueueOptions(queue="aio", idempotency=Idempotency(key=name("k")))
        first = await queue.enqueue_with_result("t", {"n": 1}, options)
        again = await queue.enqueue_with_result("t", {"n": 1}, options)
        assert (first.outcome, again.outcome, again.job_id) == ("accepted", "replayed", first.job_id)
        with pytest.raises(EnqueueIdempotencyConflictError) as caught:
            await queue.enqueue("t", {"n": 2}, options)
        assert caught.value.existing_job_id == first.job_id
        assert caught.value.conflicting_fields == ["payload"] and caught.value.payload_paths == ["$.n"]
        k = name("b")
        batch = await queue.enqueue_many([
            EnqueueRequest("t", 1, EnqueueOptions(queue="aio", idempotency=Idempotency(key=k))),
            EnqueueRequest("t", 1, EnqueueOptions(queue="aio", idempotency=Idempotency(key=k))),
            EnqueueRequest("t", 2, EnqueueOptions(queue="aio")),
        ])  # fmt: skip
        assert [r.outcome for r in batch] == ["accepted", "replayed", "accepted"]
        assert batch[0].job_id == batch[1].job_id != batch[2].job_id
        assert await queue.enqueue_many([]) == []

    run(database_url, body)


def test_concurrent_calls_on_one_key_make_one_job(database_url: str, pool: ConnectionPool) -> None:
    key = name("race")

    async def body(queue: aio.Queue, _pool: AsyncConnectionPool) -> None:
        options = EnqueueOptions(queue="aio-race", idempotency=Idempotency(key=key))
        results = await asyncio.gather(*(queue.enqueue_with_result("t", {"n": 1}, options) for _ in range(16)))
        assert len({r.job_id for r in results}) == 1
        assert sorted(r.outcome for r in results) == ["accepted"] + ["replayed"] * 15

    run(database_url, body)
    with pool.connection() as conn:
        assert conn.execute("select count(*) from workhorse.job where queue = 'aio-race'").fetchone() == (1,)


def test_the_same_decision_and_keys_as_the_blocking_queue(database_url: str, pool: ConnectionPool) -> None:
    key, blocking = name("both"), Queue(pool)
    options = EnqueueOptions(queue="aio-both", idempotency=Idempotency(key=key, scope="cross"))
    job_id = blocking.enqueue("t", {"n": 1}, options)

    async def body(queue: aio.Queue, _pool: AsyncConnectionPool) -> None:
        replay = await queue.enqueue_with_result("t", {"n": 1}, options)
        assert (replay.outcome, replay.job_id) == ("replayed", job_id)
        assert await queue.describe_key(key, "cross") == blocking.describe_key(key, "cross")
        binding = await queue.find_binding(key, "cross")
        assert binding is not None and binding.job_id == job_id
        job = await queue.get_job(job_id)
        assert job is not None and job.payload == {"n": 1}
        assert await queue.get_job(str(uuid.uuid4())) is None
        with pytest.raises(EnqueueValidationError):
            await queue.get_job("not-a-uuid")

    run(database_url, body)


def test_inside_the_callers_transaction(database_url: str, pool: ConnectionPool) -> None:
    with pool.connection() as conn:
        conn.execute("create table if not exists tx_test_orders (id text primary key)")
    committed, rolled_back = name("order"), name("order")

    async def body(queue: aio.Queue, _pool: AsyncConnectionPool) -> None:
        async with await psycopg.AsyncConnection.connect(database_url) as conn:
            await conn.execute("insert into tx_test_orders (id) values (%s)", (committed,))
            kept = await queue.enqueue("order.place", {"order": committed}, EnqueueOptions(queue="aio-tx"), conn=conn)
            await conn.commit()
            await conn.execute("insert into tx_test_orders (id) values (%s)", (rolled_back,))
            dropped = await queue.enqueue("order.place", {"order": rolled_back}, EnqueueOptions(queue="aio-tx"), conn=conn)
            await conn.rollback()
        assert await queue.get_job(kept) is not None
        assert await queue.get_job(dropped) is None
        with pytest.raises(EnqueueValidationError) as caught:
            await queue.enqueue("t", 1, conn=pool)  # type: ignore[arg-type]
        assert caught.value.issues[0].option == "conn"

    run(database_url, body)
    with pool.connection() as conn:
        rows = conn.execute("select id from tx_test_orders where id = any(%s)", ([committed, rolled_back],)).fetchall()
    assert rows == [(committed,)]


def test_a_wake_up_follows_the_commit(database_url: str) -> None:
    q = name("aio-wake")
    with psycopg.connect(database_url, autocommit=True) as listener:
        listener.execute(f"listen {WAKE_CHANNEL}")

        async def body(queue: aio.Queue, _pool: AsyncConnectionPool) -> None:
            await queue.enqueue("t", {}, EnqueueOptions(queue=q))

        run(database_url, body)  # close() waited for the wake-up
        assert q in heard_on(listener, q)


def test_a_lost_answer_is_recovered_as_accepted(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(queue: aio.Queue, _pool: AsyncConnectionPool) -> None:
        real_send = queue._send
        calls: list[bool] = []

        async def send_then_lose_the_answer(requests: Any, ids: Any, retry: bool, caller: Any = None) -> Any:
            calls.append(retry)
            rows = await real_send(requests, ids, retry)  # committed
            if len(calls) == 1:
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            return rows

        monkeypatch.setattr(queue, "_send", send_then_lose_the_answer)
        result = await queue.enqueue_with_result("t", {"n": 1}, EnqueueOptions(idempotency=Idempotency(key=name("lost"))))
        assert calls == [False, True]
        assert result.outcome == "accepted"
        assert queue.retry_stats["recovered_accepts"] == 1

    run(database_url, body)


def test_the_pool_must_be_an_async_pool(pool: ConnectionPool) -> None:
    with pytest.raises(EnqueueValidationError) as caught:
        aio.Queue(pool)  # type: ignore[arg-type]
    assert caught.value.issues[0].option == "pool"

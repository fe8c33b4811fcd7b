"""A single enqueue through the pool goes through libpq's prepared call (workhorse/_fast.py): the
statement is prepared once per connection, made again when the session lost it, and answers,
conflicts and validation as the adapted path does."""

from __future__ import annotations

import asyncio
import uuid

from psycopg_pool import AsyncConnectionPool, ConnectionPool
import pytest

from workhorse import EnqueueIdempotencyConflictError, EnqueueOptions, Idempotency, Queue, aio


def test_prepared_once_per_connection_and_again_after_the_session_lost_it(database_url: str) -> None:
    with ConnectionPool(database_url, min_size=1, max_size=1, open=True) as pool:
        queue = Queue(pool, notify=False)
        options = EnqueueOptions(queue="fast", idempotency=Idempotency(key=f"fast-{uuid.uuid4()}"))
        first = queue.enqueue_with_result("t", {"tags": ["a", 'q"uote', "back\\slash"], "n": 1e-7}, options)
        assert first.outcome == "accepted"
        with pool.connection() as conn:
            names = [r[0] for r in conn.execute("select name from pg_prepared_statements").fetchall()]
            assert names.count("workhorse_enqueue_one_py") == 1
            conn.execute("deallocate all")
        # Prepared again on the same connection; the same request replays the same job.
        again = queue.enqueue_with_result("t", {"n": 1e-7, "tags": ["a", 'q"uote', "back\\slash"]}, options)
        assert (again.job_id, again.outcome) == (first.job_id, "replayed")
        with pool.connection() as conn:
            row = conn.execute(
                "select payload::text, tags from workhorse.job where id = %s::uuid", [first.job_id]
            ).fetchone()
        assert row == ('{"n": 0.0000001, "tags": ["a", "q\\"uote", "back\\\\slash"]}', [])


def test_tags_and_a_conflict_through_the_prepared_call(database_url: str) -> None:
    with ConnectionPool(database_url, min_size=1, max_size=1, open=True) as pool:
        queue = Queue(pool, notify=False)
        k = f"fast-{uuid.uuid4()}"
        tags = ["eu", 'with "quotes"', "back\\slash", "comma,brace}"]
        job = queue.enqueue("t", {"a": 1}, EnqueueOptions(queue="fast", tags=tags, idempotency=Idempotency(key=k)))
        with pool.connection() as conn:
            stored = conn.execute("select tags from workhorse.job where id = %s::uuid", [job]).fetchone()
        assert stored is not None and sorted(stored[0]) == sorted(tags)
        with pytest.raises(EnqueueIdempotencyConflictError) as caught:
            queue.enqueue("t", {"a": 2}, EnqueueOptions(queue="fast", tags=tags, idempotency=Idempotency(key=k)))
        assert (caught.value.existing_job_id, caught.value.conflicting_fields) == (job, ["payload"])
        assert caught.value.payload_paths == ["$.a"]


def test_the_asyncio_queue_takes_the_same_prepared_call(database_url: str) -> None:
    """workhorse.aio.Queue: prepared once per connection, again after DEALLOCATE, a conflict named as
    the adapted path names it, and a broken session's error as psycopg's own."""

    async def main() -> None:
        async with AsyncConnectionPool(database_url, min_size=1, max_size=1) as pool:
            queue = aio.Queue(pool, notify=False)
            k = f"fast-aio-{uuid.uuid4()}"
            tags = ["eu", 'with "quotes"', "back\\slash", "comma,brace}"]
            options = EnqueueOptions(queue="fast", tags=tags, idempotency=Idempotency(key=k))
            first = await queue.enqueue_with_result("t", {"a": 1, "n": 1e-7}, options)
            assert first.outcome == "accepted"
            async with pool.connection() as conn:
                cur = await conn.execute("select name from pg_prepared_statements")
                names = [r[0] for r in await cur.fetchall()]
                assert names.count("workhorse_enqueue_one_py") == 1
                cur = await conn.execute("select payload::text, tags from workhorse.job where id = %s::uuid", [first.job_id])
                row = await cur.fetchone()
                assert row is not None and row[0] == '{"a": 1, "n": 0.0000001}' and sorted(row[1]) == sorted(tags)
                await conn.execute("deallocate all")
            again = await queue.enqueue_with_result("t", {"n": 1e-7, "a": 1}, options)
            assert (again.job_id, again.outcome) == (first.job_id, "replayed")
            with pytest.raises(EnqueueIdempotencyConflictError) as caught:
                await queue.enqueue("t", {"a": 2, "n": 1e-7}, options)
            assert (caught.value.existing_job_id, caught.value.conflicting_fields) == (first.job_id, ["payload"])
            assert caught.value.payload_paths == ["$.a"]
            # The connection is usable after the conflict: the next call on it is answered.
            other = await queue.enqueue_with_result("t", {}, EnqueueOptions(queue="fast", idempotency=Idempotency(key=f"{k}-2")))
            assert other.outcome == "accepted"
            await queue.close()

    asyncio.run(main())

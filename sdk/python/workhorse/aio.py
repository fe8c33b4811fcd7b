"""``workhorse.aio.Queue``: the ``Queue`` for asyncio applications (FastAPI, Starlette, aiohttp), over
psycopg_pool's ``AsyncConnectionPool``. Same calls, results, errors and statements as the blocking
``workhorse.Queue`` (docs/clients.md, "asyncio"): the request checks, hashing and the reading of
PostgreSQL's answers are shared code (``_calls.py``, ``_input.py``); only the database I/O awaits.
Jobs are run by the blocking ``workhorse.Worker`` (threads), whichever client enqueued them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool

from ._calls import (
    BINDING_SQL,
    JOB_SQL,
    QueueCore,
    binding_from,
    binding_params,
    describe,
    interpret,
    job_from,
    job_params,
    is_retryable,
    normalize_batch,
    scoped_key,
    unpack_batch,
)
from ._input import DEFAULT_PAYLOAD_BYTES, Normalized, RequestConfig, normalize_request
from ._fast import exec_one_async
from .errors import (
    EnqueueIdempotencyConflictError,
    EnqueueValidationError,
    QueueClosedError,
    ValidationIssue,
    WorkhorseDatabaseError,
)
from .queue import (
    _LAYOUT_SQL,
    _OBSERVATION_SQL,
    _ONE_SQL,
    _ONE_SQL_POSITIONAL,
    _WAKE_SQL,
    WAKE_CHANNEL,
    _check_conn,
    _conflict_observation,
    _job_ids,
    _names_a_key,
    _statement_of,
    _translate,
    installation_sql,
)
from .types import BindingInfo, EnqueueOptions, EnqueueRequest, EnqueueResult, Job, KeyDescription, Unset

T = TypeVar("T")

#: As ``workhorse.queue.WAKE_MIN_INTERVAL_S``: the shortest time between two wake-up statements.
WAKE_MIN_INTERVAL_S = 0.010


class Queue(QueueCore):
    """Enqueue and look up jobs from asyncio. One per event loop and pool is enough; calls may run
    concurrently (each takes its own connection from the pool). The options are the blocking
    ``Queue``'s. ``await queue.close()`` (or leaving ``async with Queue(pool) as queue:``) lets calls
    already made finish and sends their pending wake-up; calls made after it raise
    ``QueueClosedError``. It never closes the pool.

    ``pool``: a ``psycopg_pool.AsyncConnectionPool`` the application opened (``await pool.open()`` or
    ``async with``); anything else is an ``EnqueueValidationError`` naming ``pool``."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        key_secret: str | bytes | None = None,
        max_payload_bytes: int = DEFAULT_PAYLOAD_BYTES,
        source: str | None = None,
        retry_attempts: int = 12,
        retry_max_delay_ms: int = 3000,
        notify: bool = True,
    ):
        if not isinstance(pool, AsyncConnectionPool):
            raise EnqueueValidationError([ValidationIssue("pool", "must be a psycopg_pool.AsyncConnectionPool")])
        super().__init__(
            key_secret=key_secret, max_payload_bytes=max_payload_bytes, source=source,
            retry_attempts=retry_attempts, retry_max_delay_ms=retry_max_delay_ms,
        )  # fmt: skip
        self._pool = pool
        self._lock = asyncio.Lock()
        self._waker = _Waker(pool) if notify else None
        self._closed = False
        self._active = 0  # calls made before close() and not yet answered
        self._idle = asyncio.Event()
        self._idle.set()

    async def close(self) -> None:
        """Refuses calls made from now on (``QueueClosedError``), waits for the calls already made and
        then for their pending wake-up. Closing twice is fine. The pool stays open (it is the
        application's)."""
        self._closed = True
        await self._idle.wait()
        if self._waker is not None:
            await self._waker.drain()

    async def __aenter__(self) -> Queue:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @contextmanager
    def _call(self) -> Iterator[None]:
        """One public call: refused after close(), counted until it answers."""
        if self._closed:
            raise QueueClosedError()
        self._active += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    # --- the installation secret and the layout

    async def _repeating(self, fn: Callable[[int], Awaitable[T]]) -> T:
        for attempt in range(1, self._retry_attempts + 1):
            try:
                return await fn(attempt)
            except Exception as err:
                wait = self._retry_wait(err, attempt)
                if wait is None:
                    raise
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _load(self, repeat: bool = False) -> bytes:
        if self._secret is not None:
            return self._secret
        async with self._lock:
            if self._secret is not None:
                return self._secret

            async def read(_attempt: int = 1) -> tuple[Any, ...] | None:
                try:
                    async with self._pool.connection() as conn:
                        row = await (await conn.execute(installation_sql(self._outside))).fetchone()
                        if not self._checked_layout:
                            await self._check_layout(conn)
                        return row
                except psycopg.Error as err:
                    raise WorkhorseDatabaseError(f"reading the installation key failed: {err}", err, is_retryable(err)) from err

            return self._keep_secret(await (self._repeating(read) if repeat and self._retry_attempts > 1 else read()))

    async def _check_layout(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._keep_layout(await (await conn.execute(_LAYOUT_SQL)).fetchone())

    async def _config(self, keyed: bool) -> RequestConfig:
        return self._request_config(await self._load(repeat=True) if keyed else self._secret)

    # --- enqueue

    async def enqueue(
        self,
        type: str,
        payload: Any,
        options: EnqueueOptions | Mapping[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> str:
        """Enqueues one job and returns its id (an existing job's id when the key replays or coalesces).
        ``conn``: inside the caller's transaction on this ``AsyncConnection``, as the blocking Queue's
        ``conn=`` (a conflict leaves the transaction aborted: roll back, or use ``conn.transaction()``)."""
        return (await self.enqueue_with_result(type, payload, options, conn=conn)).job_id

    async def enqueue_with_result(
        self,
        type: str,
        payload: Any,
        options: EnqueueOptions | Mapping[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> EnqueueResult:
        """Like ``enqueue``, and says what PostgreSQL decided (``outcome``, and ``reason`` for ``non_replaceable``)."""
        with self._call():
            _check_conn(conn, psycopg.AsyncConnection)
            config = await self._config(_names_a_key(options))
            n = normalize_request(type, payload, options, config)
            return (await self._run([n], conn))[0]

    async def enqueue_many(
        self, requests: Sequence[EnqueueRequest | Mapping[str, Any]], *, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[EnqueueResult]:
        """Up to 1,000 requests in one round trip and one transaction; results in input order.
        Any conflict rolls the whole batch back."""
        with self._call():
            _check_conn(conn, psycopg.AsyncConnection)
            unpacked = unpack_batch(requests)
            if not unpacked:
                return []
            config = await self._config(any(_names_a_key(o) for _, _, o in unpacked))
            return await self._run(normalize_batch(unpacked, config), conn)

    async def _run(self, requests: list[Normalized], conn: psycopg.AsyncConnection[Any] | None) -> list[EnqueueResult]:
        if not self._checked_layout:
            try:
                async with self._pool.connection() as pooled:
                    await self._check_layout(pooled)
            except psycopg.Error as err:
                raise WorkhorseDatabaseError(f"reading the schema layout failed: {err}", err, is_retryable(err)) from err
        ids = _job_ids(requests, self._distributed)
        if conn is not None:
            return await self._report(requests, ids, await self._send(requests, ids, False, conn), False, in_tx=True)
        if self._retry_attempts <= 1 or not all(r.keyed for r in requests):
            return await self._report(requests, ids, await self._send(requests, ids, False), False)

        async def attempt(n: int) -> list[EnqueueResult]:
            return await self._report(requests, ids, await self._send(requests, ids, n > 1), n > 1)

        return await self._repeating(attempt)

    async def _send(
        self,
        requests: list[Normalized],
        ids: list[str],
        retry: bool,
        caller: psycopg.AsyncConnection[Any] | None = None,
    ) -> list[tuple[Any, ...]]:
        """One enqueue statement: through the pool in autocommit with p_notify false (the waker sends
        the NOTIFY after the commit), or in the caller's transaction with the NOTIFY inside it."""
        try:
            if caller is not None:
                sql, params = _statement_of(requests, ids, retry, self._waker is not None, self._distributed)
                return await (await caller.execute(sql, params)).fetchall()
            async with self._pool.connection() as conn, _autocommit(conn):
                sql, params = _statement_of(requests, ids, retry, False, self._distributed)
                if sql is _ONE_SQL:
                    # One request, no legacy hash, one node: through libpq's prepared call (_fast.py).
                    return await exec_one_async(conn, _ONE_SQL_POSITIONAL, list(params.values()))
                return await (await conn.execute(sql, params)).fetchall()
        except psycopg.Error as err:
            translated = _translate(err, requests)
            if isinstance(translated, EnqueueIdempotencyConflictError):
                await self._observe([_conflict_observation(translated, requests[translated.ordinal - 1])])
            raise translated from err

    async def _report(
        self, requests: list[Normalized], ids: list[str], rows: list[tuple[Any, ...]], retried: bool, in_tx: bool = False
    ) -> list[EnqueueResult]:
        read = interpret(requests, ids, rows, retried)
        self.retry_stats["recovered_accepts"] += read.recovered
        if read.woken and self._waker is not None and not in_tx:
            self._waker.wake(read.woken)
        await self._observe(read.observations)
        return read.results

    async def _observe(self, rows: list[tuple[Any, ...]]) -> None:
        """Replays, coalesces, non-replaceable requests and conflicts, for operators; best effort."""
        if not rows:
            return
        try:
            async with self._pool.connection() as conn, conn.cursor() as cur:
                await cur.executemany(_OBSERVATION_SQL, rows)
        except psycopg.Error:
            pass  # an observation never fails the enqueue it describes

    # --- lookups

    async def describe_key(self, key: str, scope: str | Unset | None = None) -> KeyDescription:
        """What operators see of a scoped key (preview, digest, length); the raw key is not sent anywhere."""
        with self._call():
            k, s = scoped_key(key, scope)
            return describe(await self._load(), k, s)

    async def find_binding(self, key: str, scope: str | Unset | None = None) -> BindingInfo | None:
        """The binding of a scoped key (live or expired, the live one first), or None."""
        with self._call():
            k, s = scoped_key(key, scope)
            return binding_from(await self._query_one(BINDING_SQL, binding_params(await self._load(), k, s)))

    async def get_job(self, job_id: str) -> Job | None:
        """The job with this id, or None."""
        with self._call():
            return job_from(await self._query_one(JOB_SQL, job_params(job_id)))

    async def _query_one(self, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> tuple[Any, ...] | None:
        try:
            async with self._pool.connection() as conn:
                return await (await conn.execute(sql, params)).fetchone()
        except psycopg.Error as err:
            raise WorkhorseDatabaseError(f"query failed: {err}", err, is_retryable(err)) from err


@asynccontextmanager
async def _autocommit(conn: psycopg.AsyncConnection[Any]) -> AsyncIterator[None]:
    """Autocommit for the statements inside (no BEGIN and COMMIT round trips), then the connection's
    own setting again, as the blocking Queue does with its pool's connections."""
    was = conn.autocommit
    if not was:
        await conn.set_autocommit(True)
    try:
        yield
    finally:
        if not was and not conn.closed:
            await conn.set_autocommit(False)


class _Waker:
    """The blocking Queue's wake-ups on the event loop: one task sends them, at most one statement in
    flight and at most one per ``WAKE_MIN_INTERVAL_S``, each naming every queue since the last; best
    effort (a lost wake-up only delays a job until the workers' next poll)."""

    def __init__(self, pool: AsyncConnectionPool):
        self._pool = pool
        self._pending: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._last = float("-inf")

    def wake(self, queues: set[str]) -> None:
        self._pending |= queues
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def drain(self) -> None:
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            wait = self._last + WAKE_MIN_INTERVAL_S - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)  # queues named meanwhile join this statement
            queues, self._pending = sorted(self._pending), set()
            self._last = loop.time()
            try:
                async with self._pool.connection(timeout=5) as conn, _autocommit(conn):
                    await conn.execute(_WAKE_SQL, [WAKE_CHANNEL, queues])
            except Exception:
                pass  # the enqueue committed; a lost wake-up only delays a job (workers poll as well)

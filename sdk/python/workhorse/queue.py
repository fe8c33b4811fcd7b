"""``Queue``: scoped idempotent enqueue over a psycopg ConnectionPool, through the same SQL functions
(``workhorse.enqueue_one``, ``workhorse.enqueue_batch``) as the TypeScript core. The schema is the
TypeScript core's: run its ``migrate()`` first."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
import hashlib
import json
import os
import threading
import time
from typing import Any, TypeVar
import uuid

import psycopg
from psycopg_pool import ConnectionPool

from ._input import (
    DEFAULT_PAYLOAD_BYTES,
    Normalized,
    RequestConfig,
    iso,
    normalize_request,
    one_values,
    retry_policy_json,
)
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
from ._fast import exec_one, positional
from .errors import (
    EnqueueIdempotencyConflictError,
    EnqueueValidationError,
    QueueClosedError,
    ValidationIssue,
    WorkhorseDatabaseError,
)
from .types import UNSET, BindingInfo, EnqueueOptions, EnqueueRequest, EnqueueResult, Job, KeyDescription, Unset

T = TypeVar("T")

_ONE_TYPES = [
    "uuid", "text", "text", "jsonb", "timestamptz", "integer", "jsonb", "timestamptz", "bigint", "text", "text[]",
    "text", "text", "bytea", "text", "integer", "bigint", "bytea", "boolean", "text", "bigint", "boolean",
]  # fmt: skip
_SCOPE_PARAM, _KEY_HASH_PARAM = 12, 13  # 0-based positions of p_scope and p_key_hash
_COLUMNS = "job_id::text, outcome, request_digest, reason"


# A request with a key lifetime (docs/enqueue.md, "Key lifetimes") sends two more: p_trace_context (null)
# and p_hold_until, the last parameters of enqueue_one and enqueue_one_at. Requests without one keep
# the shorter statements.
_HOLD_TYPES = ["text", "text"]


def _one_sql(legacy: bool, hold: bool = False) -> str:
    args = []
    for i, t in enumerate(_ONE_TYPES + (_HOLD_TYPES if hold else [])):
        arg = f"%(p{i})s::{t}"
        if legacy and i == _KEY_HASH_PARAM:
            # While pre-secret bindings may be live: the live legacy binding's hash if there is one.
            arg = (
                f"coalesce((select b.key_hash from workhorse.key_binding b where b.scope = %(p{_SCOPE_PARAM})s::text"
                f" and b.key_hash = %(legacy)s::bytea and b.expires_at > now() for key share), {arg})"
            )
        args.append(arg)
    return f"select 1 as ordinal, {_COLUMNS} from workhorse.enqueue_one({', '.join(args)})"


_ONE_SQL = _one_sql(False)
_ONE_SQL_POSITIONAL = positional(_ONE_SQL)
_ONE_LEGACY_SQL = _one_sql(True)
_ONE_HOLD_SQL = _one_sql(False, hold=True)
_ONE_HOLD_LEGACY_SQL = _one_sql(True, hold=True)
# The distributed layout's call for one request: the same decision, on the node holding the bucket
# (also in the job id); the literal 1 is the ordinal.
_ONE_AT_SQL = (
    f"select 1 as ordinal, {_COLUMNS} from workhorse.enqueue_one_at(%s::integer, 1, "
    + ", ".join(f"%s::{t}" for t in _ONE_TYPES)
    + ")"
)
_ONE_AT_HOLD_SQL = (
    f"select 1 as ordinal, {_COLUMNS} from workhorse.enqueue_one_at(%s::integer, 1, "
    + ", ".join(f"%s::{t}" for t in _ONE_TYPES + _HOLD_TYPES)
    + ")"
)


@contextmanager
def _autocommit(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """Autocommit for the statements inside, then the connection's own setting again (the pool and
    its other users keep theirs). A checked-out connection is idle, so the switch is allowed."""
    was = conn.autocommit
    if not was:
        conn.autocommit = True
    try:
        yield
    finally:
        if not was and not conn.closed:
            conn.autocommit = False


def _key_bucket(scope: str, key_hash: bytes) -> int:
    """The distributed layout's bucket (0..4095) of a keyed request: the first 12 bits of
    SHA-256(scope, 0x00, key hash), as workhorse.key_bucket() computes it."""
    d = hashlib.sha256(scope.encode("utf-8") + b"\x00" + key_hash).digest()
    return (d[0] << 4) | (d[1] >> 4)


def _bucketed_id(job_id: str, bucket: int) -> str:
    """The job id with its last 12 bits set to the bucket (workhorse.id_bucket() reads them back)."""
    return job_id[:33] + format(bucket, "03x")
_BATCH_TYPES = [
    "uuid[]", "text[]", "text[]", "jsonb", "timestamptz[]", "integer[]", "jsonb[]", "timestamptz[]", "bigint[]",
    "text[]", "text[]", "integer[]", "text[]", "text[]", "bytea[]", "text[]", "integer[]", "bigint[]", "bytea[]",
    "bytea[]", "boolean", "text[]", "bigint[]", "boolean", "text", "text[]",
]  # fmt: skip
_BATCH_SQL = (
    f"select ordinal, {_COLUMNS} from workhorse.enqueue_batch("
    + ", ".join(f"%s::{t}" for t in _BATCH_TYPES)
    + ")"
)
_INSTALLATION_SQL = """select {secret} as key_secret,
  coalesce(greatest(0, extract(epoch from legacy_key_hashes_until - now()) * 1000), 0)::float8 as legacy_ms
  from workhorse.installation"""
_OBSERVATION_SQL = """insert into workhorse.enqueue_observation
  (at, outcome, reason, queue, type, scope, key_preview, key_digest, key_length, job_id, conflicting_fields,
   payload_paths, stored_request_digest, rejected_request_digest, source)
  values (now(), %s, %s, %s, %s, %s, %s, %s, %s, %s::uuid, %s::text[], %s::text[], %s, %s, %s)"""
#: The channel workers LISTEN on; the payload is the queue name.
WAKE_CHANNEL = "workhorse_jobs"
_WAKE_SQL = "select pg_notify(%s, q) from unnest(%s::text[]) q"

#: Shortest time between two wake-up statements from one ``Queue``, in seconds (as the TypeScript
#: core's ``WAKE_MIN_INTERVAL_MS``): during a burst the next waits out the rest of it, so a busy
#: producer sends at most 100 a second and a job waits at most this long for its wake-up.
WAKE_MIN_INTERVAL_S = 0.010
def _uuid7() -> str:
    """A time-ordered UUID (version 7), as the TypeScript core proposes for new jobs."""
    ms = time.time_ns() // 1_000_000
    raw = bytearray(ms.to_bytes(6, "big") + os.urandom(10))
    raw[6] = (raw[6] & 0x0F) | 0x70
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


class Queue(QueueCore):
    """Enqueue and look up jobs. Thread-safe; one per process and pool is enough.

    ``key_secret``: the installation secret (64 hex characters or 32 bytes); default
    ``WORKHORSE_KEY_SECRET``, else the one the TypeScript ``migrate()`` stored in the database.
    ``retry_attempts``: how often a keyed call is tried through connection loss (1 turns it off).
    ``notify``: after a call that accepted jobs committed, wake the workers of their queues with one
    ``select pg_notify('workhorse_jobs', q) from unnest(%s::text[]) q``, sent from a background
    thread (coalesced: at most one in flight per ``Queue``), best effort: its error is dropped, never
    the enqueue's. ``False`` sends none; workers then find jobs at their next poll. Default ``True``.

    ``close()`` (or leaving ``with Queue(pool) as queue:``) lets calls already made finish and sends
    their pending wake-up; calls made after it raise ``QueueClosedError``. The pool stays open (it is
    the application's).
    """

    def __init__(
        self,
        pool: ConnectionPool,
        *,
        key_secret: str | bytes | None = None,
        max_payload_bytes: int = DEFAULT_PAYLOAD_BYTES,
        source: str | None = None,
        retry_attempts: int = 12,
        retry_max_delay_ms: int = 3000,
        notify: bool = True,
    ):
        if not isinstance(pool, ConnectionPool):
            raise EnqueueValidationError([ValidationIssue("pool", "must be a psycopg_pool.ConnectionPool")])
        super().__init__(
            key_secret=key_secret, max_payload_bytes=max_payload_bytes, source=source,
            retry_attempts=retry_attempts, retry_max_delay_ms=retry_max_delay_ms,
        )  # fmt: skip
        self._pool = pool
        self._lock = threading.Lock()
        self._waker = _Waker(pool) if notify else None
        self._calls = threading.Condition()  # guards _closed and _active
        self._closed = False
        self._active = 0  # calls made before close() and not yet answered

    def close(self, timeout: float | None = None) -> None:
        """Refuses calls made from now on (``QueueClosedError``), waits for the calls already made and
        then for their pending wake-up statement, at most ``timeout`` seconds for each (None: no
        limit). Closing twice is fine. The pool stays open."""
        with self._calls:
            self._closed = True
            self._calls.wait_for(lambda: self._active == 0, timeout)
        if self._waker is not None:
            self._waker.drain(timeout)

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @contextmanager
    def _call(self) -> Iterator[None]:
        """One public call: refused after close(), counted until it answers."""
        with self._calls:
            if self._closed:
                raise QueueClosedError()
            self._active += 1
        try:
            yield
        finally:
            with self._calls:
                self._active -= 1
                if self._active == 0:
                    self._calls.notify_all()

    # --- the installation secret

    def _repeating(self, fn: Any) -> Any:
        for attempt in range(1, self._retry_attempts + 1):
            try:
                return fn(attempt)
            except Exception as err:
                wait = self._retry_wait(err, attempt)
                if wait is None:
                    raise
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _load(self, repeat: bool = False) -> bytes:
        if self._secret is not None:
            return self._secret
        with self._lock:
            if self._secret is not None:
                return self._secret

            def read(_attempt: int = 1) -> tuple[Any, ...] | None:
                try:
                    with self._pool.connection() as conn:
                        row = conn.execute(installation_sql(self._outside)).fetchone()
                        if not self._checked_layout:
                            self._check_layout(conn)
                        return row
                except psycopg.Error as err:
                    raise WorkhorseDatabaseError(f"reading the installation key failed: {err}", err, is_retryable(err)) from err

            return self._keep_secret(self._repeating(read) if repeat and self._retry_attempts > 1 else read())

    def _check_layout(self, conn: psycopg.Connection[Any]) -> None:
        self._keep_layout(conn.execute(_LAYOUT_SQL).fetchone())

    def _config(self, keyed: bool) -> RequestConfig:
        return self._request_config(self._load(repeat=True) if keyed else self._secret)

    # --- enqueue

    def enqueue(
        self,
        type: str,
        payload: Any,
        options: EnqueueOptions | Mapping[str, Any] | None = None,
        *,
        conn: psycopg.Connection[Any] | None = None,
    ) -> str:
        """Enqueues one job and returns its id (an existing job's id when the key replays or coalesces).

        ``conn``: enqueue inside the caller's transaction on this connection (docs/clients.md,
        "Inside your transaction"): the job, its key and its wake-up commit or roll back with the
        caller's own writes; never repeated after connection loss. A conflict or any other database
        error leaves the transaction aborted, as every SQL error does: roll back, or enqueue inside
        ``conn.transaction()`` (a savepoint) to go on without it."""
        return self.enqueue_with_result(type, payload, options, conn=conn).job_id

    def enqueue_with_result(
        self,
        type: str,
        payload: Any,
        options: EnqueueOptions | Mapping[str, Any] | None = None,
        *,
        conn: psycopg.Connection[Any] | None = None,
    ) -> EnqueueResult:
        """Like ``enqueue``, and says what PostgreSQL decided (``outcome``, and ``reason`` for ``non_replaceable``)."""
        with self._call():
            _check_conn(conn, psycopg.Connection)
            config = self._config(_names_a_key(options))
            n = normalize_request(type, payload, options, config)
            return self._run([n], conn)[0]

    def enqueue_many(
        self, requests: Sequence[EnqueueRequest | Mapping[str, Any]], *, conn: psycopg.Connection[Any] | None = None
    ) -> list[EnqueueResult]:
        """Up to 1,000 requests in one round trip and one transaction; results in input order.
        Any conflict rolls the whole batch back. ``conn``: inside the caller's transaction, as ``enqueue``."""
        with self._call():
            _check_conn(conn, psycopg.Connection)
            unpacked = unpack_batch(requests)
            if not unpacked:
                return []
            config = self._config(any(_names_a_key(o) for _, _, o in unpacked))
            return self._run(normalize_batch(unpacked, config), conn)

    def _run(self, requests: list[Normalized], conn: psycopg.Connection[Any] | None = None) -> list[EnqueueResult]:
        if not self._checked_layout:
            try:
                with self._pool.connection() as pooled:
                    self._check_layout(pooled)
            except psycopg.Error as err:
                raise WorkhorseDatabaseError(f"reading the schema layout failed: {err}", err, is_retryable(err)) from err
        ids = _job_ids(requests, self._distributed)
        if conn is not None:
            # The caller owns the transaction: one try, and the NOTIFY goes with its commit.
            return self._report(requests, ids, self._send(requests, ids, False, conn), False, in_tx=True)
        if self._retry_attempts <= 1 or not all(r.keyed for r in requests):
            return self._report(requests, ids, self._send(requests, ids, False), False)
        # Keyed requests are safe to repeat: the same ids are proposed again, and a retry says so
        # (p_retry), so PostgreSQL recognises a job an earlier, answerless try committed.
        results: list[EnqueueResult] = self._repeating(
            lambda attempt: self._report(requests, ids, self._send(requests, ids, attempt > 1), attempt > 1)
        )
        return results

    def _send(
        self, requests: list[Normalized], ids: list[str], retry: bool, caller: psycopg.Connection[Any] | None = None
    ) -> list[tuple[Any, ...]]:
        """One enqueue statement. Through the pool, p_notify false: a NOTIFY inside it would take
        PostgreSQL's global notify lock at commit and serialise every committing enqueue (_Waker wakes
        workers after). On the caller's connection (``caller``), inside its transaction, the NOTIFY
        goes with that transaction (delivered only if it commits)."""
        try:
            if caller is not None:
                sql, params = _statement_of(requests, ids, retry, self._waker is not None, self._distributed)
                return caller.execute(sql, params).fetchall()
            # One statement, committed by itself (autocommit): no BEGIN and COMMIT round trips around it.
            with self._pool.connection() as conn, _autocommit(conn):
                if not self._checked_layout:
                    self._check_layout(conn)
                sql, params = _statement_of(requests, ids, retry, False, self._distributed)
                if sql is _ONE_SQL:
                    # One request, no legacy hash, one node: through libpq's prepared call (_fast.py).
                    return exec_one(conn, _ONE_SQL_POSITIONAL, list(params.values()))
                return conn.execute(sql, params).fetchall()
        except psycopg.Error as err:
            translated = _translate(err, requests)
            if isinstance(translated, EnqueueIdempotencyConflictError):
                self._observe([_conflict_observation(translated, requests[translated.ordinal - 1])])
            raise translated from err

    def _report(
        self, requests: list[Normalized], ids: list[str], rows: list[tuple[Any, ...]], retried: bool, in_tx: bool = False
    ) -> list[EnqueueResult]:
        read = interpret(requests, ids, rows, retried)
        self.retry_stats["recovered_accepts"] += read.recovered
        if read.woken and self._waker is not None and not in_tx:
            self._waker.wake(read.woken)
        self._observe(read.observations)
        return read.results

    def _observe(self, rows: list[tuple[Any, ...]]) -> None:
        """Replays, coalesces, non-replaceable requests and conflicts, for operators; best effort."""
        if not rows:
            return
        try:
            with self._pool.connection() as conn, conn.cursor() as cur:
                cur.executemany(_OBSERVATION_SQL, rows)
        except psycopg.Error:
            pass  # an observation never fails the enqueue it describes

    # --- lookups

    def describe_key(self, key: str, scope: str | Unset | None = None) -> KeyDescription:
        """What operators see of a scoped key (preview, digest, length); the raw key is not sent anywhere."""
        with self._call():
            k, s = scoped_key(key, scope)
            return describe(self._load(), k, s)

    def find_binding(self, key: str, scope: str | Unset | None = None) -> BindingInfo | None:
        """The binding of a scoped key (live or expired, the live one first), or None."""
        with self._call():
            k, s = scoped_key(key, scope)
            return binding_from(self._query_one(BINDING_SQL, binding_params(self._load(), k, s)))

    def get_job(self, job_id: str) -> Job | None:
        """The job with this id, or None."""
        with self._call():
            return job_from(self._query_one(JOB_SQL, job_params(job_id)))

    def _query_one(self, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> tuple[Any, ...] | None:
        try:
            with self._pool.connection() as conn:
                return conn.execute(sql, params).fetchone()
        except psycopg.Error as err:
            raise WorkhorseDatabaseError(f"query failed: {err}", err, is_retryable(err)) from err


class _Waker:
    """Wake-ups after enqueues committed, as the TypeScript core sends them: at most one statement in
    flight and at most one per ``WAKE_MIN_INTERVAL_S`` (the first after a quiet spell at once), each
    carrying every queue named since the one before. One daemon thread sends them; it waits for
    work and ends after ``_IDLE_S`` without any (a thread started per wake-up cost every accept
    ~40 µs and a turn of the GIL). Best effort: a lost wake-up only delays a job until the workers'
    next poll."""

    _IDLE_S = 1.0

    def __init__(self, pool: ConnectionPool):
        self._pool = pool
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._running = False
        self._sending = False  # a wake-up statement is in flight
        self._last = float("-inf")  # time.monotonic() of the last wake-up statement

    def drain(self, timeout: float | None = None) -> None:
        """Waits until every wake-up asked for so far was sent (or failed), at most ``timeout`` s."""
        with self._cond:
            self._cond.wait_for(lambda: not self._pending and not self._sending, timeout)

    def wake(self, queues: set[str]) -> None:
        with self._cond:
            self._pending |= queues
            if self._running:
                self._cond.notify_all()
                return
            self._running = True
        try:
            threading.Thread(target=self._run, name="workhorse-wake", daemon=True).start()
        except RuntimeError:  # no new thread (interpreter shutdown): the committed enqueue stands
            with self._cond:
                self._running = False

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._pending and not self._cond.wait_for(lambda: self._pending, self._IDLE_S):
                    self._running = False
                    return
            wait = self._last + WAKE_MIN_INTERVAL_S - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # queues named meanwhile join this statement
            with self._cond:
                queues, self._pending = sorted(self._pending), set()
                self._sending = True
            self._last = time.monotonic()
            try:
                with self._pool.connection(timeout=5) as conn, _autocommit(conn):
                    conn.execute(_WAKE_SQL, [WAKE_CHANNEL, queues])
            except Exception:
                pass  # the enqueue committed; a lost wake-up only delays a job (workers poll as well)
            finally:
                with self._cond:
                    self._sending = False
                    self._cond.notify_all()


def _check_conn(conn: Any, kind: type) -> None:
    """``conn`` is None (the pool) or the caller's connection, of ``kind`` (psycopg's Connection, or
    AsyncConnection for the asyncio Queue)."""
    if conn is not None and not isinstance(conn, kind):
        raise EnqueueValidationError([ValidationIssue("conn", f"must be a psycopg.{kind.__name__} (or None for the pool)")])


def _job_ids(requests: list[Normalized], distributed: bool) -> list[str]:
    """New job ids, proposed again on every try of the call; on Citus a keyed job's id carries its
    key's bucket (docs/scale-out.md)."""
    ids = [_uuid7() for _ in requests]
    if distributed:
        ids = [_bucketed_id(i, _key_bucket(r.keyed.scope, r.keyed.key_hash)) if r.keyed else i for i, r in zip(ids, requests)]
    return ids


def _statement_of(
    requests: list[Normalized], ids: list[str], retry: bool, notify: bool, distributed: bool
) -> tuple[str, Any]:
    """The enqueue statement for these requests and its parameters."""
    if len(requests) == 1 and distributed:
        r = requests[0]
        hold = r.keyed.hold_until if r.keyed else None
        if hold is not None:
            return _ONE_AT_HOLD_SQL, [int(ids[0][33:], 16), *one_values(r, ids[0], notify, retry), None, hold]
        return _ONE_AT_SQL, [int(ids[0][33:], 16), *one_values(r, ids[0], notify, retry)]
    if len(requests) == 1:
        r = requests[0]
        params: dict[str, Any] = {f"p{i}": v for i, v in enumerate(one_values(r, ids[0], notify, retry))}
        hold = r.keyed.hold_until if r.keyed else None
        if hold is not None:
            params[f"p{len(_ONE_TYPES)}"] = None
            params[f"p{len(_ONE_TYPES) + 1}"] = hold
        legacy = r.keyed.legacy_key_hash if r.keyed else None
        if legacy is not None:
            params["legacy"] = legacy
        if hold is not None:
            return (_ONE_HOLD_LEGACY_SQL if legacy is not None else _ONE_HOLD_SQL), params
        return (_ONE_LEGACY_SQL if legacy is not None else _ONE_SQL), params
    return _BATCH_SQL, _batch_values(requests, ids, retry, notify)


def installation_sql(outside: bytes | None) -> str:
    """The installation row: the stored secret (unless one is given outside) and the legacy window."""
    return _INSTALLATION_SQL.format(secret="null::bytea" if outside else "key_secret")


_LAYOUT_SQL = "select to_regclass('workhorse.shard_bucket') is not null"


def _names_a_key(options: Any) -> bool:
    if options is None:
        return False
    if isinstance(options, EnqueueOptions):
        return any(getattr(options, m) not in (None, UNSET) for m in ("idempotency", "debounce", "throttle"))
    if isinstance(options, Mapping):
        return any(options.get(m) not in (None, UNSET) for m in ("idempotency", "debounce", "throttle"))
    return False


def _batch_values(requests: list[Normalized], ids: list[str], retry: bool, notify: bool = False) -> list[Any]:
    ks = [r.keyed for r in requests]
    legacy = [k.legacy_key_hash if k else None for k in ks]
    debounce = any(k and k.mode == "debounce" for k in ks)
    return [
        ids,
        [r.queue for r in requests],
        [r.type for r in requests],
        "[" + ",".join(r.payload_text for r in requests) + "]",
        [iso(r.run_at) if r.run_at else None for r in requests],
        [r.max_attempts for r in requests],
        [retry_policy_json(r.retry_policy) for r in requests],
        [iso(r.deadline) if r.deadline else None for r in requests],
        [r.execution_timeout_ms for r in requests],
        [r.concurrency_key for r in requests],
        [t for r in requests for t in r.tags],
        [len(r.tags) for r in requests],
        [k.mode if k else None for k in ks],
        [k.scope if k else None for k in ks],
        [k.key_hash if k else None for k in ks],
        [k.key_preview if k else None for k in ks],
        [k.key_length if k else None for k in ks],
        [k.ttl_ms if k else None for k in ks],
        [None] * len(requests),  # p_field_digests: PostgreSQL digests the values it receives
        legacy if any(h is not None for h in legacy) else None,
        notify,  # p_notify: through the pool the wake-up goes after the commit (_Waker)
        [k.schedule if k and k.mode == "debounce" else None for k in ks] if debounce else None,
        [k.max_wait_ms if k and k.mode == "debounce" else None for k in ks] if debounce else None,
        retry,
        None,  # p_trace_context
        [k.hold_until if k else None for k in ks] if any(k and k.hold_until for k in ks) else None,
    ]


def _conflict_observation(c: EnqueueIdempotencyConflictError, req: Normalized) -> tuple[Any, ...]:
    """The observation row of a conflict (the columns of _OBSERVATION_SQL), as the TypeScript core records it."""
    return (
        "conflict", None, req.queue, req.type, c.scope, c.key_preview, c.key_digest, c.key_length, c.existing_job_id,
        c.conflicting_fields, c.payload_paths, c.stored_request_digest, c.rejected_request_digest, req.source,
    )  # fmt: skip


def _translate(err: psycopg.Error, requests: list[Normalized]) -> Exception:
    """PostgreSQL's errors as typed ones; the one place SQLSTATEs are interpreted."""
    state = err.sqlstate
    if state == "WH409":
        detail = json.loads(err.diag.message_detail or "{}")
        ordinal = int(detail.get("ordinal", 1))
        req = requests[ordinal - 1] if 0 < ordinal <= len(requests) else None
        if req is not None and req.keyed is not None:
            k = req.keyed
            return EnqueueIdempotencyConflictError(
                scope=k.scope,
                key_preview=k.key_preview,
                key_digest=k.key_digest,
                key_length=k.key_length,
                existing_job_id=detail.get("existingJobId"),
                existing_mode=detail.get("existingMode", ""),
                conflicting_fields=list(detail.get("conflictingFields", [])),
                stored_request_digest=detail.get("storedRequestDigest", ""),
                rejected_request_digest=detail.get("rejectedRequestDigest", ""),
                ordinal=ordinal,
                payload_paths=detail.get("payloadPaths"),
                payload_paths_truncated=bool(detail.get("payloadPathsTruncated")),
            )
    if state in ("23514", "22P05", "22P02"):
        constraint = err.diag.constraint_name
        if constraint == "job_payload_depth":
            return EnqueueValidationError(
                [ValidationIssue("payload", "must be nested at most 100 levels deep (objects and arrays); refused by PostgreSQL")]
            )
        if constraint == "job_deadline_after_run_at":
            return EnqueueValidationError(
                [ValidationIssue("options.deadline", "must be after runAt (which defaults to PostgreSQL's now())")]
            )
        dt = err.diag.datatype_name
        return EnqueueValidationError(
            [ValidationIssue(f"request ({dt})" if dt else "request", f"rejected by PostgreSQL: {err.diag.message_primary}")]
        )
    return WorkhorseDatabaseError(f"enqueue failed: {err}", err, is_retryable(err))

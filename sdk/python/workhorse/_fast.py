"""The single-request enqueue through libpq's prepared-statement call, below psycopg's adaptation
layer: the same statement (``workhorse.enqueue_one``) and parameters, sent as text (``bytea`` as
binary) with ``PQexecPrepared`` on a statement each pooled connection prepares once. Debian's psycopg
has no C speed-ups, and its adaptation of 22 parameters cost the blocking client about as much CPU
as everything else in a call; under the GIL, with several threads enqueueing, that decided the
calls per second (docs/benchmarks.md, "The Python and Go clients").

The asyncio ``Queue`` takes the same path through libpq's non-blocking calls
(``exec_one_async``: ``send_prepare`` / ``send_query_prepared``, awaited on the connection's
socket as psycopg awaits its own statements).

Errors are psycopg's own (``psycopg.errors.error_from_result``), so callers translate them as they
translate the adapted path's; a broken connection is a ``psycopg.OperationalError``."""

from __future__ import annotations

import re
import threading
from typing import Any
import weakref

import psycopg
from psycopg import errors as pg_errors
from psycopg import generators, pq

_NAME = b"workhorse_enqueue_one_py"
_prepared: weakref.WeakSet[psycopg.Connection[Any] | psycopg.AsyncConnection[Any]] = weakref.WeakSet()
_lock = threading.Lock()


def positional(sql: str) -> bytes:
    """``%(pN)s`` placeholders as ``$N+1``, for libpq."""
    return re.sub(r"%\(p(\d+)\)s", lambda m: f"${int(m.group(1)) + 1}", sql).encode()


def _array_literal(items: list[str]) -> bytes:
    return ("{" + ",".join('"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"' for s in items) + "}").encode()


def _param(v: Any) -> tuple[bytes | None, int]:
    """A parameter's bytes and format (0 text, 1 binary): what psycopg's dumpers send for it."""
    if v is None:
        return None, 0
    if isinstance(v, bool):
        return (b"t" if v else b"f"), 0
    if isinstance(v, bytes):
        return v, 1
    if isinstance(v, str):
        return v.encode(), 0
    if isinstance(v, int):
        return str(v).encode(), 0
    if isinstance(v, list):
        return _array_literal(v), 0
    raise TypeError(f"no text form for a parameter of type {type(v).__name__}")


def _decoded(v: bytes | None) -> str | None:
    return None if v is None else v.decode()


def _encoded(values: list[Any]) -> tuple[list[bytes | None], list[int]]:
    params: list[bytes | None] = []
    formats: list[int] = []
    for v in values:
        b, f = _param(v)
        params.append(b)
        formats.append(f)
    return params, formats


def _rows(res: pq.abc.PGresult) -> list[tuple[Any, ...]]:
    """enqueue_one's answer (ordinal, job id, outcome, request digest, reason) as the adapted path returns it."""
    return [
        (int(res.get_value(r, 0) or b"1"), _decoded(res.get_value(r, 1)), _decoded(res.get_value(r, 2)),
         _decoded(res.get_value(r, 3)), _decoded(res.get_value(r, 4)))
        for r in range(res.ntuples)
    ]  # fmt: skip


def _is_prepared(conn: Any) -> bool:
    with _lock:
        return conn in _prepared


def _mark(conn: Any, prepared: bool) -> None:
    with _lock:
        if prepared:
            _prepared.add(conn)
        else:
            _prepared.discard(conn)


def _gone(res: pq.abc.PGresult) -> bool:
    """The session lost the prepared statement (DISCARD ALL by someone else): prepare it again."""
    return res.error_field(pq.DiagnosticField.SQLSTATE) == b"26000"


def exec_one(conn: psycopg.Connection[Any], sql: bytes, values: list[Any]) -> list[tuple[Any, ...]]:
    """Runs ``sql`` (one enqueue_one call: ordinal, job id, outcome, request digest, reason) with
    ``values`` on ``conn`` (idle, autocommit) and returns its rows as the adapted path returns them."""
    pg = conn.pgconn
    params, formats = _encoded(values)
    for attempt in (1, 2):
        if not _is_prepared(conn):
            _check(conn, pg.prepare(_NAME, sql))
            _mark(conn, True)
        # None is a NULL parameter (psycopg's own calls pass it so); its type hints leave it out.
        res = pg.exec_prepared(_NAME, params, formats)  # type: ignore[arg-type]
        if res.status == pq.ExecStatus.TUPLES_OK:
            return _rows(res)
        if attempt == 1 and _gone(res):
            _mark(conn, False)
            continue
        _check(conn, res)
    raise AssertionError("unreachable")


async def exec_one_async(conn: psycopg.AsyncConnection[Any], sql: bytes, values: list[Any]) -> list[tuple[Any, ...]]:
    """``exec_one`` for an ``AsyncConnection`` (idle, autocommit, checked out by this call alone):
    the same prepared statement, sent and awaited without blocking the event loop."""
    pg = conn.pgconn
    params, formats = _encoded(values)
    for attempt in (1, 2):
        if not _is_prepared(conn):
            pg.send_prepare(_NAME, sql)
            _check(conn, (await conn.wait(generators.execute(pg)))[-1])
            _mark(conn, True)
        pg.send_query_prepared(_NAME, params, formats)
        res = (await conn.wait(generators.execute(pg)))[-1]
        if res.status == pq.ExecStatus.TUPLES_OK:
            return _rows(res)
        if attempt == 1 and _gone(res):
            _mark(conn, False)
            continue
        _check(conn, res)
    raise AssertionError("unreachable")


def _check(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], res: pq.abc.PGresult) -> None:
    if res.status in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
        return
    if conn.pgconn.status == pq.ConnStatus.BAD:
        raise psycopg.OperationalError(conn.pgconn.error_message.decode(errors="replace").strip() or "connection lost")
    raise pg_errors.error_from_result(res, encoding=conn.info.encoding)

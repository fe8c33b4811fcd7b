"""What an enqueue call and a lookup do, apart from talking to PostgreSQL: checking a batch's shape,
the statement and parameters for a set of requests, reading PostgreSQL's rows into results and
observations, the lookups' SQL and rows. Shared by the blocking ``Queue`` (queue.py) and the asyncio
``Queue`` (aio.py), which differ only in how they reach the database."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
import os
import random
import time
from typing import Any
import uuid

import psycopg

from ._input import (
    DEFAULT_SCOPE,
    MAX_BATCH,
    MAX_BATCH_PAYLOAD_BYTES,
    Normalized,
    RequestConfig,
    _Issues,
    _key,
    _scope,
    normalize_request,
)
from ._keys import key_digest, key_hash, key_length, key_preview, legacy_key_hash, parse_secret
from .errors import EnqueueValidationError, ValidationIssue, WorkhorseDatabaseError, WorkhorseError
from .types import BindingInfo, EnqueueRequest, EnqueueResult, Job, KeyDescription, Unset, UNSET


def outside_secret(key_secret: str | bytes | None) -> bytes | None:
    """The installation secret given to the Queue or in WORKHORSE_KEY_SECRET; None: read the database's."""
    given = key_secret if key_secret is not None else os.environ.get("WORKHORSE_KEY_SECRET") or None
    if given is None:
        return None
    parsed = parse_secret(given)
    if parsed is None:
        raise EnqueueValidationError(
            [ValidationIssue("key_secret", "must be 64 hexadecimal characters or 32 bytes (WORKHORSE_KEY_SECRET)")]
        )
    return parsed


def secret_from(row: tuple[Any, ...] | None, outside: bytes | None, margin_s: float) -> tuple[bytes, float]:
    """The secret to hash keys with and until when (``time.monotonic()``) pre-secret bindings may be
    live, from the installation row (key_secret, legacy_ms)."""
    if row is None:
        raise WorkhorseDatabaseError("workhorse.installation is empty: run migrate() first", None)
    stored = bytes(row[0]) if row[0] is not None else None
    secret = outside or stored
    if secret is None or len(secret) != 32:
        raise WorkhorseError("the installation key is missing or malformed in workhorse.installation")
    legacy_ms = float(row[1])
    return secret, (time.monotonic() + legacy_ms / 1000 + margin_s if legacy_ms > 0 else 0.0)


def retry_wait_s(attempt: int, max_delay_ms: int) -> float:
    """How long to wait before try ``attempt + 1``: 25 ms doubling to ``max_delay_ms``, with jitter."""
    ceiling: float = min(max_delay_ms, 25 << max(0, attempt - 1)) / 1000
    return ceiling / 2 + random.random() * ceiling / 2


_RETRYABLE_SQLSTATES = {"40001", "40P01", "53300", "55P03", "57P01", "57P02", "57P03"}


def is_retryable(err: BaseException) -> bool:
    """Connection loss, or a SQLSTATE after which repeating the same statement may succeed."""
    state = getattr(err, "sqlstate", None)
    if state:
        return state in _RETRYABLE_SQLSTATES or state.startswith("08")
    return isinstance(err, (psycopg.OperationalError, psycopg.InterfaceError))


#: Pre-secret bindings are looked up this much longer than the database says they may be live.
LEGACY_MARGIN_S = 5.0


class QueueCore:
    """What the blocking ``Queue`` and the asyncio ``aio.Queue`` share: their settings, the retry
    bookkeeping, the installation secret once read, the layout, and each request's configuration.
    Each subclass adds its own I/O (blocking or awaited) around these."""

    def __init__(
        self,
        *,
        key_secret: str | bytes | None,
        max_payload_bytes: int,
        source: str | None,
        retry_attempts: int,
        retry_max_delay_ms: int,
    ):
        self._outside = outside_secret(key_secret)
        self._secret: bytes | None = None
        self._legacy_until = 0.0
        self._max_payload_bytes = max_payload_bytes
        self._source = source
        self._retry_attempts = max(1, retry_attempts)
        self._retry_max_delay_ms = retry_max_delay_ms
        self._checked_layout = False
        self._distributed = False  # the Citus layout (docs/scale-out.md), read once with the layout
        #: Calls repeated after connection loss, and accepts recovered from a lost answer;
        #: ``exhausted``: retried calls whose last try still failed with a retryable error.
        self.retry_stats = {"retried_calls": 0, "retries": 0, "recovered_accepts": 0, "exhausted": 0}

    def _retry_wait(self, err: Exception, attempt: int) -> float | None:
        """After try ``attempt`` failed with ``err``: seconds to wait before the next try, or None
        when the error is final (not retryable, or the last try). Counts both in ``retry_stats``:
        ``exhausted`` only when a retried call's last try still failed retryably; a later try that
        fails for good (a conflict, a validation refusal, any error not retryable) is the call's answer."""
        cause = err.__cause__ if isinstance(err, WorkhorseDatabaseError) else err
        retryable = cause is not None and is_retryable(cause)
        if not retryable or attempt >= self._retry_attempts:
            if retryable and attempt > 1:
                self.retry_stats["exhausted"] += 1
            return None
        if attempt == 1:
            self.retry_stats["retried_calls"] += 1
        self.retry_stats["retries"] += 1
        return retry_wait_s(attempt, self._retry_max_delay_ms)

    def _keep_secret(self, row: tuple[Any, ...] | None) -> bytes:
        """Keeps the secret (and the legacy window) read from the installation row."""
        self._secret, self._legacy_until = secret_from(row, self._outside, LEGACY_MARGIN_S)
        return self._secret

    def _keep_layout(self, row: tuple[Any, ...] | None) -> None:
        self._distributed = bool(row and row[0])
        self._checked_layout = True

    def _request_config(self, secret: bytes | None) -> RequestConfig:
        """The checks' configuration; ``secret`` None: an unkeyed call before the secret was read."""
        return RequestConfig(
            max_payload_bytes=self._max_payload_bytes,
            source=self._source,
            secret=secret or b"\0" * 32,
            legacy_window_open=self._legacy_until > time.monotonic(),
        )


def unpack_batch(requests: Any) -> list[tuple[Any, Any, Any]]:
    """A batch's (type, payload, options) triples, or the validation error naming what is wrong."""
    if not isinstance(requests, Sequence) or isinstance(requests, (str, bytes)):
        raise EnqueueValidationError([ValidationIssue("requests", "must be an array of { type, payload, options }")])
    if len(requests) > MAX_BATCH:
        raise EnqueueValidationError(
            [ValidationIssue("requests", f"at most {MAX_BATCH} requests per batch (got {len(requests)}); split it")]
        )
    unpacked: list[tuple[Any, Any, Any]] = []
    for i, r in enumerate(requests):
        if isinstance(r, EnqueueRequest):
            unpacked.append((r.type, r.payload, r.options))
        elif isinstance(r, Mapping):
            extra = [k for k in r if k not in ("type", "payload", "options")]
            if extra:
                raise EnqueueValidationError([ValidationIssue(f"requests[{i}].{extra[0]}", "is not a known field")])
            if "payload" not in r:
                # Left out is not None (JSON null), as TypeScript refuses an undefined payload.
                raise EnqueueValidationError(
                    [ValidationIssue(f"requests[{i}].payload", "is required: a missing payload is not a JSON value (use None or {})", "$")]
                )
            unpacked.append((r.get("type"), r.get("payload"), r.get("options")))
        else:
            raise EnqueueValidationError([ValidationIssue(f"requests[{i}]", "must be { type, payload, options }")])
    return unpacked


def normalize_batch(unpacked: list[tuple[Any, Any, Any]], config: RequestConfig) -> list[Normalized]:
    normalized: list[Normalized] = []
    total = 0
    for i, (t, p, o) in enumerate(unpacked):
        n = normalize_request(t, p, o, config, f"requests[{i}]")
        total += len(n.payload_text.encode("utf-8"))
        if total > MAX_BATCH_PAYLOAD_BYTES:
            raise EnqueueValidationError(
                [ValidationIssue("requests", f"the payloads of one batch may total at most {MAX_BATCH_PAYLOAD_BYTES} bytes; split the batch")]
            )
        normalized.append(n)
    return normalized


@dataclass
class Interpreted:
    """PostgreSQL's rows for one call, read: results in input order, the observation rows to write,
    the queues that got a job, and how many answers were an earlier try's accept."""

    results: list[EnqueueResult]
    observations: list[tuple[Any, ...]] = field(default_factory=list)
    woken: set[str] = field(default_factory=set)
    recovered: int = 0


def interpret(requests: list[Normalized], ids: list[str], rows: list[tuple[Any, ...]], retried: bool) -> Interpreted:
    results: list[EnqueueResult | None] = [None] * len(requests)
    out = Interpreted(results=[])
    for ordinal, job_id, outcome, request_digest, reason in rows:
        req = requests[ordinal - 1]
        if retried and outcome != "accepted" and job_id == ids[ordinal - 1]:
            outcome = "accepted"  # an earlier try of this very call committed it
            out.recovered += 1
        if outcome == "accepted":
            out.woken.add(req.queue)
        k = req.keyed
        results[ordinal - 1] = EnqueueResult(
            job_id=job_id,
            outcome=outcome,
            reason=reason if outcome == "non_replaceable" else None,
            key_preview=k.key_preview if k else None,
            key_digest=k.key_digest if k else None,
            key_length=k.key_length if k else None,
        )
        if k and outcome in ("replayed", "coalesced", "non_replaceable"):
            rejected = outcome == "non_replaceable"
            out.observations.append((
                outcome, reason if rejected else None, req.queue, req.type, k.scope, k.key_preview, k.key_digest,
                k.key_length, job_id, None, None, None if rejected else request_digest,
                request_digest if rejected else None, req.source,
            ))  # fmt: skip
    out.results = [r for r in results if r is not None]
    return out


def scoped_key(key: str, scope: str | Unset | None) -> tuple[str, str]:
    """A lookup's key and scope, checked; None or UNSET is the default scope."""
    out = _Issues()
    k = _key(key, "key", out)
    s = _scope(scope, "scope", out) if scope is not None and scope is not UNSET else DEFAULT_SCOPE
    if out.list or k is None or s is None:
        raise EnqueueValidationError(out.list)
    return k, s


def describe(secret: bytes, key: str, scope: str) -> KeyDescription:
    return KeyDescription(
        scope=scope,
        key_preview=key_preview(key),
        key_digest=key_digest(key_hash(secret, scope, key)),
        key_length=key_length(key),
        legacy_key_digest=key_digest(legacy_key_hash(scope, key)),
    )


BINDING_SQL = """select b.scope, b.key_hash, b.job_id::text, b.mode, b.key_preview, b.key_length,
                      encode(b.request_digest, 'hex'), b.ttl_ms, b.created_at, nullif(b.expires_at, 'infinity'),
                      b.expires_at <= now(), b.schedule, b.max_wait_ms, b.hold_until
                 from workhorse.key_binding b where b.scope = %s and b.key_hash = any(%s::bytea[])
                order by b.expires_at desc limit 1"""


def binding_params(secret: bytes, key: str, scope: str) -> tuple[Any, ...]:
    return (scope, [key_hash(secret, scope, key), legacy_key_hash(scope, key)])


def binding_from(row: tuple[Any, ...] | None) -> BindingInfo | None:
    if row is None:
        return None
    return BindingInfo(
        scope=row[0], key_preview=row[4], key_digest=bytes(row[1])[:6].hex(), key_length=row[5], job_id=row[2],
        mode=row[3], request_digest=row[6], ttl_ms=None if row[7] is None else int(row[7]), created_at=row[8],
        expires_at=row[9], expired=row[10], schedule=row[11], max_wait_ms=None if row[12] is None else int(row[12]),
        hold_until=row[13],
    )  # fmt: skip


JOB_SQL = """select j.id::text, j.queue, j.type, j.payload, j.state, j.run_at, j.attempt, j.max_attempts,
                      j.retry_policy, j.deadline, j.execution_timeout_ms, j.concurrency_key, j.tags, j.created_at,
                      j.updated_at, j.started_at, j.finished_at, j.result, j.last_error,
                      -- uncorrelated (the id as a parameter): Citus plans it as a separate subplan
                      coalesce((select array_agg(r.id::text order by r.id) from workhorse.job r
                                 where r.redriven_from = %(id)s::uuid), '{}')
                 from workhorse.job j where j.id = %(id)s::uuid"""


def job_params(job_id: str) -> dict[str, str]:
    """The job lookup's parameters; a job id that is not a UUID is a validation error."""
    try:
        uuid.UUID(job_id)
    except (ValueError, TypeError, AttributeError):
        raise EnqueueValidationError([ValidationIssue("jobId", "must be a UUID")]) from None
    return {"id": job_id}


def job_from(row: tuple[Any, ...] | None) -> Job | None:
    if row is None:
        return None
    return Job(
        id=row[0], queue=row[1], type=row[2], payload=row[3], state=row[4], run_at=row[5], attempt=row[6],
        max_attempts=row[7], retry_policy=row[8], deadline=row[9],
        execution_timeout_ms=None if row[10] is None else int(row[10]), concurrency_key=row[11], tags=list(row[12]),
        created_at=row[13], updated_at=row[14], started_at=row[15], finished_at=row[16], result=row[17],
        last_error=row[18], redrive_job_ids=list(row[19]),
    )  # fmt: skip



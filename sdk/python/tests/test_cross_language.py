"""Python and TypeScript requests are the same requests: each replays what the other accepted."""

from __future__ import annotations

from datetime import datetime, timezone
import uuid

import pytest

from workhorse import (
    EnqueueIdempotencyConflictError,
    EnqueueOptions,
    Idempotency,
    Queue,
    RetryPolicy,
    Throttle,
)

from .conftest import run_ts

TS_OPTIONS = {
    "queue": "cross",
    "runAt": "2999-01-01T00:00:00.000Z",
    "maxAttempts": 7,
    "retryPolicy": {"type": "exponential", "initialDelayMs": 250, "multiplier": 2, "maxDelayMs": 60000},
    "deadline": "2999-02-01T12:30:00.125Z",
    "executionTimeoutMs": 90000,
    "concurrencyKey": "customer-42",
    "tags": ["vip", "eu", "vip"],
}
PAYLOAD_TS = {"invoiceId": "INV-7", "amountCents": 4200, "lines": [{"sku": "ключ", "qty": 1}], "rate": 0.1, "ok": True}
# The same value as Python writes it: other key order, 4200.0 for 4200, 1.0 for 1.
PAYLOAD_PY = {"ok": True, "rate": 0.1, "lines": [{"qty": 1.0, "sku": "ключ"}], "amountCents": 4200.0, "invoiceId": "INV-7"}


def py_options(key: str, scope: str) -> EnqueueOptions:
    return EnqueueOptions(
        queue="cross",
        run_at=datetime(2999, 1, 1, tzinfo=timezone.utc),
        max_attempts=7,
        retry_policy=RetryPolicy.exponential(250, 2, 60000),
        deadline=datetime(2999, 2, 1, 12, 30, 0, 125000, tzinfo=timezone.utc),
        execution_timeout_ms=90000,
        concurrency_key="customer-42",
        tags=["eu", "vip"],
        idempotency=Idempotency(key=key, scope=scope, ttl_ms=3_600_000),
    )


def ts(database_url: str, key: str, scope: str, payload: object, mode: str = "idempotency") -> dict:
    keyed = {"key": key, "scope": scope, "ttlMs": 3_600_000} if mode == "idempotency" else {"key": key, "scope": scope, "windowMs": 60_000}
    return run_ts("enqueue.ts", database_url, {"type": "invoice.capture", "payload": payload, "options": {**TS_OPTIONS, mode: keyed}})


def test_typescript_accepts_python_replays(queue: Queue, database_url: str) -> None:
    key = f"capture:Ω-{uuid.uuid4()}"
    first = ts(database_url, key, "invoice-capture", PAYLOAD_TS)["result"]
    assert first["outcome"] == "accepted"
    again = queue.enqueue_with_result("invoice.capture", PAYLOAD_PY, py_options(key, "invoice-capture"))
    assert (again.outcome, again.job_id) == ("replayed", first["jobId"])
    assert (again.key_preview, again.key_digest, again.key_length) == (first["keyPreview"], first["keyDigest"], first["keyLength"])


def test_python_accepts_typescript_replays(queue: Queue, database_url: str) -> None:
    key = f"😀-{uuid.uuid4()}"
    first = queue.enqueue_with_result("invoice.capture", PAYLOAD_PY, py_options(key, "invoice-capture"))
    assert first.outcome == "accepted"
    again = ts(database_url, key, "invoice-capture", PAYLOAD_TS)["result"]
    assert (again["outcome"], again["jobId"]) == ("replayed", first.job_id)


def test_a_different_payload_conflicts_across_languages(queue: Queue, database_url: str) -> None:
    key = f"capture:{uuid.uuid4()}"
    first = ts(database_url, key, "invoice-capture", PAYLOAD_TS)["result"]
    with pytest.raises(EnqueueIdempotencyConflictError) as caught:
        queue.enqueue("invoice.capture", {**PAYLOAD_PY, "amountCents": 9900}, py_options(key, "invoice-capture"))
    assert caught.value.existing_job_id == first["jobId"]
    assert caught.value.conflicting_fields == ["payload"]
    assert caught.value.payload_paths == ["$.amountCents"]
    # And the other way round: Python's job, TypeScript's different request.
    key2 = f"capture:{uuid.uuid4()}"
    mine = queue.enqueue("invoice.capture", PAYLOAD_PY, py_options(key2, "invoice-capture"))
    conflict = ts(database_url, key2, "invoice-capture", {**PAYLOAD_TS, "lines": []})["conflict"]
    assert conflict["existingJobId"] == mine
    assert conflict["conflictingFields"] == ["payload"]
    assert conflict["payloadPaths"] == ["$.lines[0]"]


def test_throttle_coalesces_across_languages(queue: Queue, database_url: str) -> None:
    key = f"user-{uuid.uuid4()}"
    first = ts(database_url, key, "mail", PAYLOAD_TS, mode="throttle")["result"]
    opts = py_options(key, "mail")
    opts = EnqueueOptions(**{**opts.__dict__, "idempotency": None, "throttle": Throttle(key=key, scope="mail", window_ms=60_000)})
    again = queue.enqueue_with_result("invoice.capture", PAYLOAD_PY, opts)
    assert (again.outcome, again.job_id) == ("coalesced", first["jobId"])

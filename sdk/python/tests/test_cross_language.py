"""Python and TypeScript requests are the same requests: each replays what the other accepted."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
import os
import signal
import subprocess
import time
import uuid

import pytest

from workhorse import (
    UNSET,
    Debounce,
    EnqueueIdempotencyConflictError,
    EnqueueOptions,
    Idempotency,
    Queue,
    RetryPolicy,
    Throttle,
)

from .conftest import ROOT, run_ts

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
    # UNSET leaves idempotency out (None would be refused, as TypeScript refuses null).
    opts = replace(opts, idempotency=UNSET, throttle=Throttle(key=key, scope="mail", window_ms=60_000))
    again = queue.enqueue_with_result("invoice.capture", PAYLOAD_PY, opts)
    assert (again.outcome, again.job_id) == ("coalesced", first["jobId"])


def test_python_replaces_a_typescript_debounce(queue: Queue, database_url: str) -> None:
    key = f"doc-{uuid.uuid4()}"
    debounce = {"key": key, "scope": "search", "windowMs": 60_000}
    first = run_ts("enqueue.ts", database_url, {"type": "search.reindex", "payload": {"doc": key, "rev": 1},
                                                "options": {"queue": "cross", "debounce": debounce}})["result"]  # fmt: skip
    assert first["outcome"] == "accepted"
    again = queue.enqueue_with_result(
        "search.reindex", {"doc": key, "rev": 2},
        EnqueueOptions(queue="cross", debounce=Debounce(key=key, scope="search", window_ms=60_000)),
    )  # fmt: skip
    assert (again.outcome, again.job_id) == ("replaced", first["jobId"])
    job = queue.get_job(first["jobId"])
    assert job is not None and job.payload == {"doc": key, "rev": 2} and job.state == "scheduled"


def test_python_job_runs_on_the_typescript_worker_and_reuses_its_checkpoint_after_a_kill(
    queue: Queue, database_url: str
) -> None:
    """A job enqueued from Python runs on the TypeScript worker; the worker is killed (SIGKILL) after
    its attempt stored a checkpoint, the lease lapses, and the next attempt, on another worker
    process, finds the stored stage instead of running it again."""
    q = f"xlang-{uuid.uuid4().hex[:8]}"
    invoice = uuid.uuid4().hex[:6]
    job_id = queue.enqueue("xlang.capture", {"invoiceId": invoice}, EnqueueOptions(queue=q, idempotency=Idempotency(key=f"capture:{invoice}", scope="xlang")))
    env = {**os.environ, "DATABASE_URL": database_url}

    def start() -> subprocess.Popen[str]:
        # Its own process group: npx starts node, which starts the worker; a signal reaches all of them.
        return subprocess.Popen(["npx", "tsx", "sdk/python/tests/ts/worker.ts", q], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                start_new_session=True)  # fmt: skip

    first = start()
    try:
        assert first.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = first.stdout.readline()
            if line.strip() == "checkpointed" or not line:
                break
        assert line.strip() == "checkpointed", "the first TypeScript worker never reached its checkpoint"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        second = start()
        try:
            deadline = time.monotonic() + 60
            job = queue.get_job(job_id)
            while time.monotonic() < deadline and (job is None or job.state != "succeeded"):
                time.sleep(0.2)
                job = queue.get_job(job_id)
        finally:
            os.killpg(second.pid, signal.SIGTERM)
            second.wait(20)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    assert job is not None and job.state == "succeeded", f"job ended {job.state if job else None}"
    assert job.attempt == 2
    # The charge stage ran once, in attempt 1: attempt 2 got the stored value.
    assert job.result == {"charge": {"chargeId": f"ch_{invoice}", "attempt": 1}, "finishedInAttempt": 2, "runsHere": 1}


def test_a_key_held_until_finished_replays_across_languages_and_is_released_by_the_python_worker(
    queue: Queue, database_url: str
) -> None:
    """Key lifetimes (docs/enqueue.md): TypeScript accepts, Python replays (same request digest with the
    lifetime's digest appended by PostgreSQL), a different lifetime conflicts naming holdUntil, and
    once the job is claimed and completed through the worker SQL the key is free for either language."""
    key = f"report-{uuid.uuid4()}"
    name = f"cross-hold-{uuid.uuid4()}"
    held = {"key": key, "scope": "reports", "holdUntil": "finished"}
    first = run_ts("enqueue.ts", database_url, {"type": "report.nightly", "payload": {"day": 1},
                                                "options": {"queue": name, "idempotency": held}})["result"]  # fmt: skip
    assert first["outcome"] == "accepted"
    opts = EnqueueOptions(queue=name, idempotency=Idempotency(key=key, scope="reports", hold_until="finished"))
    again = queue.enqueue_with_result("report.nightly", {"day": 1.0}, opts)
    assert (again.outcome, again.job_id) == ("replayed", first["jobId"])
    with pytest.raises(EnqueueIdempotencyConflictError) as caught:
        queue.enqueue("report.nightly", {"day": 1}, replace(opts, idempotency=Idempotency(key=key, scope="reports", hold_until="started")))
    assert caught.value.conflicting_fields == ["holdUntil"]
    with queue._pool.connection() as conn:
        row = conn.execute(
            "select id::text, attempt from workhorse.claim_jobs(array[%s], null, 'py~x', 1, 60000, false)", (name,)
        ).fetchone()
        assert row is not None and row[0] == first["jobId"]
        conn.execute(
            "select * from workhorse.complete_jobs(array[%s::uuid], array[%s::integer], array['py~x'], array['null'::jsonb])",
            (row[0], row[1]),
        )
    after = run_ts("enqueue.ts", database_url, {"type": "report.nightly", "payload": {"day": 1},
                                                "options": {"queue": name, "idempotency": held}})["result"]  # fmt: skip
    assert after["outcome"] == "accepted" and after["jobId"] != first["jobId"]
    assert queue.enqueue_with_result("report.nightly", {"day": 1}, opts).job_id == after["jobId"]

"""The public API against a real PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
import sys
import uuid

import psycopg
import pytest

from workhorse import (
    Debounce,
    EnqueueIdempotencyConflictError,
    EnqueueOptions,
    EnqueueRequest,
    EnqueueValidationError,
    Idempotency,
    Queue,
    RetryPolicy,
    Throttle,
)


def key() -> str:
    return f"k-{uuid.uuid4()}"


def count_jobs(queue: Queue, name: str) -> int:
    with queue._pool.connection() as conn:
        row = conn.execute("select count(*) from workhorse.job where queue = %s", (name,)).fetchone()
        assert row is not None
        return int(row[0])


def test_accept_then_replay_then_conflict(queue: Queue) -> None:
    k = key()
    opts = EnqueueOptions(queue="billing", idempotency=Idempotency(key=k, scope="invoice-capture", ttl_ms=86_400_000))
    first = queue.enqueue_with_result("invoice.capture", {"invoiceId": "INV-1", "amountCents": 4200}, opts)
    assert first.outcome == "accepted"
    again = queue.enqueue_with_result("invoice.capture", {"amountCents": 4200.0, "invoiceId": "INV-1"}, opts)
    assert (again.outcome, again.job_id) == ("replayed", first.job_id)
    with pytest.raises(EnqueueIdempotencyConflictError) as caught:
        queue.enqueue("invoice.capture", {"invoiceId": "INV-1", "amountCents": 9900}, opts)
    c = caught.value
    assert c.existing_job_id == first.job_id
    assert c.conflicting_fields == ["payload"]
    assert c.payload_paths == ["$.amountCents"]
    assert c.key_preview == first.key_preview and c.key_digest == first.key_digest
    assert c.ordinal == 1 and c.existing_mode == "idempotency"
    assert k not in str(c)


def test_bool_is_not_a_number(queue: Queue) -> None:
    opts = EnqueueOptions(idempotency=Idempotency(key=key()))
    queue.enqueue("t", {"flag": 1}, opts)
    with pytest.raises(EnqueueIdempotencyConflictError):
        queue.enqueue("t", {"flag": True}, opts)


def test_mapping_options_are_the_typescript_names(queue: Queue) -> None:
    k = key()
    a = queue.enqueue("t", [1], {"queue": "maps", "idempotency": {"key": k, "ttlMs": 5000}})
    b = queue.enqueue("t", [1.0], EnqueueOptions(queue="maps", idempotency=Idempotency(key=k, ttl_ms=5000)))
    assert a == b


def test_get_job_and_every_option(queue: Queue) -> None:
    run_at = datetime(2999, 1, 1, tzinfo=timezone.utc)
    opts = EnqueueOptions(
        queue="full",
        run_at=run_at,
        max_attempts=3,
        retry_policy=RetryPolicy.exponential(100, 2, 1000),
        deadline=run_at + timedelta(days=1),
        execution_timeout_ms=5000,
        concurrency_key="c1",
        tags=["b", "a", "b"],
        idempotency=Idempotency(key=key()),
    )
    job_id = queue.enqueue("t", {"x": [1, 2.5, None, "é"]}, opts)
    job = queue.get_job(job_id)
    assert job is not None
    assert (job.queue, job.type, job.state, job.max_attempts, job.tags) == ("full", "t", "scheduled", 3, ["a", "b"])
    assert job.payload == {"x": [1, 2.5, None, "é"]}
    assert job.run_at == run_at and job.execution_timeout_ms == 5000 and job.concurrency_key == "c1"
    assert job.retry_policy == {"initialDelayMs": 100, "multiplier": 2, "maxDelayMs": 1000}
    assert queue.get_job(str(uuid.uuid4())) is None


def test_unkeyed_requests_always_create(queue: Queue) -> None:
    assert queue.enqueue("t", {}) != queue.enqueue("t", {})


def test_find_binding_and_describe_key(queue: Queue) -> None:
    k = key()
    r = queue.enqueue_with_result("t", {}, EnqueueOptions(idempotency=Idempotency(key=k, scope="s1", ttl_ms=60_000)))
    b = queue.find_binding(k, scope="s1")
    assert b is not None
    assert (b.job_id, b.mode, b.scope, b.key_digest, b.key_preview, b.key_length, b.expired) == (
        r.job_id, "idempotency", "s1", r.key_digest, r.key_preview, len(k), False
    )  # fmt: skip
    assert b.ttl_ms == 60_000
    assert queue.find_binding(k, scope="other") is None
    d = queue.describe_key(k, scope="s1")
    assert (d.key_digest, d.key_preview, d.key_length) == (r.key_digest, r.key_preview, len(k))


def test_debounce_and_throttle_outcomes(queue: Queue) -> None:
    k = key()
    d = EnqueueOptions(debounce=Debounce(key=k, window_ms=60_000))
    first = queue.enqueue_with_result("t", {"v": 1}, d)
    second = queue.enqueue_with_result("t", {"v": 2}, d)
    assert (first.outcome, second.outcome, second.job_id) == ("accepted", "replaced", first.job_id)
    held = queue.enqueue_with_result("t", {}, EnqueueOptions(idempotency=Idempotency(key=key())))
    assert held.outcome == "accepted"
    t = EnqueueOptions(throttle=Throttle(key=k + "-t", window_ms=60_000))
    a = queue.enqueue_with_result("t", {}, t)
    b = queue.enqueue_with_result("t", {}, t)
    assert (a.outcome, b.outcome, b.job_id) == ("accepted", "coalesced", a.job_id)
    # A debounce request on a key held by idempotency is non_replaceable.
    k2 = key()
    queue.enqueue("t", {}, EnqueueOptions(idempotency=Idempotency(key=k2)))
    nr = queue.enqueue_with_result("t", {}, EnqueueOptions(debounce=Debounce(key=k2, window_ms=1000)))
    assert (nr.outcome, nr.reason) == ("non_replaceable", "incompatible_key_mode")


def test_enqueue_many(queue: Queue) -> None:
    k = key()
    opts = EnqueueOptions(queue="batch", idempotency=Idempotency(key=k))
    results = queue.enqueue_many([
        EnqueueRequest("t", {"a": 1}, opts),
        EnqueueRequest("t", {"a": 1.0}, opts),
        {"type": "u", "payload": None},
        EnqueueRequest("d", {}, EnqueueOptions(queue="batch", debounce=Debounce(key=key(), window_ms=1000, schedule="preserve", max_wait_ms=5000))),
    ])  # fmt: skip
    assert [r.outcome for r in results] == ["accepted", "replayed", "accepted", "accepted"]
    assert results[0].job_id == results[1].job_id
    assert count_jobs(queue, "batch") == 2  # the unkeyed one went to the default queue
    # A conflict anywhere rolls the whole batch back.
    before = count_jobs(queue, "batch")
    with pytest.raises(EnqueueIdempotencyConflictError) as caught:
        queue.enqueue_many([
            EnqueueRequest("t", {}, EnqueueOptions(queue="batch", idempotency=Idempotency(key=key()))),
            EnqueueRequest("t", {"a": 2}, opts),
        ])  # fmt: skip
    assert caught.value.ordinal == 2 and caught.value.existing_job_id == results[0].job_id
    assert count_jobs(queue, "batch") == before
    assert queue.enqueue_many([]) == []


def test_bad_input_is_typed_and_writes_nothing(queue: Queue) -> None:
    before = count_jobs(queue, "bad")
    cases = [
        ("", {}, EnqueueOptions(queue="bad"), "type"),
        ("t", {"n": float("nan")}, EnqueueOptions(queue="bad"), "payload"),
        ("t", {"d": datetime.now(timezone.utc)}, EnqueueOptions(queue="bad"), "payload"),
        ("t", {1: "x"}, EnqueueOptions(queue="bad"), "payload"),
        ("t", {}, EnqueueOptions(queue="bad", idempotency=Idempotency(key="k" * 513)), "options.idempotency.key"),
        ("t", {}, EnqueueOptions(queue="bad", run_at=datetime(2030, 1, 1)), "options.runAt"),
        ("t", {}, EnqueueOptions(queue="bad", max_attempts=True), "options.maxAttempts"),  # type: ignore[arg-type]
        ("t", {}, EnqueueOptions(queue="bad", idempotency=Idempotency(key="a"), throttle=Throttle(key="a", window_ms=5)), "options.throttle"),
    ]  # fmt: skip
    for type_, payload, opts, option in cases:
        with pytest.raises(EnqueueValidationError) as caught:
            queue.enqueue(type_, payload, opts)
        assert caught.value.option == option, caught.value
    with pytest.raises(EnqueueValidationError) as caught:
        queue.enqueue_many([EnqueueRequest("t", {}, EnqueueOptions(queue="bad"))] * 1001)
    assert caught.value.option == "requests"
    with pytest.raises(EnqueueValidationError) as caught:
        queue.enqueue_many([EnqueueRequest("t", {}, EnqueueOptions(queue="bad")), EnqueueRequest("t", {}, {"queue": ""})])
    assert caught.value.option == "requests[1].options.queue"
    assert count_jobs(queue, "bad") == before


def test_integers_past_2_53_are_the_doubles_they_are(queue: Queue) -> None:
    # A number is a double in every client: 2**64 is one, stored as TypeScript stores it (as 2.0**64), and so
    # is 10**23, the digits PostgreSQL gives back for 1e23.
    job = queue.get_job(queue.enqueue("t", {"big": 2**64, "f": 2.0**64, "e23": 10**23, "near": 1e23}))
    assert job is not None
    assert job.payload == {"big": 18446744073709552000, "f": 18446744073709552000, "e23": 10**23, "near": 10**23}
    # An integer that is no double is refused (never rounded to a nearby one): send it as a string.
    for big, path in [(2**64 + 1, "$.id"), (2**53 + 1, "$.id"), (-(10**23) - 1, "$.id")]:
        with pytest.raises(EnqueueValidationError) as caught:
            queue.enqueue("t", {"id": big})
        assert [(i.option, i.path) for i in caught.value.issues] == [("payload", path)]
        assert caught.value.issues[0].rule == (
            "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string (at $.id)"
        )


def test_secret_from_the_environment(pool, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WORKHORSE_KEY_SECRET", "zz")
    with pytest.raises(EnqueueValidationError):
        Queue(pool)
    monkeypatch.setenv("WORKHORSE_KEY_SECRET", "11" * 32)
    outside = Queue(pool)
    monkeypatch.delenv("WORKHORSE_KEY_SECRET")
    inside = Queue(pool)
    k = key()
    assert outside.describe_key(k).key_digest != inside.describe_key(k).key_digest


def test_conflict_is_a_psycopg_free_error(queue: Queue) -> None:
    opts = EnqueueOptions(idempotency=Idempotency(key=key()))
    queue.enqueue("t", 1, opts)
    with pytest.raises(EnqueueIdempotencyConflictError) as caught:
        queue.enqueue("t", 2, opts)
    assert isinstance(caught.value.__cause__, psycopg.Error)


def test_replay_and_conflict_reach_the_observation_log(pool) -> None:  # type: ignore[no-untyped-def]
    q = Queue(pool, source="py-observer")
    k = key()
    opts = EnqueueOptions(queue="observed", idempotency=Idempotency(key=k, scope="obs"))
    first = q.enqueue_with_result("t", {"amount": 1}, opts)
    q.enqueue("t", {"amount": 1}, opts)
    with pytest.raises(EnqueueIdempotencyConflictError) as caught:
        q.enqueue("t", {"amount": 2}, EnqueueOptions(queue="observed", idempotency=Idempotency(key=k, scope="obs"), max_attempts=3))
    c = caught.value
    with pool.connection() as conn:
        rows = conn.execute(
            """select outcome, queue, type, scope, key_preview, key_digest, key_length, job_id::text, conflicting_fields,
                      payload_paths, stored_request_digest, rejected_request_digest, source
                 from workhorse.enqueue_observation where job_id = %s::uuid order by id""",
            (first.job_id,),
        ).fetchall()
    assert [r[0] for r in rows] == ["replayed", "conflict"]
    assert rows[1] == (
        "conflict", "observed", "t", "obs", first.key_preview, first.key_digest, first.key_length, first.job_id,
        ["maxAttempts", "payload"], ["$.amount"], c.stored_request_digest, c.rejected_request_digest, "py-observer",
    )  # fmt: skip
    assert k not in str(rows)


def test_a_conflict_inside_a_batch_is_observed_for_its_request(pool) -> None:  # type: ignore[no-untyped-def]
    q = Queue(pool)
    k = key()
    first = q.enqueue("t", 1, EnqueueOptions(queue="observed", idempotency=Idempotency(key=k)))
    with pytest.raises(EnqueueIdempotencyConflictError):
        q.enqueue_many([
            EnqueueRequest("other", 0, EnqueueOptions(queue="elsewhere")),
            EnqueueRequest("t", 2, EnqueueOptions(queue="observed", idempotency=Idempotency(key=k))),
        ])  # fmt: skip
    with pool.connection() as conn:
        rows = conn.execute(
            "select outcome, queue, type, conflicting_fields from workhorse.enqueue_observation where job_id = %s::uuid",
            (first,),
        ).fetchall()
    assert rows == [("conflict", "observed", "t", ["payload"])]


def test_none_is_refused_as_typescript_refuses_null_and_absence_is_the_default(queue: Queue) -> None:
    before = count_jobs(queue, "nulls")
    cases = [
        (EnqueueOptions(queue=None), "options.queue", "must be a string of 1..128 characters"),  # type: ignore[arg-type]
        (EnqueueOptions(queue="nulls", max_attempts=None), "options.maxAttempts", "must be an integer 1..1000"),  # type: ignore[arg-type]
        (EnqueueOptions(queue="nulls", idempotency=Idempotency(key=key(), ttl_ms=None)), "options.idempotency.ttlMs",  # type: ignore[arg-type]
         "must be an integer number of milliseconds, 1..31536000000"),
        (EnqueueOptions(queue="nulls", idempotency=Idempotency(key=key(), scope=None)), "options.idempotency.scope",  # type: ignore[arg-type]
         "must be a string of 1..256 UTF-8 bytes"),
        (EnqueueOptions(queue="nulls", throttle=Throttle(key=key(), window_ms=5, scope=None)), "options.throttle.scope",  # type: ignore[arg-type]
         "must be a string of 1..256 UTF-8 bytes"),
        (EnqueueOptions(queue="nulls", idempotency=None), "options.idempotency", "must be a plain object"),  # type: ignore[arg-type]
        ({"queue": None}, "options.queue", "must be a string of 1..128 characters"),
        ({"queue": "nulls", "maxAttempts": None}, "options.maxAttempts", "must be an integer 1..1000"),
        ({"queue": "nulls", "idempotency": {"key": key(), "ttlMs": None}}, "options.idempotency.ttlMs",
         "must be an integer number of milliseconds, 1..31536000000"),
        ({"queue": "nulls", "idempotency": {"key": key(), "scope": None}}, "options.idempotency.scope",
         "must be a string of 1..256 UTF-8 bytes"),
    ]  # fmt: skip
    for opts, option, rule in cases:
        with pytest.raises(EnqueueValidationError) as caught:
            queue.enqueue("t", {}, opts)
        assert [(i.option, i.rule) for i in caught.value.issues] == [(option, rule)], opts
    assert count_jobs(queue, "nulls") == before
    # Left out, each takes its default (options=None is no options at all, as TypeScript's null options).
    k = key()
    job = queue.get_job(queue.enqueue("t", {}, EnqueueOptions(queue="nulls", idempotency=Idempotency(key=k))))
    assert job is not None and (job.queue, job.max_attempts) == ("nulls", 25)
    binding = queue.find_binding(k)
    assert binding is not None and (binding.scope, binding.ttl_ms) == ("default", 86_400_000)
    assert queue.get_job(queue.enqueue("t", {}, None)) is not None


def test_an_integer_past_every_double_is_a_typed_error(queue: Queue) -> None:
    # Past the largest double (and past what Python writes as text, 10**5000): Infinity, as JSON.parse reads
    # such a literal, and refused as TypeScript refuses it, never a bare ValueError or OverflowError.
    before = count_jobs(queue, "huge")
    for payload, path, found in [({"n": 10**5000}, "$.n", "Infinity"), ([1, -(10**5000)], "$[1]", "-Infinity"),
                                 (10**5000, "$", "Infinity"), ([2**1024], "$[0]", "Infinity")]:  # fmt: skip
        with pytest.raises(EnqueueValidationError) as caught:
            queue.enqueue("t", payload, EnqueueOptions(queue="huge"))
        assert [(i.option, i.rule, i.path) for i in caught.value.issues] == [
            ("payload", f"must contain only finite numbers (found {found}) (at {path})", path)
        ], caught.value
    # An option of 10**5000 is out of its bounds; the rule relating maxWaitMs to it is not checked
    # then (as in TypeScript and Go: the rules across options wait for valid options).
    with pytest.raises(EnqueueValidationError) as caught:
        queue.enqueue("t", {}, {"queue": "huge", "debounce": {"key": key(), "windowMs": 10**5000, "maxWaitMs": 5}})
    assert [i.option for i in caught.value.issues] == ["options.debounce.windowMs"]
    assert count_jobs(queue, "huge") == before
    # The largest double, exactly and as PostgreSQL gives it back (309 digits), is that double.
    as_postgresql = int("17976931348623157" + "0" * 292)
    job = queue.get_job(queue.enqueue("t", [int(sys.float_info.max), as_postgresql], EnqueueOptions(queue="huge")))
    assert job is not None and job.payload == [as_postgresql, as_postgresql]


def test_a_batch_request_without_a_payload_is_refused_as_typescript_refuses_it(queue: Queue) -> None:
    # Left out is not None (JSON null): a mapping without "payload" names it and writes nothing.
    with pytest.raises(EnqueueValidationError) as caught:
        queue.enqueue_many([{"type": "t-payload-missing", "options": {"queue": "payload-missing"}}])
    assert caught.value.option == "requests[0].payload"
    assert "use None or {}" in caught.value.rule
    assert count_jobs(queue, "payload-missing") == 0
    # None is JSON null, and an explicit one is accepted.
    assert queue.enqueue_many([{"type": "t", "payload": None, "options": {"queue": "payload-missing"}}])[0].outcome == "accepted"


def _claim_and_complete(queue: Queue, name: str) -> str:
    """A worker's claim and success through the same SQL every client's worker calls."""
    with queue._pool.connection() as conn:
        row = conn.execute(
            "select id::text, attempt from workhorse.claim_jobs(array[%s], null, 'py~1', 1, 60000, false)", (name,)
        ).fetchone()
        assert row is not None
        conn.execute(
            "select * from workhorse.complete_jobs(array[%s::uuid], array[%s::integer], array['py~1'], array['null'::jsonb])",
            (row[0], row[1]),
        )
        return str(row[0])


def test_hold_until_finished_replays_until_the_job_finishes(queue: Queue) -> None:
    """Key lifetimes (docs/enqueue.md): held while the job is pending or running, free once it finished."""
    name = f"hold-{uuid.uuid4()}"
    opts = EnqueueOptions(queue=name, idempotency=Idempotency(key=key(), scope="reports", hold_until="finished"))
    first = queue.enqueue_with_result("report.nightly", {"day": 1}, opts)
    assert first.outcome == "accepted"
    again = queue.enqueue_with_result("report.nightly", {"day": 1}, opts)
    assert (again.outcome, again.job_id) == ("replayed", first.job_id)
    binding = queue.find_binding(key=opts.idempotency.key, scope="reports")  # type: ignore[union-attr]
    assert binding is not None
    assert (binding.hold_until, binding.ttl_ms, binding.expires_at) == ("finished", None, None)
    assert _claim_and_complete(queue, name) == first.job_id
    after = queue.enqueue_with_result("report.nightly", {"day": 1}, opts)
    assert after.outcome == "accepted" and after.job_id != first.job_id


def test_hold_until_is_in_the_fingerprint_and_throttle_refuses_it(queue: Queue) -> None:
    k = key()
    queue.enqueue("t", {}, EnqueueOptions(idempotency=Idempotency(key=k, hold_until="finished", ttl_ms=86_400_000)))
    with pytest.raises(EnqueueIdempotencyConflictError) as caught:
        queue.enqueue("t", {}, EnqueueOptions(idempotency=Idempotency(key=k, hold_until="started", ttl_ms=86_400_000)))
    assert caught.value.conflicting_fields == ["holdUntil"]
    with pytest.raises(EnqueueValidationError) as refused:
        queue.enqueue("t", {}, {"throttle": {"key": k, "windowMs": 1000, "holdUntil": "finished"}})
    assert [i.option for i in refused.value.issues] == ["options.throttle.holdUntil"]

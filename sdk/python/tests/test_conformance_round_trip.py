"""Numbers as PostgreSQL gives them back (sdk/conformance/enqueue.json, ``roundTrip`` and ``integerLiterals``):
a payload PostgreSQL stored is read back as its jsonb text, numbers written out without exponents (1e23 as
100000000000000000000000), and a Python program that enqueues what it read again (``get_job(...).payload``,
or ``json.loads`` of the text) must send the same payload. An integer past 2^53 is a number every client
reads alike: the double it is (its exact value, or its shortest digits as JavaScript or PostgreSQL writes
them), written as TypeScript writes that double, or refused when it is no double."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
import secrets
from typing import Any

import pytest

from workhorse import EnqueueOptions, Idempotency, Queue
from workhorse._payload import encode_payload
from workhorse.errors import EnqueueValidationError

from .test_conformance import parse_payload

FILE = json.loads((Path(__file__).parents[2] / "conformance" / "enqueue.json").read_text(encoding="utf-8"))
ROUND_TRIP = FILE["roundTrip"]
LITERALS = FILE["integerLiterals"]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).digest()[:8].hex()


def test_the_file_has_round_trip_payloads_and_literals() -> None:
    assert len(ROUND_TRIP) > 3 and len(LITERALS) > 10


@pytest.mark.parametrize("case", LITERALS, ids=[c["literal"][:40] for c in LITERALS])
def test_integer_literal(case: dict[str, Any]) -> None:
    """The literal as Python reads JSON text (json.loads: an int), as a payload: the file's texts or refusal."""
    value = json.loads(case["literal"])
    assert type(value) is int
    if "error" in case:
        with pytest.raises(EnqueueValidationError) as caught:
            encode_payload(value, 1 << 20)
        assert [(i.option, i.rule, i.path) for i in caught.value.issues] == [("payload", case["error"] + " (at $)", "$")]
        return
    assert encode_payload(value, 1 << 20) == (case["payloadCanonical"], len(case["payloadJsonbText"]))
    assert encode_payload(value, 1 << 20, jsonb=True)[0] == case["payloadJsonbText"]
    assert encode_payload([value], 1 << 20)[0] == "[" + case["payloadCanonical"] + "]"


@pytest.mark.parametrize("case", ROUND_TRIP, ids=[c["name"] for c in ROUND_TRIP])
def test_round_trip_texts(case: dict[str, Any]) -> None:
    """The payload's text and PostgreSQL's text of it, read by json.loads (integers exact) and as doubles:
    the file's canonical text, jsonb text and digest."""
    for text in (case["payloadText"], case["payloadJsonbText"]):
        for payload in (json.loads(text), parse_payload(text)):
            canonical, size = encode_payload(payload, 1 << 20)
            jsonb, _ = encode_payload(payload, 1 << 20, jsonb=True)
            assert (canonical, jsonb, _digest(jsonb)) == (case["payloadCanonical"], case["payloadJsonbText"], case["payloadDigest"])
            assert size == len(case["payloadJsonbText"].encode("utf-8"))


@pytest.mark.parametrize("case", ROUND_TRIP, ids=[c["name"] for c in ROUND_TRIP])
def test_a_payload_read_back_from_postgresql_replays(queue: Queue, case: dict[str, Any]) -> None:
    """Enqueued with a key (json.loads of the payload's text), read back (payload::text, and get_job's
    payload as psycopg reads jsonb) and enqueued again with the same key: a replay of the same job."""
    opts = EnqueueOptions(idempotency=Idempotency(key=f"round-trip-{secrets.token_hex(6)}", scope="conformance-round-trip"))
    first = queue.enqueue_with_result("t", json.loads(case["payloadText"]), opts)
    assert first.outcome == "accepted"
    with queue._pool.connection() as conn:
        row = conn.execute("select payload::text from workhorse.job where id = %s", (first.job_id,)).fetchone()
    assert row is not None
    stored = row[0]
    assert stored == case["payloadJsonbText"]
    job = queue.get_job(first.job_id)
    assert job is not None
    for again in (job.payload, json.loads(stored)):
        r = queue.enqueue_with_result("t", again, opts)
        assert (r.outcome, r.job_id) == ("replayed", first.job_id)

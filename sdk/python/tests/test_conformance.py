"""Every case of sdk/conformance/enqueue.json, computed by the Python client's own functions."""

from __future__ import annotations

from datetime import datetime
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from workhorse._input import RequestConfig, hold_until_digest, iso, normalize_request, one_values
from workhorse._key_preview_table import HIDDEN_RANGES, UNICODE_VERSION
from workhorse._keys import key_preview, legacy_key_hash
from workhorse._payload import canonical_text, jsonb_text
from workhorse.errors import EnqueueValidationError
from workhorse.queue import _bucketed_id, _key_bucket

FILE = json.loads((Path(__file__).parents[2] / "conformance" / "enqueue.json").read_text(encoding="utf-8"))
CASES = FILE["cases"]
# Python can hold every case's input: lone surrogates in str, options as a mapping of the TypeScript names, and
# None for null.
SUPPORTED_NEEDS = {"loneSurrogate", "optionShape", "explicitNull"}


def parse_payload(text: str) -> Any:
    """JSON text with numbers read as IEEE-754 doubles, as the file prescribes (and JSON.parse does)."""

    def as_double(s: str) -> int | float:
        n = int(s)
        return n if abs(n) <= 2**53 else float(s)

    return json.loads(text, parse_int=as_double)


def options_of(case: dict[str, Any]) -> dict[str, Any] | None:
    o = case["input"].get("options")
    if o is None:
        return None
    o = dict(o)
    for k in ("runAt", "deadline"):
        if isinstance(o.get(k), str):
            o[k] = datetime.fromisoformat(o[k].replace("Z", "+00:00"))
    return o


def test_every_case_is_runnable() -> None:
    needs = {n for c in CASES for n in c.get("needs", [])}
    assert needs <= SUPPORTED_NEEDS
    assert len(CASES) > 100


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    check_case(case, parse_payload(case["input"]["payloadText"]))


# Read by json.loads, integers are exact Python ints: past 2^53, those that are doubles are those doubles (the
# same answers), and one that is no double is refused instead of rounded, as Go refuses it in JSON text.
EXACT_INTEGER_RULES = {
    "payload: big integers are doubles": [{"option": "payload", "path": "$[0]", "rule":
        "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string (at $[0])"}],
}  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_read_with_exact_integers(case: dict[str, Any]) -> None:
    payload = json.loads(case["input"]["payloadText"])
    if case["name"] in EXACT_INTEGER_RULES:
        case = {**case, "expect": {"error": {"issues": EXACT_INTEGER_RULES[case["name"]]}}}
    check_case(case, payload)


def check_case(case: dict[str, Any], payload: Any) -> None:
    """Normalizes the case's request with `payload` and compares everything with the file."""
    config = RequestConfig(
        max_payload_bytes=case["input"].get("maxPayloadBytes", FILE["limits"]["defaultPayloadBytes"]),
        source=None,
        secret=bytes.fromhex(FILE["secretHex"]),
    )
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(EnqueueValidationError) as caught:
            normalize_request(case["input"]["type"], payload, options_of(case), config)
        got = [{"option": i.option, "rule": i.rule, **({"path": i.path} if i.path else {})} for i in caught.value.issues]
        assert got == expect["error"]["issues"]
        return
    ok = expect["ok"]
    n = normalize_request(case["input"]["type"], payload, options_of(case), config)
    # Keyed requests send PostgreSQL's jsonb text (their payload digest is of it); others the canonical text.
    assert n.payload_text == (ok["payloadJsonbText"] if ok["keyed"] else ok["payloadCanonical"])
    assert jsonb_text(payload) == ok["payloadJsonbText"]
    assert canonical_text(payload) == ok["payloadCanonical"]
    assert hashlib.sha256(jsonb_text(payload).encode("utf-8")).digest()[:8].hex() == ok["payloadDigest"]
    assert n.payload_bytes == ok["payloadBytes"]
    assert (n.type, n.queue, n.max_attempts, n.tags) == (ok["type"], ok["queue"], ok["maxAttempts"], ok["tags"])
    assert (iso(n.run_at) if n.run_at else None) == ok["runAt"]
    assert (iso(n.deadline) if n.deadline else None) == ok["deadline"]
    assert n.retry_policy == ok["retryPolicy"]
    assert (n.execution_timeout_ms, n.concurrency_key, n.source) == (ok["executionTimeoutMs"], ok["concurrencyKey"], ok["source"])
    k, ek = n.keyed, ok["keyed"]
    if ek is None:
        assert k is None
    else:
        assert k is not None
        key = case["input"]["options"][k.mode]["key"]
        assert {
            "mode": k.mode,
            "scope": k.scope,
            "keyHash": k.key_hash.hex(),
            "legacyKeyHash": legacy_key_hash(k.scope, key).hex(),
            "keyDigest": k.key_digest,
            "keyPreview": k.key_preview,
            "keyLength": k.key_length,
            "ttlMs": k.ttl_ms,
            "schedule": k.schedule,
            "maxWaitMs": k.max_wait_ms,
            "holdUntil": k.hold_until,
            "fieldDigests": k.field_digests.hex(),
            "holdUntilDigest": hold_until_digest(k.hold_until).hex() if k.hold_until else None,
            "requestDigest": hashlib.sha256(k.field_digests + hold_until_digest(k.hold_until)).hexdigest(),
        } == {name: v for name, v in ek.items() if name != "fieldDigestsByName"}
        assert k.field_digests[32:40].hex() == ek["fieldDigestsByName"]["payload"] == ok["payloadDigest"]
    names = [p["name"] for p in FILE["enqueueOneParams"]]
    values = one_values(n, FILE["jobId"], notify=False, retry=True)
    got = {name: (f"\\x{v.hex()}" if isinstance(v, bytes) else v) for name, v in zip(names, values, strict=True)}
    want = dict(ok["enqueueOneParams"])
    assert got.pop("p_payload") == (ok["payloadJsonbText"] if ok["keyed"] else ok["payloadCanonical"])
    want.pop("p_payload")
    assert got == want


# Key previews hide control and format characters by one table every client shares
# (sdk/conformance/key-preview-hidden.json), not by unicodedata's Unicode version.
TABLE = json.loads((Path(__file__).parents[2] / "conformance" / "key-preview-hidden.json").read_text(encoding="utf-8"))
TABLE_RANGES = [(int(a, 16), int(b, 16)) for a, b in TABLE["ranges"]]


def test_key_preview_table_is_the_conformance_table() -> None:
    assert UNICODE_VERSION == TABLE["unicodeVersion"]
    assert list(HIDDEN_RANGES) == TABLE_RANGES


def test_key_preview_hides_the_table_and_shows_what_is_beside_it() -> None:
    def preview_of(cp: int) -> str:
        return key_preview(chr(cp) + "bcdefghi")  # 9 code points: 3 shown

    for first, last in TABLE_RANGES:
        assert preview_of(first) == "\ufffdbc…"
        assert preview_of(last) == "\ufffdbc…"
        if first > 0:
            assert "\ufffd" not in preview_of(first - 1)
        assert "\ufffd" not in preview_of(last + 1)


def test_buckets() -> None:
    """The distributed layout's bucket of each key of the file, and the job id carrying it, as the
    TypeScript core (and workhorse.key_bucket on Citus) computes them."""
    assert FILE["buckets"]
    for b in FILE["buckets"]:
        bucket = _key_bucket(b["scope"], bytes.fromhex(b["keyHashHex"]))
        assert (b["scope"], bucket, _bucketed_id(FILE["jobId"], bucket)) == (b["scope"], b["bucket"], b["bucketedJobId"])


def test_cached_field_digests_keep_values_of_other_types_apart() -> None:
    """The field-digest cache keys on the value's type: True and 1, 1 and 1.0, "1" and 1 are equal or
    alike to Python but have different JSON texts, so different digests, cached or not."""
    from workhorse._input import _digest_json, _field_digest

    for _ in range(2):  # the second round reads the cache
        for v in (True, 1, 1.0, "1", None, ["a"], "a"):
            assert _field_digest(v) == hashlib.sha256(_digest_json(v).encode("utf-8")).digest()[:8], v
    assert len({_field_digest(v) for v in (True, 1, 1.0, "1")}) == 4


def test_worker_calls_match_the_conformance_file() -> None:
    """Every worker statement calls its SQL function with the file's argument types, in order, and
    selects only the function's result columns; every worker function in the file is called."""
    from workhorse import _worker_sql

    calls = {c["function"]: c for c in FILE["workerCalls"]}
    seen: set[str] = set()
    for name, sql in vars(_worker_sql).items():
        if not (name.isupper() and isinstance(sql, str)):
            continue
        m = re.search(r"from (workhorse\.\w+)\((.*?)\)", sql, re.S)
        if m is None or m.group(1) not in calls:
            continue  # not a function call (e.g. the checkpoint read from its table)
        fn = m.group(1)
        seen.add(fn)
        assert re.findall(r"%s::([\w\[\]]+)", m.group(2)) == calls[fn]["args"], name
        selected = re.match(r"\s*select (.*?)\s+from ", sql, re.S)
        assert selected is not None, name
        columns = {c["name"] for c in calls[fn]["columns"]}
        for item in selected.group(1).split(","):
            assert item.strip().split("::")[0] in columns, (name, item)
    assert seen == set(calls)

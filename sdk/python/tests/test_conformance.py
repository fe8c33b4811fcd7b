"""Every case of sdk/conformance/enqueue.json, computed by the Python client's own functions."""

from __future__ import annotations

from datetime import datetime
from enum import Enum, IntEnum
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from workhorse._input import Normalized, RequestConfig, iso, normalize_request, one_values
from workhorse._key_preview_table import HIDDEN_RANGES, UNICODE_VERSION
from workhorse._keys import key_preview, legacy_key_hash
from workhorse._payload import canonical_text, encode_payload, jsonb_text
from workhorse.errors import EnqueueValidationError
from workhorse.queue import _bucketed_id, _key_bucket

FILE = json.loads((Path(__file__).parents[2] / "conformance" / "enqueue.json").read_text(encoding="utf-8"))
CASES = FILE["cases"]
# Python can hold every case's input: lone surrogates in str, options as a mapping of the TypeScript names, and
# None for null.
SUPPORTED_NEEDS = {"loneSurrogate", "optionShape", "explicitNull"}
# What the file pins of a keyed request's digests: PostgreSQL's, from the values it receives.
DIGESTS = ("fieldDigests", "fieldDigestsByName", "holdUntilDigest", "requestDigest")


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


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()[:8]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def reference_field_digests(n: Normalized) -> bytes:
    """A keyed request's 88 bytes of field digests as PostgreSQL computes them from the values it
    receives (workhorse.request_field_digests; the client sends none): the first 8 bytes of SHA-256 of
    each field's JSON form in the file's fingerprintFields order, the payload's of its jsonb text. A
    reference for the file's fieldDigests, test code only."""
    assert n.keyed is not None
    values = {
        "concurrencyKey": n.concurrency_key,
        "deadline": iso(n.deadline) if n.deadline else None,
        "executionTimeoutMs": n.execution_timeout_ms,
        "maxAttempts": n.max_attempts,
        "queue": n.queue,
        "retryPolicy": n.retry_policy,
        "runAt": iso(n.run_at) if n.run_at else {"omitted": True},
        "tags": n.tags,
        "ttlMs": n.keyed.ttl_ms,
        "type": n.type,
    }
    return b"".join(
        _digest(n.payload_text) if f == "payload" else _digest(_json(values[f]))
        for f in FILE["fingerprintFields"]
        if f != "holdUntil"
    )


def reference_hold_until_digest(hold_until: str | None) -> bytes:
    """The 8 bytes PostgreSQL appends after the field digests for a key lifetime (empty without one)."""
    return b"" if hold_until is None else _digest(_json(hold_until))


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
    # Keyed requests send PostgreSQL's jsonb text (its digest is the payload's fingerprint digest); others the canonical text.
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
        } == {name: v for name, v in ek.items() if name not in DIGESTS}
        # What PostgreSQL computes from the values sent (the client sends no digest): the file's
        # digests against the reference computation above.
        digests, hold = reference_field_digests(n), reference_hold_until_digest(k.hold_until)
        assert {
            "fieldDigests": digests.hex(),
            "fieldDigestsByName": {
                f: digests[i * 8 : i * 8 + 8].hex() for i, f in enumerate(FILE["fingerprintFields"]) if f != "holdUntil"
            },
            "holdUntilDigest": hold.hex() if k.hold_until else None,
            "requestDigest": hashlib.sha256(digests + hold).hexdigest(),
        } == {name: ek[name] for name in DIGESTS}
        assert ek["fieldDigestsByName"]["payload"] == ok["payloadDigest"]
    names = [p["name"] for p in FILE["enqueueOneParams"]]
    values = one_values(n, FILE["jobId"], notify=False, retry=True)
    got = {name: (f"\\x{v.hex()}" if isinstance(v, bytes) else v) for name, v in zip(names, values, strict=True)}
    want = dict(ok["enqueueOneParams"])
    assert got.pop("p_payload") == (ok["payloadJsonbText"] if ok["keyed"] else ok["payloadCanonical"])
    want.pop("p_payload")
    assert got == want


# Subclasses of JSON's types (the file's "payload: subclass: ..." cases, plain values there): a subclass of
# int, float, str, list, tuple or dict is written as its base type's value, never through its own methods,
# so each payload built of them below gives exactly the plain value's texts, digest, size and issues.
class Color(int, Enum):  # str() is "Color.RED", repr() "<Color.RED: 1>"
    RED = 1
    GREEN = 2


class Huge(IntEnum):
    TWO_62 = 2**62


class OddInt(int):
    """An int that prints, converts and compares as another number."""

    def __str__(self) -> str:
        return str(int.__int__(self) + 1)

    def __repr__(self) -> str:
        return "OddInt(" + int.__repr__(self) + ")"

    def __format__(self, spec: str) -> str:
        return "formatted"

    def __int__(self) -> int:
        return 999

    def __index__(self) -> int:
        return 999

    def __float__(self) -> float:
        return 0.5

    def __abs__(self) -> int:
        return 3

    def __neg__(self) -> int:
        return 3

    def __lt__(self, other: object) -> bool:
        return True

    def __le__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True

    def bit_length(self) -> int:
        return 0


class OddStr(str):
    """A str that prints, iterates, measures, encodes and orders as another string."""

    def __str__(self) -> str:
        return "other"

    def __repr__(self) -> str:
        return "'other'"

    def __format__(self, spec: str) -> str:
        return "other"

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter("other")

    def __len__(self) -> int:
        return 1

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return "o"

    def __lt__(self, other: object) -> bool:
        return not str.__lt__(self, other)  # type: ignore[operator]

    def __gt__(self, other: object) -> bool:
        return not str.__gt__(self, other)  # type: ignore[operator]

    def __add__(self, other: object) -> str:
        return "other"

    def __radd__(self, other: object) -> str:
        return "other"

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        return b"other"

    def isascii(self) -> bool:
        return not str.isascii(self)

    __hash__ = str.__hash__
    __eq__ = str.__eq__


class LongStr(str):
    def __len__(self) -> int:
        return 10**6


class ShortStr(str):
    def __len__(self) -> int:
        return 0


class OddFloat(float):
    def __repr__(self) -> str:
        return "2.5"

    def __str__(self) -> str:
        return "2.5"

    def __format__(self, spec: str) -> str:
        return "2.5"

    def __float__(self) -> float:
        return 2.5

    def __abs__(self) -> float:
        return 2.5

    def __neg__(self) -> float:
        return 2.5

    def is_integer(self) -> bool:
        return True


class OddDict(dict):  # type: ignore[type-arg]
    """A dict whose every way of reading it says {"x": 9}."""

    def items(self):  # type: ignore[no-untyped-def]
        return [("x", 9)]

    def keys(self):  # type: ignore[no-untyped-def]
        return ["x"]

    def values(self):  # type: ignore[no-untyped-def]
        return [9]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(["x"])

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        return 9

    def get(self, k, default=None):  # type: ignore[no-untyped-def]
        return 9

    def __len__(self) -> int:
        return 1

    def __contains__(self, k: object) -> bool:
        return k == "x"


class OddList(list):  # type: ignore[type-arg]
    """A list whose every way of reading it says [9]."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter([9])

    def __reversed__(self):  # type: ignore[no-untyped-def]
        return iter([9])

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return 9

    def __len__(self) -> int:
        return 1


class ZeroList(list):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 0


class OddTuple(tuple):  # type: ignore[type-arg]
    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter([9])

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return 9

    def __len__(self) -> int:
        return 1


def _nested(depth: int, cls: type) -> Any:
    v = cls()
    for _ in range(depth - 1):
        v = cls([v])
    return v


SUBCLASS_PAYLOADS: dict[str, Any] = {
    "payload: subclass: enum members that mix in int are their ints": lambda: {
        "color": Color.RED, "colors": [Color.GREEN, Color.RED], "flag": True, "big": Huge.TWO_62},
    "payload: subclass: an int subclass whose __str__ and __repr__ say another number": lambda: {
        "n": OddInt(5), "m": [OddInt(-7), OddInt(0)], "past 2^53": OddInt(2**64)},
    "payload: subclass: a str subclass whose __str__, __iter__ and __len__ say otherwise": lambda: {
        "s": OddStr("text"), "escaped": OddStr('a"b\n'), "key": OddStr("é😀")},
    "payload: subclass: str subclass keys are their strings, in jsonb's order": lambda: {
        OddStr("bb"): 1, OddStr("a"): 2, OddStr("é"): 3, OddStr("c"): 4},
    "payload: subclass: a float subclass whose __repr__ says another number": lambda: [
        OddFloat(1.5), OddFloat(1e21), OddFloat(-2.5e-7), OddFloat(0.1)],
    "payload: subclass: a dict subclass whose items, keys, __iter__ and __getitem__ say otherwise": lambda: OddDict(
        a=1, b=[2, OddDict(c=None)]),
    "payload: subclass: a list subclass whose __iter__, __getitem__ and __len__ say otherwise": lambda: OddList(
        [1, "two", OddList([3])]),
    "payload: subclass: a tuple subclass whose __iter__ says otherwise": lambda: OddTuple((1, "a")),
    "payload: subclass: at the byte bound though __len__ says more": lambda: {"s": LongStr("abcdef")},
    "payload: subclass: over the byte bound though __len__ says less": lambda: {"s": ShortStr("abcdef")},
    "payload: subclass: nested 100 levels of list subclasses": lambda: _nested(100, OddList),
    "payload: subclass: nested 101 levels of list subclasses whose __len__ says 0": lambda: _nested(101, ZeroList),
}  # fmt: skip


def test_every_subclass_case_is_built() -> None:
    assert set(SUBCLASS_PAYLOADS) == {c["name"] for c in CASES if c["name"].startswith("payload: subclass: ")}


@pytest.mark.parametrize("name", list(SUBCLASS_PAYLOADS))
def test_subclasses_are_their_base_values(name: str) -> None:
    case = next(c for c in CASES if c["name"] == name)
    payload = SUBCLASS_PAYLOADS[name]()
    check_case(case, payload)
    ok = case["expect"].get("ok")
    if ok:  # the writers the validator does not reach, and the value as a checkpoint or result
        assert (canonical_text(payload), jsonb_text(payload)) == (ok["payloadCanonical"], ok["payloadJsonbText"])
        assert encode_payload(payload, 1 << 20) == (ok["payloadCanonical"], ok["payloadBytes"])


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


def test_batch_sends_no_field_digests() -> None:
    """enqueue_batch's p_field_digests is one null per request, keyed or not: PostgreSQL digests the
    values it receives (as enqueue_one's p_field_digests is null in every case of the file)."""
    from workhorse.queue import _BATCH_TYPES, _batch_values

    config = RequestConfig(max_payload_bytes=1 << 20, source=None, secret=bytes.fromhex(FILE["secretHex"]))
    requests = [
        normalize_request("t", {"a": 1}, {"idempotency": {"key": "k1"}}, config),
        normalize_request("t", {"a": 2}, None, config),
        normalize_request("t", {"a": 3}, {"debounce": {"key": "k2", "windowMs": 1000}}, config),
    ]
    values = _batch_values(requests, [FILE["jobId"]] * 3, retry=False)
    assert len(values) == len(_BATCH_TYPES)
    assert values[18] == [None, None, None]


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

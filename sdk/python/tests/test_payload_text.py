"""The payload's jsonb text written by the client is PostgreSQL's own text of the same jsonb, byte for
byte: a keyed request sends it, and PostgreSQL's digest of the payload for the fingerprint is of that
text (docs/clients.md)."""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from psycopg_pool import ConnectionPool

from workhorse._payload import canonical_text, jsonb_text, plain_number

_KEYS = ["a", "b", "aa", "é", "z", "ab", "\U0001f600", "\ufffd", "", "Z", "10", "2"]
_STRINGS = ["x", "", "a\"b\\c", "\n\t\u0001\u001f", "\u2028", "é😀", "\u007f", "ключ"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:  # an int within 2^53, or one past it that is a double (m * 2^k), or 1e23 as PostgreSQL writes it
        return rng.choice([rng.randint(-(2**53), 2**53), rng.randint(-(2**20), 2**20) * 2 ** rng.randint(34, 1000), 10**23])
    if kind == 3:
        return rng.choice([1e21, 1.5e-7, -1e-7, 1e-6, 5e-324, sys.float_info.max, 0.1, -2.5e22, 42.0, -0.0])
    if kind == 4:
        return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-30, 30)
    if kind == 5:
        return rng.choice(_STRINGS) + chr(rng.randrange(0x20, 0x2FFF))
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(_KEYS): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


def test_jsonb_text_is_postgresqls_text_of_the_same_jsonb(pool: ConnectionPool) -> None:
    rng = random.Random(20261202)
    values = [_value(rng) for _ in range(400)]
    with pool.connection() as conn:
        rows = conn.execute(
            "select a::jsonb::text, b::jsonb::text from unnest(%s::text[], %s::text[]) as u(a, b)",
            [[canonical_text(v) for v in values], [jsonb_text(v) for v in values]],
        ).fetchall()
    for v, (from_canonical, from_own) in zip(values, rows, strict=True):
        assert (json.dumps(v, ensure_ascii=False), jsonb_text(v)) == (json.dumps(v, ensure_ascii=False), from_canonical)
        assert from_own == jsonb_text(v)


def test_numbers_lose_their_exponents() -> None:
    assert plain_number("1e+21") == "1000000000000000000000"
    assert plain_number("1.5e-7") == "0.00000015"
    assert plain_number("-1.25e-7") == "-0.000000125"
    assert plain_number("-2.5e+22") == "-25000000000000000000000"
    assert plain_number("42") == "42"

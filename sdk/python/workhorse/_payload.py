"""Payloads: the canonical JSON text every Workhorse client sends, and the bytes PostgreSQL stores.

The canonical text follows JSON's data model, not Python's: ``42.0`` is written ``42`` (numbers are
written as ECMAScript writes doubles), ``True`` is a boolean and never a number, object keys are
written in jsonb's order (shorter UTF-8 first, then bytewise), no whitespace. The checks and their
messages are the TypeScript core's (docs/clients.md, conformance).

A number is a double, as in every client: an ``int`` within 2^53 is exact; past it, an ``int`` is the
double it spells (its exact value, or that double's shortest digits as JavaScript or PostgreSQL writes
them: ``10**23`` is ``1e23``, which PostgreSQL gives back as 100000000000000000000000) and is written as
TypeScript writes that double; any other is refused, never rounded. A subclass of ``int``, ``float``,
``str``, ``list``, ``tuple`` or ``dict`` (an ``Enum`` member mixing in ``int``, a ``str`` subclass, an
``OrderedDict``) is read as its base type's value, through the base type's own methods, never its
overrides (``__str__``, ``__repr__``, ``__iter__``, ``__len__``, ``items``, ``keys``, ``__getitem__``...).
"""

from __future__ import annotations

from decimal import Decimal
import json
import math
import re
import sys
from typing import Any

from .errors import EnqueueValidationError, ValidationIssue

MAX_DEPTH = 100
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_PATH_CHARS = 2000
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


def _digits_exponent(x: float) -> tuple[str, int]:
    """Shortest round-trip digits of |x| (no leading or trailing zeros) and n with |x| = 0.digits * 10^n."""
    sign, digits, exp = Decimal(repr(abs(x))).as_tuple()
    s = "".join(map(str, digits)).lstrip("0")
    stripped = s.rstrip("0")
    exp = int(exp) + (len(s) - len(stripped))
    return stripped, exp + len(stripped)


def int_too_long(n: int) -> bool:
    """Whether Python refuses to write this int as decimal text: more digits than
    ``sys.get_int_max_str_digits()`` (4300 by default; 0 turns the limit off)."""
    limit = sys.get_int_max_str_digits()
    if not limit or n.bit_length() < (limit - 1) * 3.32:  # fewer than limit digits for sure
        return False
    try:
        str(n)
    except ValueError:
        return True
    return False


_TWO_53 = 2**53
_NOT_A_DOUBLE = "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string"


def double_of(n: int) -> float | str:
    """The double a payload integer past 2^53 is, or the rule it breaks: its exact value (2**62), or a
    double's shortest digits as JavaScript writes them (18446744073709552000) or as PostgreSQL does
    (100000000000000000000000, 1e23: what payload::text gives back for a payload TypeScript stored).
    Any other integer (2**53 + 1, 2**64 + 1) would be stored as a different number: refused."""
    n = int.__int__(n)
    try:
        f = float(n)
    except OverflowError:  # past the largest double: JSON.parse reads such a literal as ±Infinity
        return f"must contain only finite numbers (found {'Infinity' if n > 0 else '-Infinity'})"
    if int(f) == n:
        return f
    text = int.__repr__(n)  # at most 309 digits: below 2^1024
    js = es_number(f)
    if text == js or text == plain_number(js):
        return f
    return _NOT_A_DOUBLE


def es_number(x: int | float) -> str:
    """A number as JSON.stringify writes it (a float as ECMAScript's Number::toString; an int within 2^53
    exactly, past it as the double it is, see ``double_of``). Subclasses are read as their base values."""
    if isinstance(x, int):
        if -_TWO_53 <= x <= _TWO_53:
            return int.__repr__(x)
        x = float(int.__int__(x))  # a checked payload integer past 2^53 is the double it spells
    elif type(x) is not float:
        x = float.__float__(x)
    if x == 0:
        return "0"
    s, n = _digits_exponent(x)
    k = len(s)
    sign = "-" if x < 0 else ""
    if k <= n <= 21:
        return sign + s + "0" * (n - k)
    if 0 < n <= 21:
        return sign + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + s
    e = n - 1
    mant = s if k == 1 else s[0] + "." + s[1:]
    return f"{sign}{mant}e{'+' if e >= 0 else '-'}{abs(e)}"


def _numeric_expansion(x: float, text: str) -> int:
    """How many more characters PostgreSQL's numeric form has than ECMAScript's (exponent forms only)."""
    e = text.find("e")
    if e < 0:
        return 0
    sign = 1 if x < 0 else 0
    digits = e - sign - (0 if "." not in text else 1)
    exp = int(text[e + 1 :])
    plain = sign + (exp + 1 if exp >= 0 else 2 - exp - 1 + digits)
    return plain - len(text)


# Strings JSON.stringify writes as they are, between quotes: one UTF-16 unit per character. Checked
# by a regular expression (in C) before the per-character loop, which only odd strings reach.
_PLAIN = re.compile(r"[\x20\x21\x23-\x5b\x5d-\ud7ff\ue000-\uffff]*")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def js_string(s: str) -> str:
    """A string as JSON.stringify writes it (lone surrogates escaped as \\udxxx)."""
    out = json.dumps(s, ensure_ascii=False)
    if _SURROGATE.search(s) is not None:
        out = "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in out)
    return out


def _units(s: str) -> int:
    """UTF-16 length of JSON.stringify(s), or -1 when PostgreSQL cannot store it (NUL, lone surrogates)."""
    units = len(s) + 2
    if _PLAIN.fullmatch(s) is not None:
        return units
    for c in s:
        o = ord(c)
        if o == 0 or 0xD800 <= o <= 0xDFFF:
            return -1
        if o > 0xFFFF:
            units += 1
        elif o in (0x22, 0x5C, 8, 9, 10, 12, 13):
            units += 1
        elif o < 0x20:
            units += 5
    return units


def json_path(steps: list[str | int]) -> str:
    """A JSON path in payloadPaths syntax: ``$.a``, ``$[0]``, ``$["not an identifier"]``."""
    out = "$"
    for s in steps:
        if isinstance(s, int):
            out += f"[{s}]"
        elif _IDENTIFIER.fullmatch(s):
            out += f".{s}"
        else:
            out += f"[{js_string(s)}]"
        if len(out) > _MAX_PATH_CHARS:
            return out[: _MAX_PATH_CHARS - 1] + "…"
    return out


def _js_key_order(d: dict[str, Any]) -> list[str]:
    """Keys in the order JavaScript enumerates them: array indices ascending, then insertion order."""
    keys = list(d.keys())
    indices = [k for k in keys if isinstance(k, str) and _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1]
    if not indices:
        return keys
    rest = [k for k in keys if k not in set(indices)]
    return sorted(indices, key=int) + rest


def _type_name(v: object) -> str:
    return type(v).__name__


# The types a payload is made of, exactly; a subclass of one of them is read as its base value.
_EXACT = frozenset({str, int, float, bool, type(None), dict, list, tuple})
_STR_ONLY = frozenset({str})


def _base_value(x: Any) -> Any:
    """``x``, a subclass instance of a JSON type, as a value of its base type, read through the base type's
    own methods (never the subclass's ``__str__``, ``__iter__``, ``items``, ``__getitem__``...): an ``int``,
    ``float`` or ``str``; a plain shallow copy of a ``list``, ``tuple`` or ``dict`` (keys that are ``str``
    subclasses as their strings). bool cannot be subclassed. Anything else is returned as it is."""
    if isinstance(x, str):
        return str.__str__(x)
    if isinstance(x, int):
        return int.__int__(x)
    if isinstance(x, float):
        return float.__float__(x)
    if isinstance(x, dict):
        return _plain_dict(x)
    if isinstance(x, list):
        return list.copy(x)
    if isinstance(x, tuple):
        return tuple.__getitem__(x, slice(None))
    return x


def _plain_dict(d: dict[Any, Any]) -> dict[Any, Any]:
    """``d`` as a plain dict of its own items (dict's own iteration), keys that are ``str`` subclasses as
    their strings; ``d`` itself when it is one already."""
    if type(d) is dict and set(map(type, d)) <= _STR_ONLY:
        return d
    return {(str.__str__(k) if isinstance(k, str) else k): v for k, v in dict.items(d)}


def plain_number(text: str) -> str:
    """An ECMAScript number text without its exponent, as PostgreSQL's numeric writes it
    (``1e+21`` -> ``1000000000000000000000``, ``1.5e-7`` -> ``0.00000015``)."""
    e = text.find("e")
    if e < 0:
        return text
    negative = text.startswith("-")
    mantissa = text[1 if negative else 0 : e]
    exp = int(text[e + 1 :])
    dot = mantissa.find(".")
    digits = mantissa if dot < 0 else mantissa[:dot] + mantissa[dot + 1 :]
    point = (len(mantissa) if dot < 0 else dot) + exp
    if point <= 0:
        out = "0." + "0" * (-point) + digits
    elif point >= len(digits):
        out = digits + "0" * (point - len(digits))
    else:
        out = digits[:point] + "." + digits[point:]
    return "-" + out if negative else out


def canonical_text(v: Any) -> str:
    """The canonical text of an already checked payload (docs/clients.md, payloadCanonical)."""
    return _write(v, ",", ":", es_number)


def jsonb_text(v: Any) -> str:
    """PostgreSQL's jsonb text of an already checked payload (docs/clients.md, payloadJsonbText):
    the canonical text with ``", "`` and ``": "`` as separators and numbers without exponents. Keyed
    requests send it: the text PostgreSQL writes for what it stores, and digests for the fingerprint."""
    return _write(v, ", ", ": ", lambda x: plain_number(es_number(x)))


def _write(v: Any, comma: str, colon: str, number: Any) -> str:
    parts: list[str] = []
    stack: list[Any] = [v]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is _Raw:
            parts.append(x.text)
            continue
        if t not in _EXACT:
            x = _base_value(x)
            t = type(x)
        if x is None:
            parts.append("null")
        elif x is True:
            parts.append("true")
        elif x is False:
            parts.append("false")
        elif t is int or t is float:
            parts.append(number(x))
        elif t is str:
            parts.append(js_string(x))
        elif t is dict:
            x = _plain_dict(x)
            # jsonb's key order: shorter UTF-8 first, then bytewise (for ASCII keys, the characters' order).
            if all(k.isascii() for k in x):
                keys = sorted(x, key=_ascii_key_order)
            else:
                keys = sorted(x, key=_utf8_key_order)
            seq: list[Any] = [_Raw("{")]
            for i, k in enumerate(keys):
                seq.append(_Raw((comma if i else "") + js_string(k) + colon))
                seq.append(x[k])
            seq.append(_Raw("}"))
            stack.extend(reversed(seq))
        else:  # list or tuple
            seq = [_Raw("[")]
            for i, item in enumerate(x):
                if i:
                    seq.append(_Raw(comma))
                seq.append(item)
            seq.append(_Raw("]"))
            stack.extend(reversed(seq))
    return "".join(parts)


def _ascii_key_order(k: str) -> tuple[int, str]:
    return (len(k), k)


def _utf8_key_order(k: str) -> tuple[int, bytes]:
    b = k.encode("utf-8")
    return (len(b), b)


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def encode_payload(payload: Any, max_bytes: int, option: str = "payload", jsonb: bool = False) -> tuple[str, int]:
    """Checks a payload and returns (its text, bytes PostgreSQL stores for it): the canonical text,
    or with ``jsonb`` PostgreSQL's own jsonb text (what a keyed request sends).

    Plain JSON only: dict (str keys), list or tuple, str (no NUL, no lone surrogates), int (past 2^53 only
    one that is a double, see ``double_of``), finite float, bool, None, and subclasses of these read as
    their base values (see the top of this module); nested at most 100 levels; at most ``max_bytes`` as
    jsonb text.
    """

    def fail(rule: str, path: str) -> None:
        raise EnqueueValidationError([ValidationIssue(option, f"{rule} (at {path})", path)])

    containers: list[Any] = []  # the open containers, as plain values
    origins: list[Any] = []  # the objects they were read from (a cycle repeats one of them)
    key_lists: list[list[str] | None] = []
    next_index: list[int] = []
    units = 0
    extra = 0
    value: Any = payload

    def path_to(depth: int | None = None) -> str:
        d = len(containers) if depth is None else depth
        steps: list[str | int] = []
        for j in range(d):
            keys = key_lists[j]
            at = next_index[j] - 1
            steps.append(keys[at] if keys is not None else at)
        return json_path(steps)

    while True:
        origin = value
        t = type(value)
        if t not in _EXACT:
            value = _base_value(value)
            t = type(value)
        if t is str:
            u = _units(value)
            if u < 0:
                fail("has a string that PostgreSQL jsonb cannot store (NUL character or lone surrogate)", path_to())
            units += u
        elif value is None:
            units += 4
        elif t is bool:
            units += 4 if value else 5
        elif t is int and -_TWO_53 <= value <= _TWO_53:
            units += 1
        elif t is int or t is float:
            if t is int:  # past 2^53: the double it spells, or refused
                d = double_of(value)
                if isinstance(d, str):
                    fail(d, path_to())
                value = d
            if not math.isfinite(value):
                found = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
                fail(f"must contain only finite numbers (found {found})", path_to())
            units += 1
            if value != 0 and (abs(value) >= 1e21 or abs(value) < 1e-6):
                extra += _numeric_expansion(value, es_number(value))
        elif t is dict or t is list or t is tuple:
            keys: list[str] | None = None
            if t is dict:
                plain_keys = True
                for k in value:
                    if type(k) is not str:
                        if not isinstance(k, str):
                            fail(f"must be plain JSON: an object has a key that is not a string (found {_type_name(k)})", path_to())
                        plain_keys = False
                if not plain_keys:
                    value = _plain_dict(value)
                keys = _js_key_order(value)
                count = len(keys)
                extra += count
            else:
                count = len(value)
            if len(containers) >= MAX_DEPTH:
                for i in range(1, len(origins)):
                    if any(origins[j] is origins[i] for j in range(i)):
                        fail("must be JSON-serialisable: it has a cycle (an object that contains itself)", path_to(i))
                if any(c is origin for c in origins):
                    fail("must be JSON-serialisable: it has a cycle (an object that contains itself)", path_to())
                fail(f"must be nested at most {MAX_DEPTH} levels deep (objects and arrays)", path_to())
            units += count + 1 if count > 0 else 2
            extra += count - 1 if count > 1 else 0
            containers.append(value)
            origins.append(origin)
            key_lists.append(keys)
            next_index.append(0)
        else:
            fail(f"must be JSON-serialisable: found a {_type_name(value)}", path_to())
        if units + extra > max_bytes:
            raise EnqueueValidationError(
                [ValidationIssue(option, f"must be at most {max_bytes} bytes as PostgreSQL stores it (jsonb text; this one is larger)")]
            )
        found_next = False
        while containers:
            top = len(containers) - 1
            container = containers[top]
            keys = key_lists[top]
            i = next_index[top]
            if keys is None:
                if i < len(container):
                    next_index[top] = i + 1
                    value = container[i]
                    found_next = True
                    break
            elif i < len(keys):
                next_index[top] = i + 1
                key = keys[i]
                ku = _units(key)
                if ku < 0:
                    fail("has a key that PostgreSQL cannot store (NUL or lone surrogate)", path_to())
                units += ku + 1
                value = container[key]
                found_next = True
                break
            containers.pop()
            origins.pop()
            key_lists.pop()
            next_index.pop()
        if not found_next:
            break
    text = jsonb_text(payload) if jsonb else canonical_text(payload)
    size = len(text.encode("utf-8")) + (0 if jsonb else extra)
    if size > max_bytes:
        raise EnqueueValidationError(
            [ValidationIssue(option, f"must be at most {max_bytes} bytes as PostgreSQL stores it (jsonb text; got {size})")]
        )
    return text, size

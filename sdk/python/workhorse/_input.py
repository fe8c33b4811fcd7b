"""An enqueue request checked against the input rules and put in the canonical form PostgreSQL sees.

Mirrors lib/enqueue/enqueue-input.ts rule for rule, with the same option paths and rule texts
(sdk/conformance/enqueue.json holds the cases). Options come as ``EnqueueOptions`` or as a mapping
of the TypeScript option names (camelCase).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime, timezone
import json
import math
import re
from typing import Any

from ._keys import key_digest, key_hash, key_length, key_preview, legacy_key_hash
from ._payload import encode_payload
from .errors import EnqueueValidationError, ValidationIssue
from .types import UNSET

KEY_BYTES = 512
SCOPE_BYTES = 256
MAX_WINDOW_MS = 31_536_000_000
DEFAULT_TTL_MS = 86_400_000
NAME_CHARS = 128
MAX_TAGS = 32
TAG_CHARS = 128
MAX_ATTEMPTS = 1000
DEFAULT_MAX_ATTEMPTS = 25
DEFAULT_PAYLOAD_BYTES = 1024 * 1024
MAX_BATCH = 1000
MAX_BATCH_PAYLOAD_BYTES = 64 * 1024 * 1024
CONCURRENCY_KEY_CHARS = 256
SOURCE_CHARS = 128
DEFAULT_QUEUE = "default"
DEFAULT_SCOPE = "default"
KEY_MODES = ("idempotency", "debounce", "throttle")
# Key lifetimes (docs/enqueue.md, "Key lifetimes"), sent as p_hold_until.
KEY_LIFETIMES = ("finished", "started")
STORABLE_TEXT_RULE = "must be well-formed Unicode without NUL characters"
_MISSING = object()


# Regular expressions scan in C; a per-character loop in Python was most of an enqueue's client time.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # Unicode category Cc, exactly


def _well_formed(s: str) -> bool:
    return _SURROGATE.search(s) is None


def _has_control(s: str) -> bool:
    return _CONTROL.search(s) is not None


def _storable(s: str) -> bool:
    return _well_formed(s) and "\x00" not in s


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def iso(d: datetime) -> str:
    """A UTC instant as JavaScript's toISOString writes it (milliseconds, 'Z')."""
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}.{d.microsecond // 1000:03d}Z"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _as_mapping(value: Any) -> Any:
    """A dataclass as the mapping of its given fields (camelCase names), recursively; anything else as
    is. A field is left out when it holds UNSET, or None where None is its declared default (the
    fields of a RetryPolicy that its type does not use); an option given as None stays, to be refused."""
    if is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in fields(value):
            v = getattr(value, f.name)
            if v is UNSET or (v is None and f.default is None):
                continue
            out[_camel(f.name)] = _as_mapping(v)
        return out
    if isinstance(value, Mapping):
        return {k: _as_mapping(v) for k, v in value.items() if v is not UNSET}
    return value


class _Issues:
    def __init__(self) -> None:
        self.list: list[ValidationIssue] = []

    def add(self, option: str, rule: str) -> None:
        self.list.append(ValidationIssue(option, rule))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (isinstance(v, int) or math.isfinite(v))


def _integer(v: Any, at: str, out: _Issues, *, type_rule: str, int_rule: str, lo: int, lo_rule: str, hi: int, hi_rule: str) -> int | None:
    if not _is_number(v):
        out.add(at, type_rule)
        return None
    if isinstance(v, float) and not v.is_integer():
        out.add(at, int_rule)
        return None
    n = int(v)
    if n < lo:
        out.add(at, lo_rule)
        return None
    if n > hi:
        out.add(at, hi_rule)
        return None
    return n


def _window(v: Any, at: str, out: _Issues) -> int | None:
    t = f"must be an integer number of milliseconds, 1..{MAX_WINDOW_MS}"
    return _integer(v, at, out, type_rule=t, int_rule=t, lo=1, lo_rule="must be at least 1 ms", hi=MAX_WINDOW_MS,
                    hi_rule=f"must be at most {MAX_WINDOW_MS} ms (365 days)")  # fmt: skip


def _delay(v: Any, at: str, out: _Issues) -> int | None:
    return _integer(v, at, out, type_rule=f"must be an integer number of milliseconds, 0..{MAX_WINDOW_MS}",
                    int_rule="must be an integer number of milliseconds", lo=0, lo_rule="must be at least 0 ms",
                    hi=MAX_WINDOW_MS, hi_rule=f"must be at most {MAX_WINDOW_MS} ms (365 days)")  # fmt: skip


def _name(v: Any, at: str, out: _Issues) -> str | None:
    if not isinstance(v, str):
        out.add(at, f"must be a string of 1..{NAME_CHARS} characters")
        return None
    ok = True
    if not 1 <= len(v) <= NAME_CHARS:
        out.add(at, f"must be 1..{NAME_CHARS} characters")
        ok = False
    if _has_control(v):
        out.add(at, "must not contain control characters")
        ok = False
    if not _well_formed(v):
        out.add(at, "must be well-formed Unicode (no lone surrogates)")
        ok = False
    return v if ok else None


def _key(v: Any, at: str, out: _Issues) -> str | None:
    if not isinstance(v, str):
        out.add(at, f"must be a string of 1..{KEY_BYTES} UTF-8 bytes")
        return None
    ok = True
    if not (len(v) > 0 and _utf8_len(v) <= KEY_BYTES):
        out.add(at, f"must be 1..{KEY_BYTES} UTF-8 bytes")
        ok = False
    if not _well_formed(v):
        out.add(at, "must be well-formed Unicode (no lone surrogates)")
        ok = False
    return v if ok else None


def _scope(v: Any, at: str, out: _Issues) -> str | None:
    if not isinstance(v, str):
        out.add(at, f"must be a string of 1..{SCOPE_BYTES} UTF-8 bytes")
        return None
    ok = True
    if not (len(v) > 0 and _utf8_len(v) <= SCOPE_BYTES):
        out.add(at, f"must be 1..{SCOPE_BYTES} UTF-8 bytes")
        ok = False
    if not _storable(v):
        out.add(at, STORABLE_TEXT_RULE)
        ok = False
    return v if ok else None


def _bounded_text(v: Any, at: str, out: _Issues, chars: int, last_rule: str, last_ok: Any) -> str | None:
    if not isinstance(v, str):
        out.add(at, f"must be a string of 1..{chars} characters")
        return None
    ok = True
    if not 1 <= len(v) <= chars:
        out.add(at, f"must be 1..{chars} characters")
        ok = False
    if not last_ok(v):
        out.add(at, last_rule)
        ok = False
    return v if ok else None


def _date(v: Any, at: str, out: _Issues) -> datetime | None:
    if not isinstance(v, datetime):
        out.add(at, "must be a Date")
        return None
    if v.tzinfo is None or v.utcoffset() is None:
        out.add(at, "must be a timezone-aware datetime (a naive one has no instant)")
        return None
    try:
        u = v.astimezone(timezone.utc)
    except OverflowError:
        out.add(at, "must be between the years 1 and 9999 (UTC)")
        return None
    return u.replace(microsecond=u.microsecond // 1000 * 1000)


def _strict(obj: Mapping[str, Any], known: tuple[str, ...], at: str, out: _Issues) -> None:
    extra = [k for k in obj if k not in known]
    if extra:
        # One issue naming the unknown names, as the TypeScript core reports them.
        out.add(".".join([at, *map(str, extra)]), "is not a known option")


@dataclass
class Keyed:
    mode: str
    scope: str
    key_hash: bytes
    key_digest: str
    key_preview: str
    key_length: int
    legacy_key_hash: bytes | None
    ttl_ms: int | None
    schedule: str | None
    max_wait_ms: int | None
    hold_until: str | None = None


@dataclass
class Normalized:
    type: str
    queue: str
    payload_text: str
    payload_bytes: int
    run_at: datetime | None
    max_attempts: int
    retry_policy: dict[str, int] | None
    deadline: datetime | None
    execution_timeout_ms: int | None
    concurrency_key: str | None
    tags: list[str]
    source: str | None
    keyed: Keyed | None


@dataclass
class RequestConfig:
    max_payload_bytes: int
    source: str | None
    secret: bytes
    legacy_window_open: bool = False


def _read_options(options: Any, opt_base: str) -> Mapping[str, Any]:
    if options is None:
        return {}
    options = _as_mapping(options)
    if not isinstance(options, Mapping):
        raise EnqueueValidationError([ValidationIssue(opt_base, "must be a plain object of options")])
    for nested in (*KEY_MODES, "retryPolicy"):
        v = options.get(nested, _MISSING)
        if v is not _MISSING and not isinstance(v, Mapping):
            raise EnqueueValidationError([ValidationIssue(f"{opt_base}.{nested}", "must be a plain object")])
    return options


def _check_across_options(o: Mapping[str, Any], ob: str, out: _Issues, given: list[str], modes: dict[str, Any],
                          run_at: datetime | None, deadline: datetime | None, rp_raw: Any) -> None:  # fmt: skip
    """The rules that relate options (the TypeScript core's order), for options valid on their own."""

    def present(k: str) -> bool:
        return k in o

    if len(given) > 1:
        out.add(f"{ob}.{given[1]}", f"cannot be combined with {given[0]}: use one keyed mode per request")
    if deadline is not None:
        if deadline <= (run_at or datetime.now(timezone.utc)):
            out.add(f"{ob}.deadline", "must be after runAt" if run_at else "must be in the future (after runAt, which defaults to now)")
    if rp_raw is not None and rp_raw.get("type") == "exponential":
        first, most = rp_raw.get("initialDelayMs"), rp_raw.get("maxDelayMs")
        if isinstance(first, (int, float)) and isinstance(most, (int, float)) and _is_number(first) and _is_number(most) and most < first:
            out.add(f"{ob}.retryPolicy.maxDelayMs", "must be at least initialDelayMs")
    if present("throttle") and isinstance(o["throttle"], Mapping) and "holdUntil" in o["throttle"]:
        out.add(f"{ob}.throttle.holdUntil",
                "throttle keys are held for their window only: use idempotency or debounce for a key lifetime")
    if present("debounce") and present("runAt"):
        out.add(f"{ob}.runAt", "cannot be combined with debounce: a debounced job runs when its window closes (use windowMs)")
    if "debounce" in modes:
        raw_d = o["debounce"]
        w, mw = raw_d.get("windowMs"), raw_d.get("maxWaitMs")
        if _is_number(mw) and _is_number(w) and mw < w:
            shown = int(w) if isinstance(w, float) and w.is_integer() else w
            out.add(f"{ob}.debounce.maxWaitMs", f"must be at least windowMs ({shown})")


def normalize_request(type_: Any, payload: Any, options: Any, config: RequestConfig, base: str = "") -> Normalized:
    """Checks one request (every failing option is named) and returns its canonical form."""
    out = _Issues()
    type_at = f"{base}.type" if base else "type"
    t = _name(type_, type_at, out)
    type_issues = len(out.list)
    ob = f"{base}.options" if base else "options"
    o = _read_options(options, ob)
    # Given means present, even as None: None is refused by the option's rule, as TypeScript refuses null.
    def present(k: str) -> bool:
        return k in o

    queue = _name(o["queue"], f"{ob}.queue", out) if present("queue") else None
    run_at = _date(o["runAt"], f"{ob}.runAt", out) if present("runAt") else None
    max_attempts = None
    if present("maxAttempts"):
        r = f"must be an integer 1..{MAX_ATTEMPTS}"
        max_attempts = _integer(o["maxAttempts"], f"{ob}.maxAttempts", out, type_rule=r, int_rule=r, lo=1,
                                lo_rule="must be at least 1", hi=MAX_ATTEMPTS, hi_rule=f"must be at most {MAX_ATTEMPTS}")  # fmt: skip
    retry = None
    rp_raw: Mapping[str, Any] | None = o["retryPolicy"] if present("retryPolicy") else None
    if rp_raw is not None:
        at = f"{ob}.retryPolicy"
        kind = rp_raw.get("type")
        if kind == "fixed":
            d = _delay(rp_raw.get("delayMs"), f"{at}.delayMs", out)
            _strict(rp_raw, ("type", "delayMs"), at, out)
            if d is not None:
                retry = {"initialDelayMs": d, "multiplier": 1, "maxDelayMs": d}
        elif kind == "exponential":
            i = _delay(rp_raw.get("initialDelayMs"), f"{at}.initialDelayMs", out)
            mult = _integer(rp_raw.get("multiplier"), f"{at}.multiplier", out, type_rule="must be an integer 1..100",
                         int_rule="must be an integer 1..100", lo=1, lo_rule="must be at least 1", hi=100,
                         hi_rule="must be at most 100")  # fmt: skip
            x = _delay(rp_raw.get("maxDelayMs"), f"{at}.maxDelayMs", out)
            _strict(rp_raw, ("type", "initialDelayMs", "multiplier", "maxDelayMs"), at, out)
            if i is not None and mult is not None and x is not None:
                retry = {"initialDelayMs": i, "multiplier": mult, "maxDelayMs": x}
        else:
            out.add(f"{at}.type", 'must be {type:"fixed", delayMs} or {type:"exponential", initialDelayMs, multiplier, maxDelayMs}')
    deadline = _date(o["deadline"], f"{ob}.deadline", out) if present("deadline") else None
    timeout = _window(o["executionTimeoutMs"], f"{ob}.executionTimeoutMs", out) if present("executionTimeoutMs") else None
    ck = None
    if present("concurrencyKey"):
        ck = _bounded_text(o["concurrencyKey"], f"{ob}.concurrencyKey", out, CONCURRENCY_KEY_CHARS, STORABLE_TEXT_RULE, _storable)
    tags: list[str] = []
    if present("tags"):
        raw = o["tags"]
        if not isinstance(raw, (list, tuple)):
            out.add(f"{ob}.tags", "must be an array of strings")
        else:
            for j, tag in enumerate(raw):
                at = f"{ob}.tags[{j}]"
                if not isinstance(tag, str):
                    out.add(at, f"each tag must be a string of 1..{TAG_CHARS} characters")
                    continue
                if not 1 <= len(tag) <= TAG_CHARS:
                    out.add(at, f"each tag must be 1..{TAG_CHARS} characters")
                if not _storable(tag):
                    out.add(at, STORABLE_TEXT_RULE)
            if len(raw) > MAX_TAGS:
                out.add(f"{ob}.tags", f"at most {MAX_TAGS} tags")
            tags = [x for x in raw if isinstance(x, str)]
    modes: dict[str, dict[str, Any]] = {}
    for mode in KEY_MODES:
        if not present(mode):
            continue
        m = o[mode]
        at = f"{ob}.{mode}"
        got: dict[str, Any] = {"key": _key(m.get("key"), f"{at}.key", out)}
        got["scope"] = _scope(m["scope"], f"{at}.scope", out) if "scope" in m else DEFAULT_SCOPE
        if mode != "throttle" and "holdUntil" in m:
            if m["holdUntil"] not in KEY_LIFETIMES:
                out.add(f"{at}.holdUntil", 'must be "finished" or "started"')
            got["holdUntil"] = m["holdUntil"]
        if mode == "idempotency":
            default_ttl = None if "holdUntil" in m else DEFAULT_TTL_MS
            got["ttlMs"] = _window(m["ttlMs"], f"{at}.ttlMs", out) if "ttlMs" in m else default_ttl
            _strict(m, ("key", "scope", "ttlMs", "holdUntil"), at, out)
        else:
            got["ttlMs"] = _window(m.get("windowMs"), f"{at}.windowMs", out)
            if mode == "debounce":
                sched = m.get("schedule", "reset")
                if sched not in ("reset", "preserve"):
                    out.add(f"{at}.schedule", 'must be "reset" or "preserve"')
                got["schedule"] = sched
                got["maxWaitMs"] = _window(m["maxWaitMs"], f"{at}.maxWaitMs", out) if "maxWaitMs" in m else None
                _strict(m, ("key", "scope", "windowMs", "schedule", "maxWaitMs", "holdUntil"), at, out)
            else:
                _strict(m, ("key", "scope", "windowMs", "holdUntil"), at, out)
        modes[mode] = got
    source = None
    if present("source"):
        source = _bounded_text(o["source"], f"{ob}.source", out, SOURCE_CHARS,
                               "must be well-formed Unicode without control characters",
                               lambda s: _well_formed(s) and not _has_control(s))  # fmt: skip
    _strict(o, ("queue", "runAt", "maxAttempts", "retryPolicy", "deadline", "executionTimeoutMs", "concurrencyKey",
                "tags", *KEY_MODES, "source"), ob, out)  # fmt: skip
    # The rules across options, in the TypeScript core's order, checked once every option is valid
    # on its own (a maxWaitMs of 0 is "at least 1 ms", not also "at least windowMs").
    given = [m for m in KEY_MODES if present(m)]
    if len(out.list) == type_issues:
        _check_across_options(o, ob, out, given, modes, run_at, deadline, rp_raw)
    payload_text, payload_bytes = "", 0
    try:
        payload_text, payload_bytes = encode_payload(
            payload, config.max_payload_bytes, f"{base}.payload" if base else "payload", jsonb=len(given) == 1
        )
    except EnqueueValidationError as e:
        out.list.extend(e.issues)
    if out.list:
        raise EnqueueValidationError(out.list)

    assert t is not None
    tag_list = sorted(set(tags), key=lambda s: s.encode("utf-8"))
    n = Normalized(
        type=t,
        queue=queue or DEFAULT_QUEUE,
        payload_text=payload_text,
        payload_bytes=payload_bytes,
        run_at=run_at,
        max_attempts=max_attempts if max_attempts is not None else DEFAULT_MAX_ATTEMPTS,
        retry_policy=retry,
        deadline=deadline,
        execution_timeout_ms=timeout,
        concurrency_key=ck,
        tags=tag_list,
        source=source if source is not None else config.source,
        keyed=None,
    )
    if given:
        mode = given[0]
        k = modes[mode]
        # A keyed request sends PostgreSQL's own text of the payload (encode_payload wrote it).
        # PostgreSQL digests the values it receives for the request's fingerprint
        # (workhorse.request_field_digests); the client sends no digest of its own.
        h = key_hash(config.secret, k["scope"], k["key"])
        n.keyed = Keyed(
            mode=mode,
            scope=k["scope"],
            key_hash=h,
            key_digest=key_digest(h),
            key_preview=key_preview(k["key"]),
            key_length=key_length(k["key"]),
            legacy_key_hash=legacy_key_hash(k["scope"], k["key"]) if config.legacy_window_open else None,
            ttl_ms=k["ttlMs"],
            schedule=k.get("schedule") if mode == "debounce" else None,
            max_wait_ms=k.get("maxWaitMs") if mode == "debounce" else None,
            hold_until=k.get("holdUntil"),
        )
    return n


def retry_policy_json(p: dict[str, int] | None) -> str | None:
    if p is None:
        return None
    return json.dumps({"initialDelayMs": p["initialDelayMs"], "multiplier": p["multiplier"], "maxDelayMs": p["maxDelayMs"]}, separators=(",", ":"))


def one_values(n: Normalized, job_id: str, notify: bool, retry: bool) -> list[Any]:
    """workhorse.enqueue_one's parameters, in order, every one of them (the retry flag last).
    p_field_digests is null: PostgreSQL digests the values it receives."""
    k = n.keyed
    return [
        job_id, n.queue, n.type, n.payload_text, iso(n.run_at) if n.run_at else None, n.max_attempts,
        retry_policy_json(n.retry_policy), iso(n.deadline) if n.deadline else None, n.execution_timeout_ms,
        n.concurrency_key, n.tags, k.mode if k else None, k.scope if k else None, k.key_hash if k else None,
        k.key_preview if k else None, k.key_length if k else None, k.ttl_ms if k else None,
        None, notify, k.schedule if k else None, k.max_wait_ms if k else None, retry,
    ]  # fmt: skip

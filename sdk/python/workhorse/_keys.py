"""What a scoped key becomes before anything leaves the process: hash, digest, preview, length."""

from __future__ import annotations

from bisect import bisect_right
import hashlib
import hmac

from ._key_preview_table import HIDDEN_RANGES

SEPARATOR = b"\x1f"
SECRET_BYTES = 32


def key_hash(secret: bytes, scope: str, key: str) -> bytes:
    """HMAC-SHA256(secret, UTF-8(scope) 0x1F UTF-8(key))."""
    return hmac.new(secret, scope.encode("utf-8") + SEPARATOR + key.encode("utf-8"), hashlib.sha256).digest()


def legacy_key_hash(scope: str, key: str) -> bytes:
    """The pre-secret hash, SHA-256 of the same bytes: only to find bindings made before the upgrade."""
    return hashlib.sha256(scope.encode("utf-8") + SEPARATOR + key.encode("utf-8")).digest()


def key_digest(h: bytes) -> str:
    """First 12 hex characters of the key hash: what operators correlate on."""
    return h[:6].hex()


def key_length(key: str) -> int:
    """Length in Unicode code points."""
    return len(key)


_FIRSTS = [first for first, _ in HIDDEN_RANGES]


def _hidden(c: str) -> bool:
    """In the shared table (sdk/conformance/key-preview-hidden.json), whatever unicodedata's version."""
    i = bisect_right(_FIRSTS, ord(c)) - 1
    return i >= 0 and ord(c) <= HIDDEN_RANGES[i][1]


def key_preview(key: str) -> str:
    """The first min(8, n // 3) code points, then '…'.

    Control and format characters (General_Category Cc and Cf by the table every client shares,
    sdk/conformance/key-preview-hidden.json, not by unicodedata) are shown as U+FFFD.
    """
    shown = key[: min(8, len(key) // 3)]
    return "".join("\ufffd" if _hidden(c) else c for c in shown) + "…"


def parse_secret(value: str | bytes) -> bytes | None:
    """64 hex characters (surrounding whitespace ignored) or 32 bytes; None otherwise."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value) if len(value) == SECRET_BYTES else None
    text = value.strip()
    if len(text) == 64 and all(c in "0123456789abcdefABCDEF" for c in text):
        return bytes.fromhex(text)
    return None

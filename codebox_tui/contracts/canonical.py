"""Canonical JSON ("stableJson") and the sha256 helpers every digest is built from.

Keys sorted by UTF-16 code unit, no whitespace, JS scalar formatting, arrays cut at
2,000 items, objects at 300 keys, depth capped at 30 (see the spec, section 1.1).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

MAX_ARRAY_ITEMS = 2000
MAX_OBJECT_KEYS = 300
MAX_DEPTH = 30


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")  # a lone surrogate sorts by its code unit, as in JS


MAX_SAFE_INTEGER = 2**53
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _js_escape_surrogates(text: str) -> str:
    """JSON.stringify writes a lone surrogate as a lowercase ``\\udXXX`` escape (the parser joined paired ones)."""
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _js_number(value: float) -> str:
    """ECMAScript Number::toString: shortest round-trip digits (``repr``), placed by the JS rules
    (plain notation for exponents -7 < n <= 21, otherwise ``d.ddde+n``)."""
    if math.isnan(value) or math.isinf(value):
        return "null"  # JSON.stringify(NaN) === "null"
    if value == 0:
        return "0"  # also -0
    sign = "-" if value < 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    raw_digits = whole + frac
    digits = raw_digits.lstrip("0")
    n = len(whole) + int(exp_text or 0) - (len(raw_digits) - len(digits))  # value = 0.digits * 10**n
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        exponent = n - 1
        lead = digits if k == 1 else digits[0] + "." + digits[1:]
        body = lead + ("e+" if exponent >= 0 else "e-") + str(abs(exponent))
    return sign + body


def _plain(value: Any) -> bool:
    """True when json.dumps(sort_keys=True) gives exactly stableJson's output: no floats, no caps hit,
    only BMP keys (so Python's key order equals UTF-16 code-unit order), no cycles."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        if item is None or isinstance(item, bool | str):
            continue
        if isinstance(item, int):
            if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                continue
            return False
        if depth >= MAX_DEPTH or not isinstance(item, dict | list):
            return False
        if id(item) in seen:
            return False
        seen.add(id(item))
        if isinstance(item, dict):
            if len(item) > MAX_OBJECT_KEYS:
                return False
            for key, child in item.items():
                if not isinstance(key, str) or (not key.isascii() and any(ord(ch) > 0xFFFF for ch in key)):
                    return False
                if type(child) is not str:  # strings are always plain: not pushed (most leaves are)
                    stack.append((child, depth + 1))
        else:
            if len(item) > MAX_ARRAY_ITEMS:
                return False
            stack.extend((child, depth + 1) for child in item if type(child) is not str)
    return True


def stable_json(value: Any, _depth: int = 0, _seen: frozenset[int] = frozenset()) -> str:
    """Serialise ``value`` exactly like the reference's ``stableJson``."""
    if _depth == 0 and _plain(value):
        return _js_escape_surrogates(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    if _depth > MAX_DEPTH:
        return '"[max-depth]"'
    if value is None or isinstance(value, bool | str):
        return _js_escape_surrogates(json.dumps(value, ensure_ascii=False))
    if isinstance(value, int):  # JS numbers are doubles: past 2**53 they print rounded
        return str(value) if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else _js_number(float(value))
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, dict | list | tuple):
        if id(value) in _seen:
            return '"[circular]"'
        seen = _seen | {id(value)}
        if isinstance(value, dict):
            keys = sorted((str(k) for k in value), key=_utf16_key)[:MAX_OBJECT_KEYS]
            parts = [
                _js_escape_surrogates(json.dumps(k, ensure_ascii=False)) + ":" + stable_json(value[k], _depth + 1, seen)
                for k in keys
            ]
            return "{" + ",".join(parts) + "}"
        return "[" + ",".join(stable_json(v, _depth + 1, seen) for v in list(value)[:MAX_ARRAY_ITEMS]) + "]"
    raise TypeError(f"stable_json cannot serialise {type(value).__name__}")


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def domain_digest(domain: str, value: Any) -> str:
    """``sha256(domain + "\\n" + stableJson(value))`` — the reference's domain-separated digest."""
    return sha256_hex(domain + "\n" + stable_json(value))


PRETTY_LIMIT = 64 * 1024


def pretty_json(value: Any) -> str:
    """How Codebox writes JSON files: sorted keys and a trailing newline; 2-space indent unless the
    document is large (Python's indenting encoder is pure Python and ~10x slower than the compact one;
    byte layout never matters to verification)."""
    compact = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if len(compact) > PRETTY_LIMIT:
        return compact + "\n"
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

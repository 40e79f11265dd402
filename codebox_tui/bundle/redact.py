"""Redaction of configured secret values from everything Codebox writes (streams, logs, bundles).

One :class:`Redactor` per run knows every form a secret's bytes can take in an artifact and replaces
each with :data:`SECRET_MARK`. What is covered (see docs/security-secrets.md):

- the UTF-8 bytes, in text or binary files alike;
- JSON string escaping of any mix of characters: ``\\uXXXX`` (either hex case, surrogate pairs for
  characters outside the BMP), the short escapes (``\\"``, ``\\\\``, ``\\/`` …), at any nesting depth
  (``\\\\u0073`` inside a JSON string inside a JSON string);
- URL encoding (``%XX`` of each UTF-8 byte, either case, ``+`` for a space), mixed with plain characters;
- the value encoded as UTF-16 (LE/BE), UTF-32 (LE/BE) and Latin-1 where it differs from UTF-8;
- lowercase and uppercase hex of the UTF-8 bytes;
- base64 (standard and URL-safe alphabets) of the UTF-8 bytes at each of the three alignments it can
  take inside a longer base64 stream.

Secrets shorter than :data:`MIN_SECRET_LENGTH` characters are refused (:func:`check_secret_values`):
redacting them would destroy unrelated text, and not redacting them would leak them.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from codebox_tui.errors import BadInputError

SECRET_MARK = "[REDACTED:configured-secret-value]"
_MARK_BYTES = SECRET_MARK.encode("ascii")
MIN_SECRET_LENGTH = 8

_JSON_SHORT = {'"': '"', "\\": "\\\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}


def check_secret_values(secrets: Mapping[str, str]) -> None:
    """Refuse a secret too short to redact safely; the error names the secret, never its value."""
    for name, value in secrets.items():
        if len(value) < MIN_SECRET_LENGTH:
            raise BadInputError(
                f"secret {name} is shorter than {MIN_SECRET_LENGTH} characters: Codebox cannot redact a value "
                "that short without destroying unrelated output; use a longer secret or leave it out of the "
                "policy's secrets",
                code="secret-too-short",
                field=f"policy.secrets.{name}",
            )


def _hex_ci(data: bytes) -> bytes:
    """A regex matching the hex digits of ``data`` in either case."""
    out = b""
    for char in data.hex():
        out += re.escape(char.encode()) if char.isdigit() else b"[" + char.encode() + char.upper().encode() + b"]"
    return out


def _char_pattern(char: str) -> bytes:
    """Every way one character can appear: plain UTF-8, JSON-escaped (any depth), URL-encoded."""
    raw = char.encode("utf-8")
    options = [re.escape(raw)]
    code = ord(char)
    if code > 0xFFFF:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        units = [high.to_bytes(2, "big"), low.to_bytes(2, "big")]
    else:
        units = [code.to_bytes(2, "big")]
    options.append(b"".join(rb"\\+u" + _hex_ci(unit) for unit in units))
    if char in _JSON_SHORT:
        options.append(rb"\\+" + re.escape(_JSON_SHORT[char].encode()))
    options.append(b"".join(b"%" + _hex_ci(bytes([byte])) for byte in raw))
    if char == " ":
        options.append(rb"\+")
    return b"(?:" + b"|".join(options) + b")"


def _base64_cores(data: bytes) -> set[bytes]:
    """The base64 characters that depend only on ``data``, at each alignment inside a longer stream."""
    cores: set[bytes] = set()
    for shift, start in ((0, 0), (1, 2), (2, 3)):
        encoded = base64.b64encode(b"\0" * shift + data)
        end = (8 * (shift + len(data))) // 6
        for core in (encoded[start:end], encoded[start:end].translate(bytes.maketrans(b"+/", b"-_"))):
            if len(core) >= MIN_SECRET_LENGTH:
                cores.add(core)
    return cores


def _forms(value: str) -> list[bytes]:
    raw = value.encode("utf-8", "surrogatepass")
    forms = [b"".join(_char_pattern(c) for c in value)]
    literal: set[bytes] = {raw.hex().encode(), raw.hex().upper().encode()}
    for encoding in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "latin-1"):
        try:
            literal.add(value.encode(encoding))
        except UnicodeEncodeError:
            continue
    literal |= _base64_cores(raw)
    literal.discard(raw)
    forms += [re.escape(item) for item in sorted(literal, key=len, reverse=True)]
    return forms


class Redactor:
    """Replaces every configured secret value, in every form listed in the module doc, with the mark.

    Call it on text (``redact(text)``), or use :meth:`data` for bytes, :meth:`value` for parsed JSON
    values (keys and strings at any depth) and :meth:`contains` to test a path."""

    def __init__(self, values: Iterable[str]) -> None:
        patterns: list[bytes] = []
        self.values = sorted({v for v in values if v}, key=len, reverse=True)
        for value in self.values:
            patterns += _forms(value)
        self._pattern = re.compile(b"|".join(patterns)) if patterns else None

    @property
    def active(self) -> bool:
        return self._pattern is not None

    def data(self, data: bytes) -> bytes:
        if self._pattern is None or not data:
            return data
        return self._pattern.sub(_MARK_BYTES, data)

    def contains(self, text: str | bytes) -> bool:
        if self._pattern is None or not text:
            return False
        raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        return self._pattern.search(raw) is not None

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        raw = text.encode("utf-8", "surrogatepass")
        redacted = self._pattern.sub(_MARK_BYTES, raw)
        if redacted is raw or redacted == raw:
            return text
        return redacted.decode("utf-8", "surrogatepass") if _utf8_ok(redacted) else redacted.decode("utf-8", "replace")

    def value(self, value: Any) -> Any:
        """A parsed JSON value with every string (keys included) redacted, at any depth."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def json_text(self, value: Any, **dumps: Any) -> str:
        """Serialise a value with every string redacted first, then the text itself (both passes)."""
        return self(json.dumps(self.value(value), **dumps))

    def file(self, path: Path) -> bool:
        """Redact one file in place (never through a link); True when it was rewritten."""
        if self._pattern is None:
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as handle:
            data = handle.read()
        redacted = self.data(data)
        if redacted == data:
            return False
        temp = path.with_name(path.name + ".redacting")
        temp.write_bytes(redacted)
        os.replace(temp, path)
        return True


def _utf8_ok(data: bytes) -> bool:
    try:
        data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return False
    return True

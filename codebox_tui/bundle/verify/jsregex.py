"""JSON Schema ``pattern`` keywords are ECMAScript regular expressions: a translator to Python's ``re`` that
refuses what it cannot translate faithfully (a schema it cannot check fails closed)."""

from __future__ import annotations

import functools
import re

_JS_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_", "s": _JS_SPACE}
_ATOM_ESCAPES = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": "[A-Za-z0-9_]",
    "W": "[^A-Za-z0-9_]",
    "s": f"[{_JS_SPACE}]",
    "S": f"[^{_JS_SPACE}]",
}
_SYNTAX = set("^$\\.*+?()[]{}|/")
_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")
_HEX = re.compile(r"[0-9A-Fa-f]+")


class JsPatternError(ValueError):
    """A ``pattern`` that JavaScript (``u`` flag) rejects, or that cannot be evaluated here the same way."""


def _js_escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """Translate the escape at ``pattern[i] == "\\"``; returns (python text, next index)."""
    if i + 1 >= len(pattern):
        raise JsPatternError("a pattern cannot end with a backslash")
    c = pattern[i + 1]
    if in_class and c in _CLASS_ESCAPES:
        return _CLASS_ESCAPES[c], i + 2
    if in_class and c in "DWS":
        raise JsPatternError(f"\\{c} inside a character class is not supported here")
    if in_class and c == "b":
        return r"\x08", i + 2
    if in_class and c == "-":
        return r"\-", i + 2
    if not in_class and c in _ATOM_ESCAPES:
        return _ATOM_ESCAPES[c], i + 2
    if c in _SYNTAX or c in "fnrtv":
        return "\\" + c, i + 2
    if c == "0" and not (i + 2 < len(pattern) and pattern[i + 2].isdigit()):
        return r"\x00", i + 2
    if c.isdigit() and not in_class:
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        return "\\" + pattern[i + 1 : j], j
    if c == "c" and i + 2 < len(pattern) and pattern[i + 2].isascii() and pattern[i + 2].isalpha():
        return f"\\x{ord(pattern[i + 2]) % 32:02x}", i + 3
    if c == "x" and _HEX.fullmatch(pattern[i + 2 : i + 4] or "-") and len(pattern[i + 2 : i + 4]) == 2:
        return pattern[i : i + 4], i + 4
    if c == "u" and pattern[i + 2 : i + 3] == "{":
        close = pattern.find("}", i + 3)
        digits = pattern[i + 3 : close] if close > 0 else ""
        if not _HEX.fullmatch(digits or "-") or int(digits, 16) > 0x10FFFF:
            raise JsPatternError("invalid \\u{...} escape")
        return f"\\U{int(digits, 16):08x}", close + 1
    if c == "u" and _HEX.fullmatch(pattern[i + 2 : i + 6] or "-") and len(pattern[i + 2 : i + 6]) == 4:
        return pattern[i : i + 6], i + 6
    if c == "k" and not in_class and pattern[i + 2 : i + 3] == "<":
        close = pattern.find(">", i + 3)
        if close < 0:
            raise JsPatternError("invalid named back-reference")
        return f"(?P={pattern[i + 3 : close]})", close + 1
    if c in "pP":
        raise JsPatternError("Unicode property escapes (\\p{...}) cannot be evaluated here")
    raise JsPatternError(f"invalid escape \\{c} (JavaScript regular expressions, u flag)")


def js_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a JSON Schema ``pattern`` with JavaScript semantics (ECMA-262 with the ``u`` flag, as Ajv uses):
    ``\\d \\w \\b`` are ASCII, ``\\s`` is JS whitespace, ``.`` stops at any line terminator, ``$`` is the end of
    the input only, ``(?<name>...)`` is a named group, and what JS rejects (escapes, lone braces, quantified
    assertions, stacked quantifiers) is an error."""
    return _js_pattern_cached(pattern)


_WORD = "[A-Za-z0-9_]"
_BOUNDARY = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"


_NOTHING_TO_REPEAT = "nothing to repeat (JavaScript regular expressions, u flag)"
_LOOKAROUND_PREFIXES = ("(?<=", "(?<!", "(?=", "(?!")


class _Translation:
    """One pattern's translation, left to right. ``last`` is what the previous token was (none | atom |
    assertion | quantifier | lazy), which decides whether a quantifier may follow (JS forbids quantified
    assertions and stacked quantifiers); ``groups`` holds, per open group, whether it is a lookaround."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.out: list[str] = []
        self.groups: list[bool] = []
        self.last = "none"

    def emit(self, text: str, last: str) -> None:
        self.out.append(text)
        self.last = last

    def quantify(self, text: str) -> None:
        if self.last in ("none", "assertion"):
            raise JsPatternError(_NOTHING_TO_REPEAT)
        if self.last == "quantifier" and text == "?":
            self.emit(text, "lazy")
        elif self.last in ("quantifier", "lazy"):
            raise JsPatternError(_NOTHING_TO_REPEAT)
        else:
            self.emit(text, "quantifier")

    def escape(self, i: int) -> int:
        if self.pattern[i + 1 : i + 2] in ("b", "B"):
            self.emit(_BOUNDARY if self.pattern[i + 1] == "b" else _NOT_BOUNDARY, "assertion")
            return i + 2
        text, i = _js_escape(self.pattern, i, in_class=False)
        self.emit(text, "atom")
        return i

    def open_group(self, i: int) -> int:
        pattern = self.pattern
        if not pattern.startswith("(?", i):
            self.groups.append(False)
            self.emit("(", "none")
            return i + 1
        prefix = next((p for p in (*_LOOKAROUND_PREFIXES, "(?:") if pattern.startswith(p, i)), "")
        if prefix:
            self.groups.append(prefix != "(?:")
            self.emit(prefix, "none")
            return i + len(prefix)
        close = pattern.find(">", i + 3)
        name = pattern[i + 3 : close] if pattern.startswith("(?<", i) and close > 0 else ""
        if not name.isidentifier():
            raise JsPatternError("invalid group (JavaScript regular expressions, u flag)")
        self.groups.append(False)
        self.emit(f"(?P<{name}>", "none")
        return close + 1

    def close_group(self) -> None:
        if not self.groups:
            raise JsPatternError("unmatched ')'")
        self.emit(")", "assertion" if self.groups.pop() else "atom")

    def brace(self, i: int) -> int:
        match = _QUANTIFIER.match(self.pattern, i)
        if not match:
            raise JsPatternError("a lone '{' is not allowed (JavaScript regular expressions, u flag)")
        self.quantify(match.group())
        return match.end()

    def step(self, i: int) -> int:
        """Translate the token at ``i``; returns the index after it."""
        c = self.pattern[i]
        if c == "\\":
            return self.escape(i)
        if c == "[":
            i = _js_class(self.pattern, i, self.out)
            self.last = "atom"
            return i
        if c == "{":
            return self.brace(i)
        if c == "(":
            return self.open_group(i)
        if c in "}]":
            raise JsPatternError(f"a lone '{c}' is not allowed (JavaScript regular expressions, u flag)")
        if c in "*+?":
            self.quantify(c)
        elif c == ")":
            self.close_group()
        else:
            self.emit(*_SIMPLE_TOKENS.get(c, (c, "atom")))
        return i + 1

    def compile(self) -> re.Pattern[str]:
        i = 0
        while i < len(self.pattern):
            i = self.step(i)
        try:
            return re.compile("".join(self.out))
        except re.error as error:
            raise JsPatternError(f"cannot evaluate this regular expression here: {error}") from error


# tokens translated one to one: (Python text, what they count as for a following quantifier)
_SIMPLE_TOKENS = {
    "^": ("^", "assertion"),
    "$": (r"\Z", "assertion"),  # JS ``$`` (no m flag) is the end of the input only
    ".": ("[^\n\r\u2028\u2029]", "atom"),  # JS ``.`` stops at every line terminator
    "|": ("|", "none"),
}


@functools.lru_cache(maxsize=512)
def _js_pattern_cached(pattern: str) -> re.Pattern[str]:
    return _Translation(pattern).compile()


def _js_class(pattern: str, i: int, out: list[str]) -> int:
    """Translate the character class starting at ``pattern[i] == "["``; returns the index after its ``]``."""
    i += 1
    negated = pattern[i : i + 1] == "^"
    if negated:
        i += 1
    body: list[str] = []
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "\\":
            text, i = _js_escape(pattern, i, in_class=True)
            body.append(text)
        else:
            body.append("\\[" if pattern[i] == "[" else pattern[i])
            i += 1
    if i >= len(pattern):
        raise JsPatternError("unterminated character class")
    if not body:  # [] matches nothing, [^] any character
        out.append(r"[\s\S]" if negated else "(?!)")
    else:
        out.append("[" + ("^" if negated else "") + "".join(body) + "]")
    return i + 1

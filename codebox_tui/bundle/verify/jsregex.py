"""JSON Schema ``pattern`` keywords are ECMAScript regular expressions: a translator to Python's ``re`` that
refuses what it cannot translate faithfully (a schema it cannot check fails closed)."""

from __future__ import annotations

import functools
import re

_JS_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_", "s": _JS_SPACE}
_ATOM_ESCAPES = {
    "d": "[0-9]", "D": "[^0-9]", "w": "[A-Za-z0-9_]", "W": "[^A-Za-z0-9_]",
    "s": f"[{_JS_SPACE}]", "S": f"[^{_JS_SPACE}]",
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


@functools.lru_cache(maxsize=512)
def _js_pattern_cached(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    groups: list[bool] = []  # per open group: is it a lookaround assertion?
    last = "none"  # none | atom | assertion | quantifier | lazy

    def quantify(text: str) -> None:
        nonlocal last
        if last in ("none", "assertion"):
            raise JsPatternError("nothing to repeat (JavaScript regular expressions, u flag)")
        if last == "quantifier" and text == "?":
            last = "lazy"
        elif last in ("quantifier", "lazy"):
            raise JsPatternError("nothing to repeat (JavaScript regular expressions, u flag)")
        else:
            last = "quantifier"
        out.append(text)

    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if pattern[i + 1 : i + 2] in ("b", "B"):
                out.append(_BOUNDARY if pattern[i + 1] == "b" else _NOT_BOUNDARY)
                last, i = "assertion", i + 2
                continue
            text, i = _js_escape(pattern, i, in_class=False)
            out.append(text)
            last = "atom"
            continue
        if c == "[":
            i = _js_class(pattern, i, out)
            last = "atom"
            continue
        if c in "*+?":
            quantify(c)
        elif c == "{":
            match = _QUANTIFIER.match(pattern, i)
            if not match:
                raise JsPatternError("a lone '{' is not allowed (JavaScript regular expressions, u flag)")
            quantify(match.group())
            i = match.end()
            continue
        elif c in "}]":
            raise JsPatternError(f"a lone '{c}' is not allowed (JavaScript regular expressions, u flag)")
        elif c in "^$":
            out.append("^" if c == "^" else r"\Z")
            last = "assertion"
        elif c == ".":
            out.append("[^\n\r\u2028\u2029]")
            last = "atom"
        elif c == "(":
            if pattern.startswith("(?", i):
                prefix = next((p for p in ("(?<=", "(?<!", "(?=", "(?!", "(?:") if pattern.startswith(p, i)), "")
                if prefix:
                    groups.append(prefix != "(?:")
                    out.append(prefix)
                    i += len(prefix)
                    last = "none"
                    continue
                close = pattern.find(">", i + 3)
                name = pattern[i + 3 : close] if pattern.startswith("(?<", i) and close > 0 else ""
                if not name.isidentifier():
                    raise JsPatternError("invalid group (JavaScript regular expressions, u flag)")
                groups.append(False)
                out.append(f"(?P<{name}>")
                i = close + 1
                last = "none"
                continue
            else:
                groups.append(False)
                out.append("(")
            last = "none"
        elif c == ")":
            if not groups:
                raise JsPatternError("unmatched ')'")
            last = "assertion" if groups.pop() else "atom"
            out.append(")")
        elif c == "|":
            out.append("|")
            last = "none"
        else:
            out.append(c)
            last = "atom"
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as error:
        raise JsPatternError(f"cannot evaluate this regular expression here: {error}") from error


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

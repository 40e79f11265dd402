"""Make sandbox-written text safe to draw in a terminal (pure; no Textual, no Rich).

Everything Codebox shows from a sandbox (file contents and names in diffs, the file tree, events,
evidence paths, dialogs) may be hostile: an ESC sequence could move the cursor, clear or recolour the
screen, a carriage return could overwrite what was drawn, and Unicode bidi overrides can make code
read differently from what it is (docs/architecture.md, "Review"). This module is the one place that
decides what may reach the terminal:

- C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F) become ``\\xNN``;
- bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), the bidi marks (U+200E,
  U+200F, U+061C) and the line/paragraph separators (U+2028, U+2029) become ``\\uNNNN``;
- a tab becomes spaces up to the next tab stop (``tab_size``), counted in terminal cells from the start
  of the text (or ``\\x09`` where tabs make no sense, ``tab_size=None``);
- a newline is kept only where the caller draws several lines (``keep_newlines``).

One notation everywhere (Python's escape syntax), so an escape reads the same in every view; callers
that can style text get the escapes' positions (``Piece.escape``) to draw them distinctly.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

# What never reaches the terminal raw. Tabs and newlines are handled separately (expanded / kept).
_UNSAFE_BUT_NEWLINE_CLASS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE_CLASS = "\n" + _UNSAFE_BUT_NEWLINE_CLASS
_UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]")
_UNSAFE_OR_TAB = re.compile(f"[\t{_UNSAFE_CLASS}]")
# The same without the newline: for text printed line by line (a command's output, a JSON document).
_UNSAFE_IN_LINES = re.compile(f"[{_UNSAFE_BUT_NEWLINE_CLASS}]")
DEFAULT_TAB_SIZE = 4


class Piece(NamedTuple):
    """A run of display text; ``escape`` marks a visible escape standing for one unsafe character."""

    text: str
    escape: bool


def escape_char(char: str) -> str:
    """The visible escape for one unsafe character: ``\\x1b``, ``\\x7f``, ``\\u202e``."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def is_safe(text: str, *, keep_newlines: bool = False) -> bool:
    """True when ``text`` has nothing to escape or expand (tabs count as needing expansion)."""
    if keep_newlines:
        text = text.replace("\n", "")
    return _UNSAFE_OR_TAB.search(text) is None


def _cell_width(text: str) -> int:
    """Terminal cells ``text`` takes (wide East Asian characters 2, combining marks 0)."""
    if text.isascii():
        return len(text)
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def pieces(
    text: str, *, tab_size: int | None = DEFAULT_TAB_SIZE, keep_newlines: bool = False, column: int = 0
) -> list[Piece]:
    """``text`` as display pieces: plain runs and visible escapes (see the module doc).

    ``column`` is the cell where ``text`` starts (tab stops are counted from column 0)."""
    pattern = _UNSAFE_OR_TAB
    if keep_newlines:
        out: list[Piece] = []
        lines = text.split("\n")
        for number, line in enumerate(lines):
            out.extend(pieces(line, tab_size=tab_size, column=0 if number else column))
            if number < len(lines) - 1:
                out.append(Piece("\n", False))
        return _merge(out)
    if pattern.search(text) is None:
        return [Piece(text, False)] if text else []
    if tab_size is not None and _UNSAFE.search(text) is None and text.isascii() and column == 0:
        return [Piece(text.expandtabs(tab_size), False)]  # the common case: tab-indented code
    out = []
    pos = 0
    col = column
    for match in pattern.finditer(text):
        if match.start() > pos:
            run = text[pos : match.start()]
            out.append(Piece(run, False))
            col += _cell_width(run)
        char = match.group()
        if char == "\t" and tab_size is not None:
            size = max(1, tab_size)
            spaces = size - (col % size)
            out.append(Piece(" " * spaces, False))
            col += spaces
        else:
            escaped = escape_char(char)
            out.append(Piece(escaped, True))
            col += len(escaped)
        pos = match.end()
    if pos < len(text):
        out.append(Piece(text[pos:], False))
    return _merge(out)


def _merge(items: list[Piece]) -> list[Piece]:
    merged: list[Piece] = []
    for item in items:
        if merged and merged[-1].escape == item.escape and not item.escape:
            merged[-1] = Piece(merged[-1].text + item.text, False)
        elif item.text:
            merged.append(item)
    return merged


def safe_text(text: object, *, tab_size: int | None = None, keep_newlines: bool = False) -> str:
    """``text`` (anything; ``str()`` is taken) with every unsafe character shown as an escape.

    The default is for names and one-line labels: tabs are escaped too (``\\x09``); pass ``tab_size``
    to expand them, ``keep_newlines`` for multi-line text (dialogs, JSON)."""
    value = text if isinstance(text, str) else str(text)
    if is_safe(value, keep_newlines=keep_newlines):
        return value
    return "".join(p.text for p in pieces(value, tab_size=tab_size, keep_newlines=keep_newlines))


def terminal_text(text: object) -> str:
    """``text`` as a command-line tool prints it: tabs and newlines kept as they are (a terminal draws them
    harmlessly and programs reading a pipe expect them), every other unsafe character as an escape."""
    return _UNSAFE_IN_LINES.sub(lambda m: escape_char(m.group()), text if isinstance(text, str) else str(text))


def json_text(document: str) -> str:
    """A JSON document with every unsafe character left inside its strings written as a ``\\uNNNN`` escape.

    ``json.dumps`` escapes C0 controls itself but leaves DEL, C1 controls and bidi characters raw (with
    ``ensure_ascii=False``); escaped here, the document parses to the same value and draws safely."""
    return _UNSAFE_IN_LINES.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def escape_spans(items: list[Piece]) -> list[tuple[int, int]]:
    """Character spans of the escapes in the joined text of ``items``."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for item in items:
        if item.escape:
            spans.append((pos, pos + len(item.text)))
        pos += len(item.text)
    return spans


def display_line(text: str, tab_size: int | None = DEFAULT_TAB_SIZE) -> tuple[str, list[tuple[int, int]]]:
    """One line for display: tabs expanded (escaped with ``tab_size=None``, for names), unsafe characters
    escaped; and the escapes' spans."""
    if _UNSAFE_OR_TAB.search(text) is None:
        return text, []
    items = pieces(text, tab_size=tab_size)
    return "".join(p.text for p in items), escape_spans(items)

"""Lexing and styling of diff text: pygments colours per line (token styles cached), lexed pieces packed
as untracked tuples, and overlays (changed words, escapes, search matches) cut into styled segments."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache

from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style

from widgets.diff_styles import NULL

HIGHLIGHT_MAX_CHARS = 400  # longer lines are drawn plain


# (get_lexer_for_filename costs ~0.6 s on first use).
_ALIASES = {
    "php": "php",
    "inc": "php",
    "js": "javascript",
    "mjs": "javascript",
    "ts": "typescript",
    "jsx": "jsx",
    "tsx": "tsx",
    "css": "css",
    "scss": "scss",
    "json": "json",
    "html": "html",
    "htm": "html",
    "xml": "xml",
    "md": "markdown",
    "py": "python",
    "sh": "bash",
    "yml": "yaml",
    "yaml": "yaml",
    "sql": "sql",
    "txt": "text",
    "twig": "twig",
}


@lru_cache(maxsize=64)
def lexer_for(path: str):  # type: ignore[no-untyped-def]
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    options = {"startinline": True} if _ALIASES.get(ext) == "php" else {}
    try:
        if ext in _ALIASES:
            return get_lexer_by_name(_ALIASES[ext], **options)
        return get_lexer_for_filename(path)
    except ClassNotFound:
        return None


@lru_cache(maxsize=256)
def token_style(token_type: object) -> Style:
    from pygments.styles import get_style_by_name  # noqa: PLC0415 - a heavy third-party module, loaded only when first drawn

    style = get_style_by_name("monokai")
    spec = style.style_for_token(token_type)
    return Style(
        color=f"#{spec['color']}" if spec["color"] else None, bold=bool(spec["bold"]), italic=bool(spec["italic"])
    )


def lex(path: str, text: str) -> list[tuple[str, Style]]:
    lexer = lexer_for(path) if len(text) <= HIGHLIGHT_MAX_CHARS else None
    if lexer is None:
        return [(text, NULL)]
    pieces: list[tuple[str, Style]] = []
    for token_type, value in lexer.get_tokens(text):
        value = value.replace("\n", "")
        if value:
            pieces.append((value, token_style(token_type)))
    return pieces


# Lexed pieces are kept per row as ``(text, style number)`` tuples: tuples of strings and ints are
# untracked by Python's cycle collector, so its full passes do not walk the ~200,000 pieces of a big file
# while the user scrolls (with ``(text, Style)`` pairs they were 100–460 ms pauses at random key presses).
_STYLES: list[Style] = [NULL]
_STYLE_NUMBERS: dict[Style, int] = {NULL: 0}

Packed = tuple[tuple[str, int], ...]


def pack(pieces: list[tuple[str, Style]]) -> Packed:
    out = []
    for text, style in pieces:
        number = _STYLE_NUMBERS.get(style)
        if number is None:  # a new style is appended before any piece names it
            number = len(_STYLES)
            _STYLES.append(style)
            _STYLE_NUMBERS[style] = number
        out.append((text, number))
    return tuple(out)


def unpack(packed: Packed) -> list[tuple[str, Style]]:
    styles = _STYLES
    return [(text, styles[number]) for text, number in packed]


def cells(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)


def restyle(segments: list[Segment], spans: Sequence[tuple[int, int]], mark: Style) -> list[Segment]:
    """``segments`` with the characters inside ``spans`` (offsets into their joined text) styled ``mark``."""
    out: list[Segment] = []
    pos = 0
    for seg in segments:
        seg_start, seg_end = pos, pos + len(seg.text)
        pos = seg_end
        inside_spans = [(s, e) for s, e in spans if s < seg_end and e > seg_start]
        if not inside_spans:
            out.append(seg)
            continue
        cuts = sorted({seg_start, seg_end, *(max(seg_start, min(seg_end, c)) for h in inside_spans for c in h)})
        for a, b in itertools.pairwise(cuts):
            if a < b:
                inside = any(s <= a and b <= e for s, e in inside_spans)
                out.append(
                    Segment(
                        seg.text[a - seg_start : b - seg_start], (seg.style or NULL) + mark if inside else seg.style
                    )
                )
    return out


def overlay(
    text: str, pieces: list[tuple[str, Style]], spans: Sequence[tuple[int, int]], base: Style, mark: Style
) -> list[Segment]:
    """Lexed ``pieces`` of ``text`` as segments on ``base``, with ``spans`` also styled ``mark``."""
    segments = [Segment(value, base + style) for value, style in pieces if value]
    return restyle(segments, spans, mark) if spans else segments

"""codebox_tui.textsafe: tab stops, visible escapes for control and bidi characters, one notation."""

from __future__ import annotations

import json
import re

import pytest

from codebox_tui.textsafe import Piece, display_line, escape_char, json_text, pieces, safe_text, terminal_text

RAW_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def test_tabs_expand_to_tab_stops_counted_in_cells() -> None:
    assert display_line("\t\t$a = 1;\t// c", 4) == ("        $a = 1; // c", [])
    assert display_line("\t\t$ab = 1;\t// c", 4) == ("        $ab = 1;    // c", [])
    assert display_line("ab\tc", 8)[0] == "ab      c"
    assert display_line("日本\tc", 4)[0] == "日本    c"  # two wide characters fill four cells
    assert display_line("\tx", 2)[0] == "  x"


def test_control_and_bidi_characters_become_escapes() -> None:
    text, spans = display_line("a\x1b[2J\rb\u202ec\x7f\x9b\u2066", 4)
    assert text == "a\\x1b[2J\\x0db\\u202ec\\x7f\\x9b\\u2066"
    assert [text[s:e] for s, e in spans] == ["\\x1b", "\\x0d", "\\u202e", "\\x7f", "\\x9b", "\\u2066"]
    assert not RAW_UNSAFE.search(text)


def test_escapes_move_later_tab_stops() -> None:
    # "\x1b" is drawn as four cells, so the tab after it goes to the next stop after those cells
    assert display_line("\x1b\tx", 4)[0] == "\\x1b    x"
    assert pieces("\x07\tx", tab_size=4) == [Piece("\\x07", True), Piece("    x", False)]


@pytest.mark.parametrize(
    "char", ["\x00", "\x1b", "\r", "\n", "\x7f", "\x85", "\u202a", "\u202e", "\u2066", "\u2069", "\u200f", "\u2028"]
)
def test_every_unsafe_character_is_escaped_in_names(char: str) -> None:
    shown = safe_text(f"name{char}.php")
    assert not RAW_UNSAFE.search(shown) and escape_char(char) in shown


def test_names_escape_tabs_and_multiline_text_keeps_newlines() -> None:
    assert safe_text("a\tb") == "a\\x09b"
    assert safe_text("one\n\ttwo\x1b", tab_size=4, keep_newlines=True) == "one\n    two\\x1b"
    assert safe_text(42) == "42"
    plain = "nothing to do here"
    assert safe_text(plain) is plain


def test_terminal_text_keeps_tabs_and_newlines_and_escapes_the_rest() -> None:
    shown = terminal_text("ok\tcol\r\n\x1b]0;title\x07\u202eline\x9b2J\n")
    assert shown == "ok\tcol\\x0d\n\\x1b]0;title\\x07\\u202eline\\x9b2J\n"
    assert not RAW_UNSAFE.search(shown.replace("\n", ""))
    plain = "a\tb\nc"
    assert terminal_text(plain) is plain


def test_json_text_is_the_same_document_with_unsafe_characters_escaped() -> None:
    value = {"out": "x\x1b[31m\u202e\x9b\x7f\ty\u2028", "list": ["\u2066", 1]}
    document = json_text(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(document) == value
    assert not RAW_UNSAFE.search(document.replace("\n", ""))
    assert "\\u202e" in document and "\\u009b" in document

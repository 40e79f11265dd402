"""The one cut applied to page-controlled evidence text (`browser/launch.py`, docs/browser.md "Evidence limits"):
a pure function, so plain strings stand in for what Playwright hands over."""

from __future__ import annotations

from codebox_tui.browser.launch import MAX_EVIDENCE_TEXT_BYTES, cap_text, capped_entry


def test_a_text_within_the_cap_is_kept_whole_and_unmarked() -> None:
    for text in ("", "short", "x" * MAX_EVIDENCE_TEXT_BYTES, "é" * (MAX_EVIDENCE_TEXT_BYTES // 2)):
        assert cap_text(text) == (text, None)
    assert capped_entry({"t": 1}, text="short") == {"t": 1, "text": "short"}


def test_a_longer_text_keeps_its_start_and_reports_its_length_in_characters() -> None:
    kept, original = cap_text("a" * (MAX_EVIDENCE_TEXT_BYTES + 1))
    assert kept == "a" * MAX_EVIDENCE_TEXT_BYTES and original == MAX_EVIDENCE_TEXT_BYTES + 1


def test_the_cut_is_in_utf8_bytes_and_never_splits_a_character() -> None:
    text = "€" * MAX_EVIDENCE_TEXT_BYTES  # 3 bytes each, fewer characters than the cap would allow in ASCII
    kept, original = cap_text(text)
    assert original == len(text)
    assert len(kept.encode("utf-8")) <= MAX_EVIDENCE_TEXT_BYTES and set(kept) == {"€"}
    assert len(kept) == MAX_EVIDENCE_TEXT_BYTES // 3


def test_an_entry_marks_every_cut_text_and_leaves_missing_ones_as_they_are() -> None:
    long = "m" * (MAX_EVIDENCE_TEXT_BYTES * 2)
    entry = capped_entry({"t": 0}, message=long, stack=None)
    assert entry["stack"] is None and entry["truncated"] is True
    assert entry["originalChars"] == {"message": len(long)}
    assert len(entry["message"]) == MAX_EVIDENCE_TEXT_BYTES

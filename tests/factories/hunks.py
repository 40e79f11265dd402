"""A captured bundle with one file edited in three places far apart (three hunks), for the hunk-selection
tests (docs/contracts.md, "Hunk selection")."""

from __future__ import annotations

from pathlib import Path

from tests.factories.apply_back import BASELINE, CHANGES, Captured, capture

BIG_BEFORE = b"".join(b"line %d\n" % n for n in range(1, 41))
EDITS = {3: b"line 3 changed\n", 20: b"line 20 changed\nline 20b added\n", 37: b""}  # 1-based line → new text


def big_after(chosen: set[int]) -> bytes:
    """``big.txt`` with only the edits at the chosen lines applied (the expected result, built by hand)."""
    lines = BIG_BEFORE.splitlines(keepends=True)
    return b"".join(EDITS[n] if n in chosen else line for n, line in enumerate(lines, start=1))


def captured(tmp_path: Path) -> Captured:
    """The apply-back factory's bundle plus ``big.txt`` (40 lines, three hunks)."""
    changes: dict[str, bytes | None] = {**CHANGES, "big.txt": big_after(set(EDITS))}
    saved = dict(BASELINE)
    BASELINE["big.txt"] = BIG_BEFORE  # the factory's baseline, restored below
    try:
        return capture(tmp_path, changes)
    finally:
        BASELINE.clear()
        BASELINE.update(saved)

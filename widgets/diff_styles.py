"""The diff view's colours and geometry: row and word styles, gutters, marks and the cells before the
code (one place for every module of the diff view: ``widgets/diff_*.py``)."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style

ROW_STYLES = {
    "add": Style(bgcolor="#12351f"),
    "del": Style(bgcolor="#3d1418"),
    "hunk": Style(color="#56b6c2", bgcolor="#1b2430"),
    "header": Style(color="#e5c07b", bold=True, bgcolor="#20232a"),
    "meta": Style(color="#7f848e"),
    "nonl": Style(color="#7f848e", italic=True),
    "binary": Style(color="#d19a66", italic=True),
    "ctx": Style(),
}
WORD_STYLES = {"add": Style(bgcolor="#1f6f3a", bold=True), "del": Style(bgcolor="#8a2a31", bold=True)}
GUTTER = Style(color="#5c6370")
EMPTY_SIDE = Style(bgcolor="#1a1c20")
MATCH = Style(color="black", bgcolor="#e5c07b")
MATCH_CURRENT = Style(color="black", bgcolor="#ff9e3b", bold=True, underline=True)
ESCAPE = Style(color="#ff5fd7", bgcolor="#3a1f3a", bold=True)  # a control character shown as an escape
LINE_CURSOR = Style(reverse=True)  # the line cursor / selected range, in the line-number gutter
HUNK_SKIPPED = Style(color="#e06c75", bold=True)  # a hunk left out of the approval (its @@ line)
HUNK_KEPT = Style(color="#98c379")
# Line marks (review comments): a marker after the sign, coloured by the comment type.
MARK_STYLES = {
    "issue": Style(color="#ff6b6b", bold=True),
    "suggestion": Style(color="#e5c07b", bold=True),
    "note": Style(color="#61afef", bold=True),
    "praise": Style(color="#98c379", bold=True),
}
MARK_CHAR = "●"
NOTE_STYLE = Style(bgcolor="#23262e")  # an inline comment line under the commented line
CODE_X = 14  # cells before the code on a unified line: two 6-cell line numbers and the sign
HALF_CODE_X = 8  # cells before the code in one side-by-side half: its line number and the sign
SIGNS = {"add": "+", "del": "-", "ctx": " "}
NULL = Style()
SEPARATOR = Segment("│", GUTTER)  # between the two sides of a side-by-side line
AUTO_SPLIT_WIDTH = 160

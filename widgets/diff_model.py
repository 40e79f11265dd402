"""Pure diff model: a patch split per file (``codebox_tui.bundle.patchparse``) and flattened into display
rows (no Textual here)."""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from codebox_tui.bundle.patchparse import parse_section, split_sections
from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.textsafe import DEFAULT_TAB_SIZE, display_line

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
MAX_LINE = 2000


@dataclass(slots=True)
class Row:
    """One display row. Slotted, with tuples for its spans: a 20,000-line file makes 20,000 rows, and each
    row is then one object for Python's cycle collector to walk, not four (no ``__dict__``, no lists;
    tuples of ints are untracked by the collector)."""

    kind: str  # header | meta | hunk | ctx | add | del | nonl | binary
    text: str
    old_no: int | None = None
    new_no: int | None = None
    hunk: int = -1
    spans: tuple[tuple[int, int], ...] = ()  # changed-word spans (word diff)
    pair: int = -1  # index of the paired -/+ row (word diff partner), -1 if none
    spans_done: bool = True  # False until ensure_word_spans() ran for a lazily built model
    escapes: tuple[tuple[int, int], ...] = ()  # visible escapes for control characters


@dataclass
class FileDiffModel:
    path: str
    rows: list[Row]
    hunk_rows: list[int]
    additions: int
    deletions: int
    binary: bool
    truncated: bool = False  # some lines were cut at max_line (DiffView offers "render anyway")
    # The continuous view (all files in one scroll): (path, first row, first hunk) of each file, in order;
    # empty for one file's model (its path, row 0, hunk 0).
    sections: tuple[tuple[str, int, int], ...] = ()

    # Where each file starts and its place in ``sections``, made on first use (a continuous view of 2,000 files
    # is asked for the file of a row on every frame and for every row the highlight worker lexes).
    _starts: list[int] | None = field(default=None, init=False, repr=False, compare=False)
    _numbers: dict[str, int] | None = field(default=None, init=False, repr=False, compare=False)

    def section_of(self, row: int) -> tuple[str, int, int]:
        """(path, first row, first hunk) of the file that model row ``row`` belongs to."""
        if not self.sections:
            return self.path, 0, 0
        starts = self._starts
        if starts is None:
            starts = self._starts = [start for _path, start, _hunk in self.sections]
        return self.sections[max(0, bisect.bisect_right(starts, row) - 1)]

    def section_number(self, path: str) -> int | None:
        """The 0-based place of file ``path`` among the model's files (0 for a one-file model's own path)."""
        if not self.sections:
            return 0 if path == self.path else None
        numbers = self._numbers
        if numbers is None:
            numbers = self._numbers = {}
            for number, (name, _start, _hunk) in enumerate(self.sections):
                numbers.setdefault(name, number)
        return numbers.get(path)

    def section_end(self, path: str) -> tuple[int, int, int, int] | None:
        """(first row, end row, first hunk, end hunk) of file ``path`` in this model; None if not in it."""
        number = self.section_number(path)
        if number is None:
            return None
        sections = self.sections or ((self.path, 0, 0),)
        _name, start, hunk = sections[number]
        if number + 1 < len(sections):
            _next, end, end_hunk = sections[number + 1]
        else:
            end, end_hunk = len(self.rows), len(self.hunk_rows)
        return start, end, hunk, end_hunk


def split_patch(patch: str) -> dict[str, str]:
    """Each file's section of ``patch`` (exact text), keyed by its path (the old one for deletions).

    Parsed by the one patch parser (``codebox_tui.bundle.patchparse``, on unidiff)."""
    return {section.path: section.text for section in split_sections(patch)}


def block_for(blocks: dict[str, str], entry: ChangedFile) -> str | None:
    """A changed-files entry's block: by mount-relative path, or by sandbox path (reference bundles
    written before 2026-07-14 name files that way in their patch headers)."""
    return blocks.get(entry.relativePath) or blocks.get(entry.path.lstrip("/"))


def _word_spans(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    old_spans, new_spans = [], []
    pos_a = [0]
    for token in a:
        pos_a.append(pos_a[-1] + len(token))
    pos_b = [0]
    for token in b:
        pos_b.append(pos_b[-1] + len(token))
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            old_spans.append((pos_a[i1], pos_a[i2]))
        if j2 > j1:
            new_spans.append((pos_b[j1], pos_b[j2]))
    return old_spans, new_spans


def _pair_spans(rows: list[Row], d: int, a: int) -> None:
    rows[d].spans_done = rows[a].spans_done = True
    if len(rows[d].text) > 500 or len(rows[a].text) > 500:
        return
    old_spans, new_spans = _word_spans(rows[d].text, rows[a].text)
    # Only mark words when the lines are similar; otherwise the whole line is the change.
    changed = sum(e - s for s, e in new_spans)
    if rows[a].text and changed < 0.7 * len(rows[a].text):
        rows[d].spans, rows[a].spans = tuple(old_spans), tuple(new_spans)


def _pair_words(rows: list[Row], dels: list[int], adds: list[int], eager: bool) -> None:
    for d, a in zip(dels, adds, strict=False):
        rows[d].pair, rows[a].pair = a, d
        if eager:
            _pair_spans(rows, d, a)
        else:
            rows[d].spans_done = rows[a].spans_done = False


def ensure_word_spans(model: FileDiffModel, index: int) -> Row:
    """The row at ``index`` with its changed-word spans computed (for lazily built models)."""
    row = model.rows[index]
    if not row.spans_done and row.pair >= 0:
        d, a = (index, row.pair) if row.kind == "del" else (row.pair, index)
        _pair_spans(model.rows, d, a)
    return row


def _cut(raw: str, max_line: int) -> str:
    return raw[:max_line] + (f" … (+{len(raw) - max_line} chars)" if len(raw) > max_line else "")


def build_model(
    path: str,
    block: str,
    *,
    max_line: int = MAX_LINE,
    eager_words: bool | None = None,
    tab_size: int = DEFAULT_TAB_SIZE,
) -> FileDiffModel:
    """Rows for one file's section of a patch; lines longer than ``max_line`` are cut with a marker.

    Row text is display text: tabs expanded to ``tab_size`` stops and control characters shown as
    escapes (``codebox_tui.textsafe``), so word spans, search and syntax colours all index the same
    characters that are drawn. Word spans are computed now for small blocks, and on demand
    (``ensure_word_spans``) for big ones (``eager_words=None`` decides by size), so a 20,000-line file
    opens without diffing every pair."""
    eager = eager_words if eager_words is not None else block.count("\n") < 2000
    section, hunks = parse_section(block)
    name, name_escapes = display_line(path, None)
    rows: list[Row] = [Row("header", name, escapes=tuple(name_escapes))]
    hunk_rows: list[int] = []
    truncated = False

    def text_row(kind: str, raw: str, old: int | None = None, new: int | None = None, hunk: int = -1) -> Row:
        nonlocal truncated
        if len(raw) > max_line:
            truncated = True
            raw = _cut(raw, max_line)
        text, escapes = display_line(raw, tab_size)
        return Row(kind, text, old, new, hunk, escapes=tuple(escapes)) if escapes else Row(kind, text, old, new, hunk)

    for meta in section.meta:
        if not meta.startswith(("index ", "diff --git")):
            rows.append(text_row("meta", meta))
    if section.error is not None:
        rows.append(Row("binary", f"This file's patch could not be parsed ({section.error}); shown as text:"))
        rows += [text_row("meta", raw) for raw in block.splitlines()[1:]]
        return FileDiffModel(path, rows, hunk_rows, 0, 0, False, truncated)
    if section.binary:
        rows.append(Row("binary", "Binary file — contents are not shown (carried as a git binary patch)"))
        return FileDiffModel(path, rows, hunk_rows, 0, 0, True, truncated)
    for number, hunk in enumerate(hunks):
        hunk_rows.append(len(rows))
        rows.append(text_row("hunk", hunk.header, hunk=number))
        dels: list[int] = []
        adds: list[int] = []
        for kind, raw, old_no, new_no in hunk.lines:
            if (kind == "ctx" and (dels or adds)) or (kind == "del" and adds):
                _pair_words(rows, dels, adds, eager)
                dels.clear()
                adds.clear()
            rows.append(text_row(kind, raw, old_no, new_no, number))
            if kind == "add":
                adds.append(len(rows) - 1)
            elif kind == "del":
                dels.append(len(rows) - 1)
        _pair_words(rows, dels, adds, eager)
    return FileDiffModel(path, rows, hunk_rows, section.additions, section.deletions, False, truncated)


COLLAPSED_NOTE = "viewed: collapsed (z shows it)"


def build_continuous_model(
    files: Sequence[tuple[str, str]],
    *,
    collapsed: Collection[str] = (),
    max_line: int = MAX_LINE,
    tab_size: int = DEFAULT_TAB_SIZE,
) -> FileDiffModel:
    """One model of every file's section in order (the continuous view): each file's rows as
    ``build_model`` makes them (its header row first), the files in ``collapsed`` as their header and one
    note only. Hunk rows and word-diff partners are renumbered for the whole; ``sections`` names the files."""
    eager = sum(block.count("\n") for path, block in files if path not in collapsed) < 2000
    rows: list[Row] = []
    hunk_rows: list[int] = []
    sections: list[tuple[str, int, int]] = []
    additions = deletions = 0
    truncated = False
    for path, block in files:
        start = len(rows)
        sections.append((path, start, len(hunk_rows)))
        if path in collapsed:
            name, name_escapes = display_line(path, None)
            rows += [Row("header", name, escapes=tuple(name_escapes)), Row("meta", COLLAPSED_NOTE)]
            continue
        model = build_model(path, block, max_line=max_line, eager_words=eager, tab_size=tab_size)
        for row in model.rows:
            if row.pair >= 0:
                row.pair += start
        rows += model.rows
        hunk_rows += [start + index for index in model.hunk_rows]
        additions += model.additions
        deletions += model.deletions
        truncated = truncated or model.truncated
    return FileDiffModel("", rows, hunk_rows, additions, deletions, False, truncated, tuple(sections))


def side_by_side(model: FileDiffModel) -> tuple[list[tuple[int, int]], list[int]]:
    """Rows for a side-by-side view: ``(left, right)`` model-row indexes (-1 = empty side; a non-code row
    is ``(i, i)`` and spans both sides), and each model row's index in that list."""
    rows = model.rows
    out: list[tuple[int, int]] = []
    position = [0] * len(rows)
    i = 0
    while i < len(rows):
        if rows[i].kind in ("del", "add"):
            dels: list[int] = []
            adds: list[int] = []
            while i < len(rows) and rows[i].kind == "del":
                dels.append(i)
                i += 1
            while i < len(rows) and rows[i].kind == "add":
                adds.append(i)
                i += 1
            for k in range(max(len(dels), len(adds))):
                left = dels[k] if k < len(dels) else -1
                right = adds[k] if k < len(adds) else -1
                for index in (left, right):
                    if index >= 0:
                        position[index] = len(out)
                out.append((left, right))
        else:
            position[i] = len(out)
            out.append((i, i))
            i += 1
    return out, position


def first_change(model: FileDiffModel, hunk_row: int) -> tuple[int, int]:
    """(row, code column) of the first changed word (or changed line) after the hunk header at ``hunk_row``;
    (-1, 0) when the hunk changes nothing."""
    rows = model.rows
    fallback = (-1, 0)
    for i in range(hunk_row + 1, len(rows)):
        row = rows[i]
        if row.kind == "hunk":
            break
        if row.kind in ("add", "del"):
            ensure_word_spans(model, i)
            if row.spans:
                return i, row.spans[0][0]
            indent = (i, len(row.text) - len(row.text.lstrip()))
            if row.pair < 0:  # a line only added or only deleted: the whole line is the change
                return indent
            # one side of a changed pair with no changed word (text only inserted on the other side)
            fallback = fallback if fallback[0] >= 0 else indent
    return fallback

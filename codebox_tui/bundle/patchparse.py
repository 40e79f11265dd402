"""The one patch parser for reading bundles (the Review screen's diff model, the reader's line counts),
built on ``unidiff`` (README: "Patch parsing"; docs/architecture.md, module map).

``split_sections`` cuts a patch into per-file sections with their exact text, path, counts and kind;
``parse_section`` turns one section into hunks of typed lines. A blank line between file sections (the
reference writes one, spec §4.3 as summarised in docs/architecture.md) is a separator, never a context
line. A section unidiff refuses (a hunk longer or shorter than its header) is reported with the error,
and the others still parse. Exact apply-back lives in ``store/patchtext.py`` (unidiff has none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from unidiff.constants import LINE_TYPE_EMPTY
from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchedFile, PatchSet

_KINDS = {"+": "add", "-": "del", " ": "ctx", "\\": "nonl"}
_BODY = re.compile(r"\n(?=@@ |GIT binary patch)")  # where a section's header ends
_OCTAL = re.compile(rb"\\([0-7]{3}|.)")
_SIMPLE = {
    b"n": b"\n",
    b"t": b"\t",
    b"r": b"\r",
    b"a": b"\a",
    b"b": b"\b",
    b"f": b"\f",
    b"v": b"\v",
    b"\\": b"\\",
    b'"': b'"',
}


class DiffLine(NamedTuple):  # a tuple: 20,000 of them are made for a big file
    kind: str  # ctx | add | del | nonl
    text: str  # without the newline
    old_no: int | None
    new_no: int | None


@dataclass(frozen=True)
class DiffHunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    header: str  # the ``@@ … @@ section`` line as written
    lines: list[DiffLine]


@dataclass
class FileSection:
    """One file's part of a patch. Line counts are parsed when first asked for (``split_sections`` only
    reads headers, so opening a 100k-line patch does not parse every hunk up front)."""

    path: str  # the new path (the old one for a deletion), ``a/``/``b/`` and git quoting removed
    old_path: str | None  # None: the file is added
    new_path: str | None  # None: the file is deleted
    text: str  # the section exactly as in the patch
    error: str | None = None  # why unidiff refused this section (its lines are then shown raw)
    meta: list[str] = field(default_factory=list)  # header lines after ``diff --git`` (modes, renames…)
    counts: tuple[int, int, bool] | None = field(default=None, repr=False)  # (additions, deletions, binary)

    def _counts(self) -> tuple[int, int, bool]:
        if self.counts is None:
            self.counts = (0, 0, False)
            if self.error is None:
                try:
                    parsed = PatchSet(self.text, metadata_only=True)
                except UnidiffParseError as error:
                    self.error = str(error)
                else:
                    if parsed:
                        self.counts = (parsed[0].added, parsed[0].removed, parsed[0].is_binary_file)
        return self.counts

    @property
    def additions(self) -> int:
        return self._counts()[0]

    @property
    def deletions(self) -> int:
        return self._counts()[1]

    @property
    def binary(self) -> bool:
        return self._counts()[2]

    @property
    def status(self) -> str:
        if self.old_path is None:
            return "added"
        if self.new_path is None:
            return "deleted"
        return "renamed" if self.old_path != self.new_path else "modified"


def unquote_path(raw: str) -> str | None:
    """A patch header path without git's C quoting and ``a/``/``b/`` prefix; ``/dev/null`` → None."""
    text = raw.strip()
    if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
        body = text[1:-1].encode("utf-8", "surrogateescape")
        text = _OCTAL.sub(
            lambda m: bytes([int(m.group(1), 8)]) if len(m.group(1)) == 3 else _SIMPLE.get(m.group(1), m.group(1)), body
        ).decode("utf-8", "replace")
    if text == "/dev/null":
        return None
    if text[:2] in ("a/", "b/"):
        text = text[2:]
    return text


def _section(patched: PatchedFile, text: str, counted: bool = True) -> FileSection:
    old = unquote_path(patched.source_file) if patched.source_file else None
    new = unquote_path(patched.target_file) if patched.target_file else None
    meta = [line.rstrip("\n") for line in (patched.patch_info or [])][1:]
    counts = (patched.added, patched.removed, patched.is_binary_file) if counted else None
    return FileSection(path=new or old or "", old_path=old, new_path=new, text=text, meta=meta, counts=counts)


def _line_starts(patch: str) -> list[int]:
    starts = [0]
    find = patch.find
    pos = find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts


def _first_line_of(patched: PatchedFile, patch: str, starts: list[int]) -> int:
    """0-based index of the line a file's section starts at (``diff --git``, or ``---`` before ``+++``)."""
    index = (patched.diff_line_no or 1) - 1
    if index >= 1 and patch.startswith("+++ ", starts[index]) and patch.startswith("--- ", starts[index - 1]):
        return index - 1
    return index


def split_sections(patch: str) -> list[FileSection]:
    """Every file section of ``patch``, in order.

    A git patch is cut at its ``diff --git`` lines (no hunk line can start that way) and unidiff reads
    each section's header only; other patches are read whole by unidiff (metadata only)."""
    bounds = [0] if patch.startswith("diff --git ") else []
    find = patch.find
    pos = find("\ndiff --git ")
    while pos >= 0:  # str.find: several times faster than a multi-line regex on a big patch
        bounds.append(pos + 1)
        pos = find("\ndiff --git ", pos + 1)
    if bounds:
        sections = []
        for i, begin in enumerate(bounds):
            text = patch[begin : bounds[i + 1] if i + 1 < len(bounds) else len(patch)]
            cut = _BODY.search(text)
            try:
                parsed = PatchSet(text[: cut.start() + 1] if cut else text, metadata_only=True)
            except UnidiffParseError as error:
                sections.append(_unparsed(text, str(error)))
                continue
            if parsed:
                sections.append(_section(parsed[0], text, counted=False))
        return sections
    try:
        patchset = PatchSet(patch, metadata_only=True)
    except UnidiffParseError as error:
        return [_unparsed(patch, str(error))] if patch.strip() else []
    if not patchset:
        return []
    starts = _line_starts(patch)
    begins = [starts[_first_line_of(patched, patch, starts)] for patched in patchset] + [len(patch)]
    return [_section(patched, patch[begins[i] : begins[i + 1]]) for i, patched in enumerate(patchset)]


def _unparsed(text: str, error: str) -> FileSection:
    first = text.split("\n", 1)[0][len("diff --git ") :]
    match = re.match(r'^("?a/.*"?) ("?b/.*"?)$', first)
    old, new = (unquote_path(match.group(1)), unquote_path(match.group(2))) if match else (None, first)
    return FileSection(path=new or old or first, old_path=old, new_path=new, text=text, error=error)


def parse_section(text: str) -> tuple[FileSection, list[DiffHunk]]:
    """One section in full: its description and its hunks (no hunks and ``error`` set when refused)."""
    try:
        patchset = PatchSet(text)
    except UnidiffParseError as error:
        return _unparsed(text, str(error)), []
    if not patchset:
        return _unparsed(text, "no file header"), []
    patched = patchset[0]
    hunks = []
    kinds = _KINDS
    for hunk in patched:
        lines: list[DiffLine] = []
        append = lines.append
        for line in hunk:
            line_type = line.line_type
            if line_type == LINE_TYPE_EMPTY:  # a separator after the hunk, not a context line
                continue
            value = line.value
            if value.endswith("\n"):
                value = value[:-1]
            kind = kinds[line_type]
            append(DiffLine(kind, value if kind != "nonl" else "\\" + value, line.source_line_no, line.target_line_no))
        header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"
        if hunk.section_header:
            header += f" {hunk.section_header}"
        hunks.append(
            DiffHunk(hunk.source_start, hunk.source_length, hunk.target_start, hunk.target_length, header, lines)
        )
    return _section(patched, text), hunks


def line_counts(patch: str) -> dict[str, tuple[int, int, bool]]:
    """(additions, deletions, binary) per file section, keyed by path (new path; old for deletions)."""
    return {s.path: (s.additions, s.deletions, s.binary) for s in split_sections(patch)}

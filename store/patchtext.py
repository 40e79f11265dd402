"""Apply-back over unified diffs: split ``patch.diff`` into per-file blocks, keep only the approved
files' blocks (the reference's patch approval filter, spec 3.3) and apply one block to a file's bytes
exactly (every context and removed line must match, or it is refused).

Parsing is the one patch parser, :mod:`codebox_tui.bundle.patchparse` (on ``unidiff``; README, "Patch
parsing"). The exact apply below is what unidiff does not provide. Patches are bytes: they are decoded
with ``surrogateescape`` so every byte, valid UTF-8 or not, survives the round trip unchanged.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from codebox_tui.bundle.patchparse import parse_section, split_sections

_CODEC = ("utf-8", "surrogateescape")


class PatchError(ValueError):
    """The patch text does not have the expected shape or does not fit the file."""


@dataclass(frozen=True)
class PatchBlock:
    """One file's block: its raw bytes and every path it names (normalised)."""

    text: bytes
    paths: frozenset[str]


def normalize_patch_path(raw: str) -> str | None:
    """Trim, cut at a tab (a timestamp follows), ``\\``→``/``, strip ``a/``/``b/`` and leading ``/``;
    ``/dev/null`` → None."""
    text = raw.strip().split("\t", 1)[0].strip().replace("\\", "/")
    if not text or text == "/dev/null":
        return None
    if text.startswith(("a/", "b/")):
        text = text[2:]
    text = text.lstrip("/")
    return text or None


def split_blocks(patch: bytes) -> list[PatchBlock]:
    """Every file section of ``patch`` with its exact bytes; text before the first header is ignored."""
    blocks: list[PatchBlock] = []
    for section in split_sections(patch.decode(*_CODEC)):
        names = (normalize_patch_path(name) for name in (section.old_path, section.new_path) if name)
        blocks.append(PatchBlock(text=section.text.encode(*_CODEC), paths=frozenset(n for n in names if n)))
    return blocks


def filter_patch(
    patch: bytes,
    approved: dict[str, set[str]],
    hunks: dict[str, frozenset[str]] | None = None,
    occurrences: dict[str, tuple[int, int]] | None = None,
) -> tuple[bytes, dict[str, PatchBlock]]:
    """Keep the blocks of the approved files, in order; unchanged, or cut to the chosen hunks.

    ``approved`` maps each approved file (its relativePath) to its candidate names (relativePath
    and sandbox path). Every approved file must be matched by exactly one block — except a file named
    in ``occurrences`` (``(position, count)``: a relativePath several mounts change,
    store/changed_names.py), which must be matched by exactly ``count`` blocks and owns the
    ``position``-th. ``hunks`` maps a partially approved file to the hashes of its approved hunks
    (:func:`select_hunks`). Returns the filtered patch and the (possibly cut) block of each approved file.
    """
    candidates = {
        key: {n for n in (normalize_patch_path(name) for name in names) if n} for key, names in approved.items()
    }
    nth = occurrences or {}
    seen: dict[str, int] = {}
    by_file: dict[str, PatchBlock] = {}
    kept: list[bytes] = []
    for block in split_blocks(patch):
        owners = []
        for key, names in candidates.items():
            if not block.paths & names:
                continue
            seen[key] = seen.get(key, 0) + 1
            if key not in nth or nth[key][0] == seen[key] - 1:
                owners.append(key)
        if not owners:
            continue
        for key in owners:
            if key in by_file:
                raise PatchError(f"the patch has more than one block for {key}")
            chosen = (hunks or {}).get(key)
            if chosen is not None:
                if len(owners) > 1:
                    raise PatchError(f"the patch block for {key} names more than one approved file")
                block = PatchBlock(text=select_hunks(block.text, chosen), paths=block.paths)
            by_file[key] = block
        kept.append(block.text)
    for key, (_, count) in nth.items():
        if seen.get(key, 0) != count:
            raise PatchError(f"the patch has {seen.get(key, 0)} block(s) for {key}, changed in {count} mounts")
    missing = sorted(set(approved) - set(by_file))
    if missing:
        raise PatchError(f"the patch has no block for approved file(s): {', '.join(missing)}")
    joined = b"".join(kept)
    if not joined.strip():
        raise PatchError("the filtered patch is empty")
    return joined, by_file


@dataclass
class _Hunk:
    old_start: int
    old_count: int
    old: list[bytes]
    new: list[bytes]
    new_start: int = 0
    new_count: int = 0


def _hunks(block: bytes) -> list[_Hunk]:
    """The block's hunks as the exact old and new lines (bytes, each with its newline unless the
    patch says ``\\ No newline at end of file``)."""
    section, parsed = parse_section(block.decode(*_CODEC))
    if section.error is not None:
        raise PatchError(f"the patch for {section.path} cannot be read: {section.error}")
    hunks: list[_Hunk] = []
    for parsed_hunk in parsed:
        hunk = _Hunk(parsed_hunk.old_start, parsed_hunk.old_count, [], [], parsed_hunk.new_start, parsed_hunk.new_count)
        sides: list[list[bytes]] = []
        for line in parsed_hunk.lines:
            if line.kind == "nonl":  # the previous line has no newline, on the side(s) it belongs to
                for side in sides:
                    if side and side[-1].endswith(b"\n"):
                        side[-1] = side[-1][:-1]
                continue
            data = (line.text + "\n").encode(*_CODEC)
            sides = [hunk.old, hunk.new] if line.kind == "ctx" else [hunk.old] if line.kind == "del" else [hunk.new]
            for side in sides:
                side.append(data)
        hunks.append(hunk)
    return hunks


def _lines(data: bytes) -> list[bytes]:
    """Split after each ``\\n`` only (a lone ``\\r`` is content, unlike ``bytes.splitlines``)."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def apply_block(before: bytes | None, block: bytes, *, reverse: bool = False) -> bytes:
    """Apply one file's block to ``before`` (None = the file does not exist); return the new bytes.

    With ``reverse`` the block is applied backwards: ``before`` is the block's new side and the result
    its old side (how a three-way apply recovers a baseline from the bundle's after copy, store/threeway.py).
    """
    source = _lines(before or b"")
    out: list[bytes] = []
    cursor = 0
    for hunk in _hunks(block):
        first, count, old, new = hunk.old_start, hunk.old_count, hunk.old, hunk.new
        if reverse:
            first, count, old, new = hunk.new_start, hunk.new_count, hunk.new, hunk.old
        start = first - 1 if count else first
        start = max(start, 0)
        if start < cursor:
            raise PatchError("hunks overlap or are out of order")
        if source[start : start + len(old)] != old:
            raise PatchError(f"the file does not match the patch at line {start + 1}")
        out.extend(source[cursor:start])
        out.extend(new)
        cursor = start + len(old)
    out.extend(source[cursor:])
    return b"".join(out)


# -- single hunks (docs/contracts.md, "Hunk selection") ------------------------------------------

_HUNK_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$", re.DOTALL)


@dataclass(frozen=True)
class RawHunk:
    """One hunk of a file's block exactly as in the patch: the ``@@`` line and its body lines."""

    text: bytes  # header line through the last body line (and any ``\\ No newline`` marker), newlines kept
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    tail: bytes  # the header line after ``+c,d @@`` (section text and its ``\n``), as written

    @property
    def sha256(self) -> str:
        """The hunk's hash as recorded in a decision: sha256 of :attr:`text`."""
        return hashlib.sha256(self.text).hexdigest()


def split_hunks(block: bytes) -> tuple[bytes, list[RawHunk]]:
    """A file block's header (everything before its first ``@@`` line) and its hunks, exactly.

    Each hunk is its header line plus as many body lines as the header's counts need (``' '`` counts on
    both sides, ``-`` on the old, ``+`` on the new, an empty line as context), then any ``\\`` marker lines.
    A block without hunks (a binary or mode-only change) has none. Raises :class:`PatchError` if a hunk is
    shorter than its header says.
    """
    lines = block.splitlines(keepends=True)
    index = 0
    while index < len(lines) and not lines[index].startswith(b"@@ "):
        index += 1
    header = b"".join(lines[:index])
    hunks: list[RawHunk] = []
    while index < len(lines):
        line = lines[index]
        match = _HUNK_HEADER.match(line)
        if match is None:
            if line.strip() == b"" and all(rest.strip() == b"" for rest in lines[index:]):
                break  # the blank separator after a file section
            raise PatchError(f"unexpected line {index + 1} in a hunk section: {line[:60]!r}")
        old_start, new_start = int(match.group(1)), int(match.group(3))
        old_count = int(match.group(2)) if match.group(2) is not None else 1
        new_count = int(match.group(4)) if match.group(4) is not None else 1
        begin = index
        index += 1
        old_seen = new_seen = 0
        while old_seen < old_count or new_seen < new_count:
            if index >= len(lines):
                raise PatchError(f"a hunk ({line.strip()[:60]!r}) is shorter than its header says")
            body = lines[index]
            first = body[:1]
            if first in (b" ", b"\n"):
                old_seen, new_seen = old_seen + 1, new_seen + 1
            elif first == b"-":
                old_seen += 1
            elif first == b"+":
                new_seen += 1
            elif first != b"\\":
                raise PatchError(f"a hunk ({line.strip()[:60]!r}) is shorter than its header says")
            index += 1
        while index < len(lines) and lines[index].startswith(b"\\"):
            index += 1
        hunks.append(RawHunk(b"".join(lines[begin:index]), old_start, old_count, new_start, new_count, match.group(5)))
    return header, hunks


def hunk_hashes(block: bytes) -> list[str]:
    """The sha256 of each hunk of a file's block, in patch order (hunk N is ``hunk_hashes(block)[N - 1]``)."""
    return [hunk.sha256 for hunk in split_hunks(block)[1]]


def select_hunks(block: bytes, chosen: set[str] | frozenset[str]) -> bytes:
    """The block with only the hunks whose hashes are in ``chosen`` (each must be one of the block's).

    Kept hunks are unchanged except the new-side start of their ``@@`` line: each skipped hunk before
    them no longer adds ``new_count - old_count`` lines, so later new starts move by that much. Counts
    stay the same (hunks are kept whole), so the result is a patch ``git apply`` accepts for exactly
    those hunks.
    """
    header, hunks = split_hunks(block)
    known = {hunk.sha256 for hunk in hunks}
    unknown = sorted(set(chosen) - known)
    if unknown:
        raise PatchError(f"hunk hash(es) not in the patch: {', '.join(h[:12] for h in unknown)}")
    if not chosen:
        raise PatchError("no hunk selected")
    shift = 0
    out = [header]
    for hunk in hunks:
        if hunk.sha256 not in chosen:
            shift += hunk.new_count - hunk.old_count
            continue
        if shift == 0:
            out.append(hunk.text)
            continue
        body = hunk.text.split(b"\n", 1)[1] if b"\n" in hunk.text else b""
        new_start = hunk.new_start - shift
        line = f"@@ -{hunk.old_start},{hunk.old_count} +{new_start},{hunk.new_count} @@".encode() + hunk.tail
        out.append(line + body)
    return b"".join(out)

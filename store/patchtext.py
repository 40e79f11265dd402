"""Pure helpers over unified diffs: split ``patch.diff`` into per-file blocks, keep only the
approved files' blocks (the reference's patch approval filter, spec 3.3) and apply one block to a
file's bytes exactly (every context and removed line must match, or it is refused).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_NEWLINE = b"\\ No newline at end of file"


class PatchError(ValueError):
    """The patch text does not have the expected shape or does not fit the file."""


@dataclass(frozen=True)
class PatchBlock:
    """One ``diff --git`` block: its raw bytes and every path it names (normalised)."""

    text: bytes
    paths: frozenset[str]


def normalize_patch_path(raw: str) -> str | None:
    """Trim, cut at whitespace, ``\\``→``/``, strip ``a/``/``b/`` and leading ``/``; ``/dev/null`` → None."""
    text = raw.strip()
    if not text:
        return None
    text = text.split()[0].replace("\\", "/")
    if text == "/dev/null":
        return None
    if text.startswith(("a/", "b/")):
        text = text[2:]
    text = text.lstrip("/")
    return text or None


def split_blocks(patch: bytes) -> list[PatchBlock]:
    """Split at lines starting with ``diff --git ``; text before the first header is ignored."""
    starts = [m.start() for m in re.finditer(rb"(?m)^diff --git ", patch)]
    blocks: list[PatchBlock] = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(patch)
        text = patch[start:end]
        blocks.append(PatchBlock(text=text, paths=frozenset(_block_paths(text))))
    return blocks


def _block_paths(block: bytes) -> set[str]:
    paths: set[str] = set()
    lines = block.split(b"\n")
    header = lines[0].decode("utf-8", "replace")[len("diff --git ") :]
    match = re.match(r"^a/(.*) b/(.*)$", header)
    if match:
        for raw in match.groups():
            norm = normalize_patch_path(raw)
            if norm:
                paths.add(norm)
    for line in lines[1:]:
        if line.startswith(b"@@"):
            break
        if line.startswith((b"--- ", b"+++ ")):
            norm = normalize_patch_path(line[4:].decode("utf-8", "replace"))
            if norm:
                paths.add(norm)
    return paths


def filter_patch(patch: bytes, approved: dict[str, set[str]]) -> tuple[bytes, dict[str, PatchBlock]]:
    """Keep the blocks of the approved files, unchanged and in order.

    ``approved`` maps each approved file (its relativePath) to its candidate names (relativePath
    and sandbox path). Every approved file must be matched by exactly one block.
    Returns the filtered patch and the block of each approved file.
    """
    candidates = {
        key: {n for n in (normalize_patch_path(name) for name in names) if n} for key, names in approved.items()
    }
    by_file: dict[str, PatchBlock] = {}
    kept: list[bytes] = []
    for block in split_blocks(patch):
        owners = [key for key, names in candidates.items() if block.paths & names]
        if not owners:
            continue
        for key in owners:
            if key in by_file:
                raise PatchError(f"the patch has more than one block for {key}")
            by_file[key] = block
        kept.append(block.text)
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


def _parse_hunks(block: bytes) -> list[_Hunk]:
    lines = block.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    hunks: list[_Hunk] = []
    index = 0
    while index < len(lines) and not lines[index].startswith(b"@@"):
        index += 1
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1  # blank separator between blocks
            continue
        match = _HUNK_RE.match(line)
        if not match:
            raise PatchError(f"unexpected line in patch: {line[:80]!r}")
        old_start = int(match.group(1))
        old_count = int(match.group(2) or 1)
        new_count = int(match.group(4) or 1)
        hunk = _Hunk(old_start, old_count, [], [])
        index += 1
        seen_old = seen_new = 0
        while index < len(lines) and (seen_old < old_count or seen_new < new_count):
            body = lines[index]
            tag, rest = body[:1], body[1:] + b"\n"
            if tag == b" " or (body == b"" and seen_old < old_count and seen_new < new_count):
                hunk.old.append(rest if body else b"\n")
                hunk.new.append(rest if body else b"\n")
                seen_old += 1
                seen_new += 1
            elif tag == b"-":
                hunk.old.append(rest)
                seen_old += 1
            elif tag == b"+":
                hunk.new.append(rest)
                seen_new += 1
            else:
                raise PatchError(f"unexpected line in hunk: {body[:80]!r}")
            index += 1
            if index < len(lines) and lines[index].startswith(NO_NEWLINE):
                _strip_last_newline(hunk, tag)
                index += 1
        if seen_old != old_count or seen_new != new_count:
            raise PatchError("a hunk is shorter than its header says")
        hunks.append(hunk)
    return hunks


def _strip_last_newline(hunk: _Hunk, tag: bytes) -> None:
    targets = [hunk.old, hunk.new] if tag in (b" ", b"") else [hunk.old] if tag == b"-" else [hunk.new]
    for side in targets:
        if side and side[-1].endswith(b"\n"):
            side[-1] = side[-1][:-1]


def _lines(data: bytes) -> list[bytes]:
    """Split after each ``\\n`` only (a lone ``\\r`` is content, unlike ``bytes.splitlines``)."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def apply_block(before: bytes | None, block: bytes) -> bytes:
    """Apply one file's block to ``before`` (None = the file does not exist); return the new bytes."""
    source = _lines(before or b"")
    out: list[bytes] = []
    cursor = 0
    for hunk in _parse_hunks(block):
        start = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        start = max(start, 0)
        if start < cursor:
            raise PatchError("hunks overlap or are out of order")
        if source[start : start + len(hunk.old)] != hunk.old:
            raise PatchError(f"the file does not match the patch at line {start + 1}")
        out.extend(source[cursor:start])
        out.extend(hunk.new)
        cursor = start + len(hunk.old)
    out.extend(source[cursor:])
    return b"".join(out)

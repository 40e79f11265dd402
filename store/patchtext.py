"""Apply-back over unified diffs: split ``patch.diff`` into per-file blocks, keep only the approved
files' blocks (the reference's patch approval filter, spec 3.3) and apply one block to a file's bytes
exactly (every context and removed line must match, or it is refused).

Parsing is the one patch parser, :mod:`codebox_tui.bundle.patchparse` (on ``unidiff``; README, "Patch
parsing"). The exact apply below is what unidiff does not provide. Patches are bytes: they are decoded
with ``surrogateescape`` so every byte, valid UTF-8 or not, survives the round trip unchanged.
"""

from __future__ import annotations

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


def _hunks(block: bytes) -> list[_Hunk]:
    """The block's hunks as the exact old and new lines (bytes, each with its newline unless the
    patch says ``\\ No newline at end of file``)."""
    section, parsed = parse_section(block.decode(*_CODEC))
    if section.error is not None:
        raise PatchError(f"the patch for {section.path} cannot be read: {section.error}")
    hunks: list[_Hunk] = []
    for parsed_hunk in parsed:
        hunk = _Hunk(parsed_hunk.old_start, parsed_hunk.old_count, [], [])
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


def apply_block(before: bytes | None, block: bytes) -> bytes:
    """Apply one file's block to ``before`` (None = the file does not exist); return the new bytes."""
    source = _lines(before or b"")
    out: list[bytes] = []
    cursor = 0
    for hunk in _hunks(block):
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

"""Patch generation that round-trips: ``git apply`` and ``patch -p1`` reproduce the new tree byte for
byte. Minimal hunks with 3 lines of context, ``\\ No newline at end of file`` markers, file modes, and
``GIT binary patch`` literals for binary files. Symlinks and special files are reported, never read."""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path

SKIPPED_DIRS = frozenset({".git", "node_modules", ".codebox-apply"})  # never captured, never written back
CONTEXT = 3
_B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"


@dataclass(frozen=True)
class Entry:
    rel: str
    mode: str  # "100644" | "100755"
    size: int
    # (st_ino, st_dev, st_mtime_ns, st_ctime_ns) when listed; what capture compares against the
    # signature a snapshot baseline recorded, to skip reading files that were not touched since.
    sig: tuple[int, int, int, int] | None = field(default=None, compare=False)


MAX_TRACKED_IN_SKIPPED = 200_000

# (kind, size, mode, mtime_ns, ctime_ns, inode): any write, chmod, rename or replacement changes it
SkippedSignature = tuple[str, int, int, int, int, int]


@dataclass
class Listing:
    files: dict[str, Entry] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (rel, "symlink" | "special-file")
    # with ``track_skipped``: everything inside ``SKIPPED_DIRS`` folders by stat signature (None: more
    # than ``MAX_TRACKED_IN_SKIPPED`` entries, not tracked)
    inside_skipped: dict[str, SkippedSignature] | None = field(default_factory=dict)


def stat_signature(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_ino, info.st_dev, info.st_mtime_ns, info.st_ctime_ns)


def skipped_signature(is_dir: bool, info: os.stat_result) -> SkippedSignature:
    kind = "dir" if is_dir else "link" if stat.S_ISLNK(info.st_mode) else "file"
    return (
        kind,
        0 if is_dir else info.st_size,
        stat.S_IMODE(info.st_mode),
        0 if is_dir else info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_ino,
    )


def list_tree(root: Path, *, track_skipped: bool = False, exclude: frozenset[str] = frozenset()) -> Listing:
    """Regular files under ``root`` (sorted by path); symlinks and special files are reported, not followed.

    Folders named in ``SKIPPED_DIRS`` are never listed as files; with ``track_skipped`` everything in
    them is recorded by stat signature in ``inside_skipped`` (same walk), so changes there can still be
    reported. ``exclude`` names top-level paths not walked at all (a ``.git`` the sandbox cannot write).
    One ``scandir`` per directory and one ``lstat`` per entry (``DirEntry.stat`` caches it)."""
    listing = Listing()
    if not root.is_dir():
        return listing
    files = listing.files
    skipped = listing.skipped
    inside_skipped: dict[str, SkippedSignature] = {}
    tracking = track_skipped
    stack: list[tuple[str, str, bool]] = [(str(root), "", False)]
    while stack:
        directory, prefix, inside = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            if inside:
                continue  # inside an uncaptured folder: a vanished subfolder is just a change
            raise
        for item in entries:
            name = item.name
            rel = prefix + name
            if inside:
                if not tracking:
                    continue
                try:
                    is_dir = item.is_dir(follow_symlinks=False)
                    inside_skipped[rel] = skipped_signature(is_dir, item.stat(follow_symlinks=False))
                except OSError:
                    continue
                if len(inside_skipped) > MAX_TRACKED_IN_SKIPPED:
                    tracking = False  # too many to track: stop walking uncaptured folders
                elif is_dir:
                    stack.append((item.path, rel + "/", True))
                continue
            if rel in exclude:
                continue
            if item.is_dir(follow_symlinks=False):
                is_dir = True
                info = None
            else:
                info = item.stat(follow_symlinks=False)
                is_dir = stat.S_ISDIR(info.st_mode)  # d_type unknown on some filesystems
            if is_dir:
                if name not in SKIPPED_DIRS:
                    stack.append((item.path, rel + "/", False))
                elif tracking:
                    inside_skipped[rel] = skipped_signature(True, info or item.stat(follow_symlinks=False))
                    stack.append((item.path, rel + "/", True))
                continue
            assert info is not None
            st_mode = info.st_mode
            if stat.S_ISLNK(st_mode):
                skipped.append((rel, "symlink"))
            elif not stat.S_ISREG(st_mode):
                skipped.append((rel, "special-file"))
            else:
                mode = "100755" if st_mode & 0o111 else "100644"
                files[rel] = Entry(rel, mode, info.st_size, stat_signature(info))
    listing.files = dict(sorted(files.items()))
    skipped.sort()
    listing.inside_skipped = inside_skipped if tracking else None
    return listing


def skipped_dir_changes(
    before: dict[str, SkippedSignature], after: dict[str, SkippedSignature]
) -> list[tuple[str, str]]:
    """(path, added | modified | deleted) for files inside skipped folders, sorted by path."""
    changes = []
    for rel in sorted(before.keys() | after.keys()):
        old, new = before.get(rel), after.get(rel)
        if old == new or (old is not None and new is not None and old[0] == new[0] == "dir"):
            continue  # a folder's own ctime moves with its entries; those are reported themselves
        if new is not None and new[0] == "dir" and old is None:
            changes.append((rel + "/", "added"))
        elif old is not None and old[0] == "dir" and new is None:
            changes.append((rel + "/", "deleted"))
        else:
            changes.append((rel, "added" if old is None else "deleted" if new is None else "modified"))
    return changes


def is_binary(data: bytes) -> bool:
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _b85_line(chunk: bytes) -> str:
    length = len(chunk)
    prefix = chr(ord("A") + length - 1) if length <= 26 else chr(ord("a") + length - 27)
    padded = chunk + b"\0" * (-length % 4)
    out = []
    for i in range(0, len(padded), 4):
        value = int.from_bytes(padded[i : i + 4], "big")
        digits = []
        for _ in range(5):
            value, rem = divmod(value, 85)
            digits.append(_B85[rem])
        out.append("".join(reversed(digits)))
    return prefix + "".join(out)


def _binary_literal(data: bytes) -> str:
    compressed = zlib.compress(data, 9)
    lines = [f"literal {len(data)}"]
    lines.extend(_b85_line(compressed[i : i + 52]) for i in range(0, len(compressed), 52))
    return "\n".join(lines) + "\n\n"


def _split_lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _hunk_range(start: int, count: int) -> str:
    if count == 1:
        return f"{start}"
    return f"{start},{count}"


Opcode = tuple[str, int, int, int, int]


def _opcodes(old: list[bytes], new: list[bytes]) -> list[Opcode]:
    """Edit opcodes; the common head and tail are matched directly, so the (quadratic-ish) sequence
    matcher only sees the changed middle — usually a few lines of a large file."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    a_end, b_end = len(old) - tail, len(new) - tail
    codes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    if head == a_end and head < b_end:
        codes.append(("insert", head, head, head, b_end))
    elif head == b_end and head < a_end:
        codes.append(("delete", head, a_end, head, head))
    elif head < a_end:
        matcher = difflib.SequenceMatcher(a=old[head:a_end], b=new[head:b_end], autojunk=False)
        codes += [(tag, a1 + head, a2 + head, b1 + head, b2 + head) for tag, a1, a2, b1, b2 in matcher.get_opcodes()]
    if tail:
        codes.append(("equal", a_end, len(old), b_end, len(new)))
    return codes


def _grouped(codes: list[Opcode], context: int) -> list[list[Opcode]]:
    """Split opcodes into hunks: keep ``context`` equal lines around changes, cut longer equal runs."""
    if not codes:
        return []
    tag, a1, a2, b1, b2 = codes[0]
    if tag == "equal":
        codes[0] = (tag, max(a1, a2 - context), a2, max(b1, b2 - context), b2)
    tag, a1, a2, b1, b2 = codes[-1]
    if tag == "equal":
        codes[-1] = (tag, a1, min(a2, a1 + context), b1, min(b2, b1 + context))
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, a1, a2, b1, b2 in codes:
        if tag == "equal" and a2 - a1 > 2 * context:
            group.append((tag, a1, a1 + context, b1, b1 + context))
            groups.append(group)
            group = []
            a1, b1 = a2 - context, b2 - context
        group.append((tag, a1, a2, b1, b2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return [g for g in groups if any(op[0] != "equal" for op in g)]


def _unified_hunks(old: list[bytes], new: list[bytes]) -> tuple[list[str], int, int]:
    """Hunks as text lines (each ending in "\\n"), plus added/removed line counts."""
    out: list[str] = []
    added = removed = 0

    def emit(prefix: str, line: bytes) -> None:
        text = line.decode("utf-8")
        if text.endswith("\n"):
            out.append(prefix + text)
        else:
            out.append(prefix + text + "\n")
            out.append("\\ No newline at end of file\n")

    for group in _grouped(_opcodes(old, new), CONTEXT):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        old_start = i1 + 1 if i2 > i1 else i1
        new_start = j1 + 1 if j2 > j1 else j1
        out.append(f"@@ -{_hunk_range(old_start, i2 - i1)} +{_hunk_range(new_start, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                for line in old[a1:a2]:
                    emit(" ", line)
                continue
            for line in old[a1:a2]:
                emit("-", line)
                removed += 1
            for line in new[b1:b2]:
                emit("+", line)
                added += 1
    return out, added, removed


@dataclass
class FileDiff:
    rel: str
    status: str  # added | modified | deleted
    old_mode: str | None
    new_mode: str | None
    binary: bool
    text: str
    additions: int
    deletions: int


def diff_file(
    rel: str, old: bytes | None, new: bytes | None, old_mode: str | None, new_mode: str | None
) -> FileDiff | None:
    """A git-style patch block for one file, or None when nothing changed."""
    if old == new and old_mode == new_mode:
        return None
    status = "added" if old is None else "deleted" if new is None else "modified"
    header = [f"diff --git a/{rel} b/{rel}\n"]
    if status == "added":
        header.append(f"new file mode {new_mode}\n")
    elif status == "deleted":
        header.append(f"deleted file mode {old_mode}\n")
    elif old_mode != new_mode:
        header += [f"old mode {old_mode}\n", f"new mode {new_mode}\n"]
    old_b, new_b = old or b"", new or b""
    binary = is_binary(old_b) or is_binary(new_b)
    if old == new:  # mode change only
        return FileDiff(rel, status, old_mode, new_mode, binary, "".join(header), 0, 0)
    old_id = git_blob_sha1(old_b) if old is not None else "0" * 40
    new_id = git_blob_sha1(new_b) if new is not None else "0" * 40
    mode_suffix = f" {new_mode}" if status == "modified" and old_mode == new_mode else ""
    header.append(f"index {old_id}..{new_id}{mode_suffix}\n")
    if binary:
        body = "GIT binary patch\n" + _binary_literal(new_b) + _binary_literal(old_b)
        return FileDiff(rel, status, old_mode, new_mode, True, "".join(header) + body, 0, 0)
    minus = f"a/{rel}" if old is not None else "/dev/null"
    plus = f"b/{rel}" if new is not None else "/dev/null"
    hunks, added, removed = _unified_hunks(_split_lines(old_b), _split_lines(new_b))
    return FileDiff(
        rel,
        status,
        old_mode,
        new_mode,
        False,
        "".join(header) + f"--- {minus}\n+++ {plus}\n" + "".join(hunks),
        added,
        removed,
    )

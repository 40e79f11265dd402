"""Byte-offset index of the complete lines of a growing file (pure; no Textual).

A torn last line (no newline yet) waits in the file until its newline arrives; a file that shrinks
(truncated or replaced) is indexed again from the start. One thread may ``update`` while others read:
offsets are only appended, and a reset swaps in a new list."""

from __future__ import annotations

import os
from pathlib import Path


class LineIndex:
    """Byte offsets of complete lines in a growing file (pure; no Textual)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets: list[int] = []
        self.read_to = 0
        self.resets = 0  # times the file was truncated or replaced (rotation)
        self.size = 0  # file size at the last update
        self._inode: int | None = None

    @property
    def pending_bytes(self) -> int:
        """Bytes seen by the last update that are not indexed yet (more than one chunk's worth, or a torn line)."""
        return max(0, self.size - self.read_to)

    def update(self, chunk_limit: int = 16 << 20) -> int:
        """Index newly appended complete lines; returns how many were added."""
        try:
            stat = os.stat(self.path)
        except OSError:
            return 0
        size = stat.st_size
        self.size = size
        replaced = self._inode is not None and stat.st_ino != self._inode
        self._inode = stat.st_ino
        if size < self.read_to or replaced:  # truncated or rotated: start over
            self.offsets = []  # a new list: a reader on another thread never sees it shrink
            self.read_to = 0
            self.resets += 1
        if size == self.read_to:
            return 0
        with open(self.path, "rb") as handle:
            handle.seek(self.read_to)
            data = handle.read(min(size - self.read_to, chunk_limit))
        start, pos, found = self.read_to, 0, []
        find = data.find
        while True:  # bytes.find in a loop is the fastest pure-Python scan measured (~8 ms per 16 MiB)
            nl = find(b"\n", pos)
            if nl < 0:
                break
            found.append(start + pos)
            pos = nl + 1
        if not found and len(data) == chunk_limit:  # one line longer than a chunk: find its end on disk
            end = self._newline_after(start + len(data), chunk_limit)
            if end is not None:
                found.append(start)
                pos = end + 1 - start
        self.offsets.extend(found)  # one extend: a reader on another thread sees whole lines only
        self.read_to = start + pos  # a torn last line waits for its newline
        return len(found)

    def _newline_after(self, position: int, chunk_limit: int) -> int | None:
        """File offset of the first newline at or after ``position`` (None: not written yet)."""
        with open(self.path, "rb") as handle:
            handle.seek(position)
            while True:
                data = handle.read(chunk_limit)
                if not data:
                    return None
                nl = data.find(b"\n")
                if nl >= 0:
                    return position + nl
                position += len(data)

    def __len__(self) -> int:
        return len(self.offsets)

    def read_line(self, index: int) -> str:
        """Line ``index`` (without its newline); "" if the index was reset since the caller looked."""
        offsets = self.offsets
        if not 0 <= index < len(offsets):
            return ""
        with open(self.path, "rb") as handle:
            handle.seek(offsets[index])
            return handle.readline(64 * 1024).decode("utf-8", errors="replace").rstrip("\n")

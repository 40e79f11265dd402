"""Directory trees and apply plans for the journal tests (the unit tests and the SIGKILL child process
both build them)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from store.journal import JournalWrite


def snapshot(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir():
            out[rel + "/"] = b""
        else:
            out[rel] = path.read_bytes()
    return out


def make_tree(root: Path, files: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (root / f"mod-{i}.txt").write_bytes(b"original %d\n" % i * 50)
        (root / f"del-{i}.txt").write_bytes(b"to delete %d\n" % i)


def plan(root: Path, files: int) -> list[JournalWrite]:
    writes: list[JournalWrite] = []
    for i in range(files):
        original = (root / f"mod-{i}.txt").read_bytes()
        writes.append(
            JournalWrite(
                f"mod-{i}.txt",
                root / f"mod-{i}.txt",
                b"changed %d\n" % i * 80,
                0o644,
                hashlib.sha256(original).hexdigest(),
            )
        )
        writes.append(
            JournalWrite(
                f"new/d{i % 3}/add-{i}.txt",
                root / "new" / f"d{i % 3}" / f"add-{i}.txt",
                b"added %d\n" % i,
                0o644,
            )
        )
        writes.append(JournalWrite(f"del-{i}.txt", root / f"del-{i}.txt", None))
    return writes

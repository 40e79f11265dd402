"""Which changed file a name means: the one rule for every place that accepts a file name (decisions,
hunk picks, comments, apply-back of a recorded decision).

A changed file is identified by its sandbox ``path``, unique across mounts. A mount-relative
``relativePath`` is accepted as a shorthand only while exactly one changed file has it: two mounts
that both change ``readme.txt`` make ``readme.txt`` ambiguous, and it is refused naming the
candidates' sandbox paths — never silently bound to the first mount's file.
"""

from __future__ import annotations

from collections.abc import Iterable

from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.errors import BadInputError


def sandbox_key(entry: ChangedFile) -> str:
    """The name a decision records for ``entry``: its sandbox path (its relativePath if it has none)."""
    return entry.path or entry.relativePath


class AmbiguousFileName(BadInputError):
    """A relative path that more than one mount's changed file has."""


class ChangedFileNames:
    """Look changed files up by sandbox path (with or without its leading ``/``) or unambiguous relativePath."""

    def __init__(self, entries: Iterable[ChangedFile]) -> None:
        self.entries = list(entries)
        self._by_path: dict[str, ChangedFile] = {}
        self._by_relative: dict[str, list[ChangedFile]] = {}
        for entry in self.entries:
            if entry.path:
                self._by_path.setdefault(entry.path.lstrip("/"), entry)
            self._by_relative.setdefault(entry.relativePath.lstrip("/"), []).append(entry)

    def find(self, name: str, *, field: str = "--file") -> ChangedFile | None:
        """The changed file ``name`` means, None if none; :class:`AmbiguousFileName` if it could be several."""
        key = name.strip().lstrip("/")
        if not key:
            return None
        by_path = self._by_path.get(key)
        if by_path is not None:
            return by_path
        candidates = self._by_relative.get(key, [])
        if len(candidates) > 1:
            paths = [sandbox_key(e) for e in candidates]
            raise AmbiguousFileName(
                f"{name.strip()} is a changed file in {len(candidates)} mounts; name it by its sandbox path: "
                + ", ".join(paths),
                code="file-name-ambiguous",
                field=field,
                details={"file": name.strip(), "candidates": paths},
            )
        return candidates[0] if candidates else None

    def is_ambiguous(self, entry: ChangedFile) -> bool:
        """True when another mount's changed file has the same relativePath."""
        return len(self._by_relative.get(entry.relativePath.lstrip("/"), [])) > 1

    def occurrence(self, entry: ChangedFile) -> tuple[int, int] | None:
        """For a relativePath several mounts change: ``(position, count)`` of ``entry`` among them in mount
        order, else None. ``files/patch.diff`` is the mounts' patches joined in mount order, each naming
        its files mount-relative, so the file's block is the ``position``-th block under that name — and
        a patch with another number of such blocks is refused (store/patchtext.py::filter_patch)."""
        same = self._by_relative.get(entry.relativePath.lstrip("/"), [])
        if len(same) < 2:
            return None
        ordered = sorted(same, key=lambda e: e.mountIndex)
        return ordered.index(entry), len(ordered)

    def shown_name(self, entry: ChangedFile) -> str:
        """How to name ``entry`` to a reviewer: its relativePath, or its sandbox path when that is ambiguous."""
        return sandbox_key(entry) if self.is_ambiguous(entry) else entry.relativePath

"""The changed files of a bundle under review, each under one key the whole Review screen uses (the file
tree, the diff, hunks left out, comments, decisions).

The key is the name the store gives a changed file (``store/changed_names.py``, reached through
``screens/data.py``): its relativePath, or its sandbox path when another mount changes a file with the
same relativePath. Two mounts that both change ``readme.txt`` are then two files, each shown under its
mount's sandbox folder, and a decision names exactly the one the reviewer picked. Free of Textual."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from codebox_tui.bundle.patchparse import split_sections
from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.screens import data


@dataclass(frozen=True)
class ReviewFile:
    key: str  # how the Review screen, the store and the confirmation name this file
    entry: ChangedFile
    block: str | None  # its section of files/patch.diff; None when the patch has none


class ReviewFiles:
    """The changed files by key, in the bundle's order, with their patch sections."""

    def __init__(self, entries: Iterable[ChangedFile], patch: str) -> None:
        listed = list(entries)
        names = data.changed_file_names(listed)
        sections: dict[str, list[str]] = {}  # each path a section names → its sections in patch order
        for section in split_sections(patch):
            for name in {section.path, section.old_path, section.new_path}:
                if name:
                    sections.setdefault(name.lstrip("/"), []).append(section.text)
        files: list[ReviewFile] = []
        for entry in listed:
            by_sandbox_path = sections.get(entry.path.lstrip("/")) if entry.path else None
            found = sections.get(entry.relativePath.lstrip("/"), [])
            at = names.occurrence(entry)  # several mounts change this relativePath: their blocks in mount order
            if by_sandbox_path and (at is not None or not found):  # a patch that names files by sandbox path
                block: str | None = by_sandbox_path[-1]
            elif at is not None:
                position, count = at
                block = found[position] if len(found) == count else None  # never another mount's block
            else:
                block = found[-1] if found else None
            files.append(ReviewFile(names.shown_name(entry), entry, block))
        self.files = files
        self._by_key = {f.key: f for f in files}
        self._by_entry = {id(f.entry): f for f in files}

    @property
    def keys(self) -> list[str]:
        """Every file's key, in the bundle's order."""
        return [f.key for f in self.files]

    def key_of(self, entry: ChangedFile) -> str:
        """The key of a changed-files entry of this bundle."""
        found = self._by_entry.get(id(entry))
        return found.key if found is not None else next(f.key for f in self.files if f.entry == entry)

    def get(self, key: str | None) -> ReviewFile | None:
        return self._by_key.get(key) if key is not None else None

    def block(self, key: str) -> str | None:
        found = self._by_key.get(key)
        return found.block if found is not None else None

    def shown(self) -> list[tuple[str, str]]:
        """(key, patch section) of every file the patch has a section for, sorted by key (the tree's order)."""
        return [(f.key, f.block) for f in sorted(self.files, key=lambda f: f.key) if f.block is not None]

"""A registered bundle's reviewable content, read from its own bytes: the one place the store opens a bundle,
re-verifies it (fails closed) and reads ``files/changed-files.json`` and ``files/patch.diff`` once.

:func:`read_content` is for a bundle folder found on disk; :func:`read_verified` is for a bundle the store has
registered: it also refuses a bundle whose id or Mode B content digest is no longer the one recorded (decisions,
comments, revisions, compare and apply-back all go through it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import content_digest_of
from codebox_tui.bundle.documents import parse_document
from codebox_tui.bundle.safe_read import load_json_file, read_regular
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.bundle import ChangedFile, ChangedFilesListing
from codebox_tui.contracts.bundle_read import ManifestView
from codebox_tui.errors import BadInputError, ConflictError
from store.changed_names import ChangedFileNames
from store.db import BundleRecord
from store.patchtext import PatchError, RawHunk, normalize_patch_path, split_blocks, split_hunks

MAX_EVIDENCE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class BundleContent:
    """The reviewable content of a bundle, read once from disk."""

    bundle_id: str
    content_digest: str
    changed: list[ChangedFile]
    patch: bytes = b""  # files/patch.diff, the bytes the digest covers

    @cached_property
    def names(self) -> ChangedFileNames:
        return ChangedFileNames(self.changed)

    def hunks(self, name: str) -> list[RawHunk]:
        """The hunks of the changed file ``name`` (sandbox path, or a relativePath only one mount has), in
        patch order (hunk N is ``hunks(name)[N - 1]``; none for a binary or mode-only change, an unknown
        name, or a file the patch has no block for)."""
        entry = self.names.find(name)
        return self.hunks_of(entry) if entry is not None else []

    def hunks_of(self, entry: ChangedFile) -> list[RawHunk]:
        """The hunks of one changed file's block, in patch order (a relativePath several mounts change:
        the block by mount order, store/changed_names.py)."""
        at = self.names.occurrence(entry)
        names = [n for n in (normalize_patch_path(name) for name in (entry.relativePath, entry.path)) if n]
        found = next((self._blocks[n] for n in names if n in self._blocks), [])
        position, count = at if at is not None else (0, len(found) if found else 1)
        if len(found) != count or not found:
            return []
        try:
            return split_hunks(found[position])[1]
        except PatchError:
            return []

    @cached_property
    def _blocks(self) -> dict[str, list[bytes]]:
        """Each path the patch names → its file blocks in patch order (the patch is split once)."""
        out: dict[str, list[bytes]] = {}
        for block in split_blocks(self.patch):
            for path in block.paths:
                out.setdefault(path, []).append(block.text)
        return out

    def hunk_selection(self, picks: dict[str, list[int]]) -> dict[str, list[str]]:
        """Resolve ``{file name: [1-based hunk numbers]}`` to ``{file: [hunk hashes]}``, each file named by its
        relativePath, or by its sandbox path when another mount changes the same relativePath."""
        out: dict[str, list[str]] = {}
        for name, numbers in picks.items():
            entry = self.resolve([name], field="--hunk")[0]
            shown = self.names.shown_name(entry)
            hunks = self.hunks_of(entry)
            wrong = [n for n in numbers if not 1 <= n <= len(hunks)]
            if wrong or not numbers:
                raise BadInputError(
                    f"{shown} has {len(hunks)} hunk(s) (numbered from 1, as codebox review show lists them); "
                    f"no hunk {', '.join(map(str, wrong)) or '(none given)'}",
                    code="hunk-unknown",
                    field="--hunk",
                    details={"file": shown, "hunks": len(hunks), "wrong": wrong},
                )
            chosen = out.setdefault(shown, [])
            for n in sorted(set(numbers)):
                if hunks[n - 1].sha256 not in chosen:
                    chosen.append(hunks[n - 1].sha256)
        return out

    def resolve(self, names: list[str], *, field: str = "--file") -> list[ChangedFile]:
        """The changed files ``names`` mean (sandbox path, or a relativePath only one mount has), each once;
        an unknown name → ``approved-file-not-changed``, an ambiguous one → ``file-name-ambiguous``."""
        out: list[ChangedFile] = []
        unknown: list[str] = []
        for name in names:
            entry = self.names.find(name, field=field)
            if entry is None:
                unknown.append(name)
            elif entry not in out:
                out.append(entry)
        if unknown:
            raise BadInputError(
                f"not a changed file of this bundle: {', '.join(unknown)} "
                f"(changed: {', '.join(self.names.shown_name(e) for e in self.changed) or 'none'})",
                code="approved-file-not-changed",
                field=field,
                details={"files": unknown},
            )
        return out

    @property
    def patch_text(self) -> str:
        """``files/patch.diff`` as text (undecodable bytes replaced), for showing and anchoring comments."""
        return self.patch.decode("utf-8", errors="replace")


def verify_or_refuse(bundle_dir: Path) -> None:
    """Verify the bundle (docs/security.md: fails closed); any violation refuses with ``bundle-invalid``."""
    result = verify_bundle(bundle_dir)
    if not result.valid:
        violations = [_as_dict(v) for v in result.violations]
        first = "; ".join(f"{v.get('code')}: {v.get('path')}" for v in violations[:3])
        raise ConflictError(
            f"the bundle at {bundle_dir} fails verification ({first}); nothing was applied",
            code="bundle-invalid",
            field="bundle",
            details={"violations": violations},
        )


def _as_dict(value: Any) -> dict[str, Any]:
    if hasattr(value, "model_dump"):
        dumped = value.model_dump(mode="json", exclude_none=True)
        return dict(dumped)
    return dict(value) if isinstance(value, dict) else {"message": str(value)}


def read_evidence(bundle_dir: Path, rel: str) -> bytes:
    """One evidence file of the bundle: a regular file, size-limited; unreadable → ``bundle-invalid``."""
    try:  # a regular file only, never a FIFO or link (codebox_tui/bundle/safe_read.py)
        return read_regular(bundle_dir / rel, MAX_EVIDENCE_BYTES)
    except OSError as error:
        raise ConflictError(f"cannot read {rel} from the bundle: {error}", code="bundle-invalid", field=rel) from error


def changed_entries(cf_bytes: bytes) -> list[ChangedFile]:
    """The entries of ``changed-files.json``, each a valid :class:`ChangedFile` (fails closed, naming the field)."""
    try:
        return parse_document(ChangedFilesListing, cf_bytes, layout.CHANGED_FILES).files
    except BadInputError as error:
        raise ConflictError(error.message, code="bundle-invalid", field=error.field or layout.CHANGED_FILES) from error


def _no_manifest_id(bundle_dir: Path) -> BadInputError:
    return BadInputError(
        f"{bundle_dir} has no readable manifest.json with an id", code="bundle-invalid", field=layout.MANIFEST
    )


def read_content(bundle_dir: Path, *, verify: bool = True) -> BundleContent:
    """Verify (fails closed) and read a bundle's id, Mode B digest and changed files."""
    if verify:
        verify_or_refuse(bundle_dir)
    try:
        # a regular, size- and depth-limited file (bundle/safe_read.py), like every bundle read
        bundle_id = ManifestView.read(load_json_file(bundle_dir / layout.MANIFEST, layout.MANIFEST)).id
    except BadInputError as error:
        raise _no_manifest_id(bundle_dir) from error
    if not bundle_id:
        raise _no_manifest_id(bundle_dir)
    cf = read_evidence(bundle_dir, layout.CHANGED_FILES)
    patch = read_evidence(bundle_dir, layout.PATCH)
    return BundleContent(bundle_id, content_digest_of(cf, patch), changed_entries(cf), patch)


def read_verified(bundle: BundleRecord) -> BundleContent:
    """Open a registered bundle and confirm it is unchanged: verified (fails closed), and still the id and the
    Mode B content digest the store recorded for it (``bundle-id-mismatch``/``digest-mismatch``, exit 5)."""
    content = read_content(Path(bundle.path))
    if content.bundle_id != bundle.bundle_id:
        raise ConflictError(
            f"the bundle at {bundle.path} now has id {content.bundle_id}, not {bundle.bundle_id}",
            code="bundle-id-mismatch",
            field="bundle",
        )
    if content.content_digest != bundle.content_digest:
        raise ConflictError(
            f"the bundle at {bundle.path} no longer has the content digest recorded for {bundle.ref}",
            code="digest-mismatch",
            field="bundle",
            details={"recorded": bundle.content_digest, "found": content.content_digest},
        )
    return content

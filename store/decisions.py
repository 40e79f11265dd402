"""Decisions computed from the bundle itself: the approved list and the content digest reviewed.

:func:`decide` is what the CLI (and anything else that has a bundle on disk) uses: it re-verifies
the bundle, recomputes the Mode B content digest over ``files/changed-files.json`` +
``files/patch.diff``, resolves approved names against changed-files (sandbox ``path``, or a
``relativePath`` only one mount has: store/changed_names.py) and records the decision through
:meth:`Store.record_decision`.

Approved files are recorded as sandbox paths (``approved_files``, unique across mounts and what the
reference's apply preflight expects) and mount-relative paths (``approved_relative_paths``, for
display); hunk selections are keyed by relativePath, or by sandbox path where that is ambiguous.
"""

from __future__ import annotations

import getpass
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import content_digest_of
from codebox_tui.bundle.safe_read import load_json_file
from codebox_tui.contracts.apply import Decision
from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.contracts.bundle_read import ManifestView
from codebox_tui.errors import BadInputError, ConflictError
from codebox_tui.settings import get_settings
from store.apply import (
    _changed_entries,
    _read_evidence,
    _verify_bundle,
)
from store.changed_names import ChangedFileNames, sandbox_key
from store.db import BundleRecord, Store, refuse_output_only
from store.patchtext import PatchError, RawHunk, normalize_patch_path, split_blocks, split_hunks


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


def default_approver(value: str | None) -> str:
    """Who decides (or comments): the name given, else the ``approver`` setting, else the user Codebox runs as."""
    if value and value.strip():
        return value.strip()
    try:
        return get_settings().approver or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _no_manifest_id(bundle_dir: Path) -> BadInputError:
    return BadInputError(f"{bundle_dir} has no readable manifest.json with an id", code="bundle-invalid",
                         field=layout.MANIFEST)


def read_content(bundle_dir: Path, *, verify: bool = True) -> BundleContent:
    """Verify (fails closed) and read a bundle's id, Mode B digest and changed files."""
    if verify:
        _verify_bundle(bundle_dir)
    try:
        # a regular, size- and depth-limited file (bundle/safe_read.py), like every bundle read
        bundle_id = ManifestView.read(load_json_file(bundle_dir / layout.MANIFEST, layout.MANIFEST)).id
    except BadInputError as error:
        raise _no_manifest_id(bundle_dir) from error
    if not bundle_id:
        raise _no_manifest_id(bundle_dir)
    cf = _read_evidence(bundle_dir, layout.CHANGED_FILES)
    patch = _read_evidence(bundle_dir, layout.PATCH)
    return BundleContent(bundle_id, content_digest_of(cf, patch), _changed_entries(cf), patch)


def register_bundle(
    store: Store, bundle_dir: Path, *, run_id: str | None = None, origin: str = "run"
) -> BundleRecord:
    """Record a bundle found on disk (verified first, fails closed; the directory is never moved)."""
    return record_content(store, bundle_dir, read_content(bundle_dir), run_id=run_id, origin=origin)


def record_content(
    store: Store, bundle_dir: Path, content: BundleContent, *, run_id: str | None = None, origin: str = "run"
) -> BundleRecord:
    """Record a bundle whose content :func:`read_content` has just verified and read (no second hash pass)."""
    return store.record_bundle(
        content.bundle_id,
        path=bundle_dir.resolve(),
        content_digest=content.content_digest,
        run_id=run_id,
        changed_files=len(content.changed),
        origin=origin,
    )


def resolve_bundle(store: Store, ref: str) -> BundleRecord:
    """A bundle by ``@key``, run id, id/digest prefix, or the path of a bundle directory (registered
    on first use)."""
    return _resolve_reading(store, ref)[0]


def _resolve_reading(store: Store, ref: str) -> tuple[BundleRecord, BundleContent | None]:
    """:func:`resolve_bundle`, with the content it verified when ``ref`` is a bundle directory (else None)."""
    path = Path(ref).expanduser()
    if not ref.startswith("@") and (path / layout.MANIFEST).is_file():
        content = read_content(path)
        return record_content(store, path, content), content
    return store.get_bundle(ref), None


def decide(
    store: Store,
    bundle_ref: str,
    action: str,
    *,
    approver: str,
    reason: str = "",
    files: list[str] | None = None,
    hunks: dict[str, list[int]] | None = None,
) -> Decision:
    """Record ``action`` on a bundle with the digest and file list computed from its bytes.

    ``approve`` approves every changed file; ``approve-files`` the given subset; ``discard`` and
    ``iterate`` approve nothing (the bundle directory is kept; ``codebox artifacts prune`` deletes).
    ``hunks`` (file name → 1-based hunk numbers) approves those files only in part: with ``approve``
    the other files stay whole, with ``approve-files`` the files are added to the approved ones
    (docs/contracts.md, "Hunk selection").
    """
    bundle, content = _resolve_reading(store, bundle_ref)  # a directory: verified once, for both
    return decide_on(store, bundle, action, approver=approver, reason=reason, files=files, hunks=hunks,
                     content=content)


def decide_on(
    store: Store,
    bundle: BundleRecord,
    action: str,
    *,
    approver: str,
    reason: str = "",
    files: list[str] | None = None,
    hunks: dict[str, list[int]] | None = None,
    content: BundleContent | None = None,
) -> Decision:
    """:func:`decide` on one known bundle record. ``content``: what :func:`read_content` verified and read
    from ``bundle.path`` just before (a caller that registered the bundle with it), so the bundle is hashed
    once per decision; read (and verified) here when not given."""
    refuse_output_only(bundle.ref, bundle.status)  # before any hashing: the reason, at once
    content = content if content is not None else read_content(Path(bundle.path))
    if content.bundle_id != bundle.bundle_id:
        raise ConflictError(
            f"the bundle at {bundle.path} now has id {content.bundle_id}, not {bundle.bundle_id}",
            code="bundle-id-mismatch",
            field="bundle",
        )
    approved: list[ChangedFile] = []
    if hunks and action not in ("approve", "approve-files"):
        raise BadInputError(f"{action} takes no hunks", code="decision-invalid", field="--hunk")
    selection = content.hunk_selection(hunks) if hunks else {}
    if action == "approve-files" and selection:
        files = [*(files or []), *selection]
    if action == "approve":
        if files:
            raise BadInputError("approve takes no files; use approve-files", code="decision-invalid", field="--file")
        approved = list(content.changed)
        if not approved:
            raise BadInputError("the bundle has no changed files to approve", code="decision-invalid", field="bundle")
    elif action == "approve-files":
        if not files:
            raise BadInputError("approve-files needs at least one --file", code="decision-invalid", field="--file")
        approved = content.resolve(files)
    elif files:
        raise BadInputError(f"{action} takes no files", code="decision-invalid", field="--file")
    return store.record_decision(
        bundle.key,
        action,
        approver=approver,
        reason=reason,
        approved_files=[sandbox_key(e) for e in approved],
        approved_relative_paths=[e.relativePath for e in approved] if action in ("approve", "approve-files") else None,
        approved_hunks=selection or None,
        content_digest=content.content_digest,
    )


def prune_discarded(store: Store, *, dry_run: bool = False) -> list[BundleRecord]:
    """Delete the directories of discarded bundles (evidence is only ever deleted here). Bundles imported
    from elsewhere (``codebox review import``) are never deleted: their folders are not Codebox's."""
    pruned: list[BundleRecord] = []
    for bundle in store.list_bundles(status="discarded"):
        if bundle.origin == "import":
            continue
        path = Path(bundle.path)
        if not dry_run:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            store.set_bundle_status(bundle.key, "pruned")
        pruned.append(bundle)
    return pruned

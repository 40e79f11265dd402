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
from pathlib import Path

from codebox_tui.bundle import layout
from codebox_tui.contracts.apply import Decision
from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.errors import BadInputError
from codebox_tui.settings import get_settings
from store.changed_names import sandbox_key
from store.content import BundleContent, read_content, read_verified
from store.db import BundleRecord, Store, refuse_output_only


def default_approver(value: str | None) -> str:
    """Who decides (or comments): the name given, else the ``approver`` setting, else the user Codebox runs as."""
    if value and value.strip():
        return value.strip()
    try:
        return get_settings().approver or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def register_bundle(store: Store, bundle_dir: Path, *, run_id: str | None = None, origin: str = "run") -> BundleRecord:
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
    return decide_on(store, bundle, action, approver=approver, reason=reason, files=files, hunks=hunks, content=content)


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
    if content is None:
        content = read_verified(bundle)
    elif content.bundle_id != bundle.bundle_id or content.content_digest != bundle.content_digest:
        content = read_verified(bundle)  # the caller's content is not this record's: refused with the reason
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

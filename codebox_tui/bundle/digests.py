"""Bundle identity: per-file sha256, the manifest self-hash, and both content-digest modes (spec §1)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.safe_read import UnsafeFileError, open_regular
from codebox_tui.contracts.bundle import CONTENT_DOMAIN, MANIFEST_FILE_LIST_DOMAIN, MANIFEST_SELF_DOMAIN
from codebox_tui.contracts.canonical import sha256_hex, stable_json

CHUNK = 1 << 20
MODE_A_INPUTS = ["manifest.files"]
MODE_B_INPUTS = list(layout.MODE_B_INPUTS)
LISTING_KEYS = ("path", "kind", "contentType", "redaction", "provenance", "viewer")


def _open_for_hash(path: Path, follow_symlinks: bool) -> int:
    """A regular file only: never blocks on a FIFO or reads a device (bundle/safe_read.py); without
    ``follow_symlinks`` a link is refused too (what verification uses)."""
    if not follow_symlinks:
        return open_regular(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafeFileError(f"{path} is not a regular file")
    return fd


def file_sha256(path: Path, *, follow_symlinks: bool = True) -> str:
    """Streaming hash: memory does not grow with the file size."""
    digest = hashlib.sha256()
    with open(_open_for_hash(path, follow_symlinks), "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def file_list_digest(files: list[dict[str, Any]]) -> str:
    """Mode A: the manifest's file list (paths, kinds, content types), not the bytes.

    Only absent keys are left out: the reference strips ``undefined``, and a key present as JSON ``null`` is
    kept as ``null`` in its listing (dropping it made a valid reference bundle fail with digest-mismatch)."""
    listing = [{k: f[k] for k in LISTING_KEYS if k in f} for f in files]
    return sha256_hex(MANIFEST_FILE_LIST_DOMAIN + "\n" + stable_json(listing))


def _file_chunks(path: Path, follow_symlinks: bool) -> Iterator[bytes]:
    with open(_open_for_hash(path, follow_symlinks), "rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def mode_b_digest(parts: Iterable[tuple[str, Iterable[bytes]]]) -> str:
    """Mode B, the one implementation (spec §1.4): ``sha256(domain "\n" name₁ "\n" bytes₁ "\n" name₂ "\n"
    bytes₂ …)`` over the named bundle files' bytes, each given as chunks (streamed or already in memory)."""
    digest = hashlib.sha256((CONTENT_DOMAIN + "\n").encode())
    for index, (name, chunks) in enumerate(parts):
        if index:
            digest.update(b"\n")
        digest.update(name.encode() + b"\n")
        for chunk in chunks:
            digest.update(chunk)
    return digest.hexdigest()


def content_digest(root: Path, inputs: Sequence[str], *, follow_symlinks: bool = True) -> str:
    """Mode B over files of the bundle at ``root``, streamed (memory does not grow with their size)."""
    return mode_b_digest((name, _file_chunks(root / name, follow_symlinks)) for name in inputs)


def content_digest_of(changed_files: bytes, patch: bytes) -> str:
    """Mode B over the canonical inputs' bytes already in memory (apply-back reads them once and digests
    exactly what it then uses: store/apply.py)."""
    return mode_b_digest(zip(MODE_B_INPUTS, ((changed_files,), (patch,)), strict=True))


def content_digest_b(bundle_dir: Path) -> str:
    """The true content address of a bundle's changes (changed-files.json + patch.diff)."""
    return content_digest(Path(bundle_dir), MODE_B_INPUTS)


def manifest_self_hash(manifest: dict[str, Any]) -> str:
    # Only the manifest's own entry changes: copy that entry, share everything else (no deep copy).
    clone = dict(manifest)
    entries = manifest.get("files")
    if isinstance(entries, list):
        clone["files"] = [
            {**entry, "sha256": {"algorithm": "sha256", "value": "0" * 64}}
            if isinstance(entry, dict) and entry.get("path") == layout.MANIFEST
            else entry
            for entry in entries
        ]
    return sha256_hex(MANIFEST_SELF_DOMAIN + "\n" + stable_json(clone))

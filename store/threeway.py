"""Three-way apply onto a target that moved on (README, "Review and decide"; docs/contracts.md, "Three-way
apply").

When a target file no longer has the baseline's ``before`` hash, a strict apply refuses it. With three-way
apply on, the file is merged instead, entirely in memory and in a private temporary folder, before anything
is written:

- **base**: the file as the sandbox got it. Recovered from the bundle (the after copy in
  ``files/mounts/<i>/…`` with the file's *whole* patch block applied backwards) or, for the git adapter,
  from the target repository's object store (the blob named by the block's ``index`` line); either way it
  must hash to the recorded ``beforeSha256``, else there is no base and the file conflicts as before;
- **theirs**: the base with exactly the approved hunks applied (what a strict apply would write);
- **ours**: the target file as it is now.

``git merge-file`` (hardened, docs/security-host.md) merges them. A clean merge is what gets written, by the
same all-or-nothing writers as a strict apply; any conflict refuses the whole apply and nothing is written
(``git apply --3way`` is not used to write: on a conflict it leaves conflict markers and unmerged index
entries in the target, and it needs the index to match the work tree). Each approved hunk of a conflicting
file is then merged alone to say which hunks conflict.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from codebox_tui.bundle.hostgit import HostGit, HostGitError
from codebox_tui.bundle.layout import FILES_DIR
from codebox_tui.bundle.safe_read import read_regular
from store.approved import ApprovedChange
from store.patchtext import PatchError, apply_block, hunk_hashes, select_hunks

OPTION: Final = "three_way"  # ApplyPlan.options key: "on" | "off"; absent = the adapter's default
MERGE_TIMEOUT_S: Final = 60.0
MAX_HUNKS_CHECKED: Final = 200  # per conflicting file, each approved hunk is merged alone up to this many
MAX_BASE_BYTES: Final = 64 * 1024 * 1024

_INDEX_LINE = re.compile(rb"^index ([0-9a-f]{40})\.\.[0-9a-f]{40}")

BaselineLookup = Callable[[ApprovedChange], "tuple[bytes, str] | None"]


@dataclass(frozen=True)
class HunkMerge:
    number: int  # the hunk's number in its file's block of patch.diff (docs/contracts.md, "Hunk selection")
    sha256: str
    status: str  # merged | conflict | not-checked

    def to_wire(self) -> dict[str, Any]:
        return {"number": self.number, "sha256": self.sha256, "status": self.status}


@dataclass(frozen=True)
class FileMerge:
    """The three-way result for one approved file that had changed in the target since the run."""

    relative_path: str
    status: str  # merged | conflict
    baseline: str | None  # where the base came from: bundle | git; None when none was found
    hunks: tuple[HunkMerge, ...] = ()
    reason: str = ""

    @property
    def conflicting(self) -> list[HunkMerge]:
        return [h for h in self.hunks if h.status == "conflict"]

    def to_wire(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "file": self.relative_path,
            "status": self.status,
            "hunks": [h.to_wire() for h in self.hunks],
        }
        if self.baseline:
            doc["baseline"] = self.baseline
        if self.reason:
            doc["reason"] = self.reason
        return doc


def enabled(options: dict[str, str], default: bool) -> bool:
    """Whether three-way apply is on for this apply (``--3way`` / ``--no-3way``, else the adapter's default)."""
    value = options.get(OPTION)
    if value is None:
        return default
    return value in ("on", "1", "true", "yes")


def baseline_from_bundle(bundle_dir: Path, change: ApprovedChange) -> bytes | None:
    """The file's baseline bytes recovered from the bundle: its after copy with its whole block applied
    backwards, checked against the recorded before hash (None when any of that is missing or differs,
    e.g. a copy left out by a size limit or redacted)."""
    if not change.artifact_path or not change.before_sha256 or not change.after_sha256:
        return None
    copy = _inside_bundle(bundle_dir, change.artifact_path)
    if copy is None:
        return None
    try:  # a regular file only, never a FIFO or a link (codebox_tui/bundle/safe_read.py)
        after = read_regular(copy, MAX_BASE_BYTES)
    except OSError:
        return None
    if hashlib.sha256(after).hexdigest() != change.after_sha256:
        return None
    try:
        base = apply_block(after, change.full_block or change.block, reverse=True)
    except PatchError:
        return None
    return base if hashlib.sha256(base).hexdigest() == change.before_sha256 else None


def _inside_bundle(bundle_dir: Path, rel: str) -> Path | None:
    """``bundle_dir/rel`` when ``rel`` is a plain relative path in the bundle's evidence folder that stays
    inside the bundle (no ``..``, no link on the way out): a file there is one verification checked. The
    path comes from ``changed-files.json``, which a sandbox could have forged; never read a host file."""
    parts = rel.split("/")
    if "\\" in rel or "\x00" in rel or parts[0] != FILES_DIR or any(p in ("", ".", "..") for p in parts):
        return None
    path = bundle_dir.joinpath(*parts)
    try:
        if not path.resolve(strict=True).is_relative_to(bundle_dir.resolve(strict=True)):
            return None
    except OSError:
        return None
    return path


def baseline_from_git(repo: Path, change: ApprovedChange) -> bytes | None:
    """The baseline blob the block's ``index`` line names, from the repository at ``repo`` (hardened git),
    checked against the recorded before hash."""
    if not change.before_sha256:
        return None
    blob = preimage_blob(change.full_block or change.block)
    if blob is None:
        return None
    try:
        done = HostGit(repo).run("cat-file", "blob", blob, timeout=MERGE_TIMEOUT_S)
    except HostGitError:
        return None
    if done.returncode != 0 or hashlib.sha256(done.stdout).hexdigest() != change.before_sha256:
        return None
    return done.stdout


def preimage_blob(block: bytes) -> str | None:
    """The git blob id of the block's old side (its ``index OLD..NEW`` line), or None."""
    for line in block.split(b"\n"):
        if line.startswith((b"@@", b"---", b"GIT binary patch")):
            break
        match = _INDEX_LINE.match(line)
        if match and match.group(1) != b"0" * 40:
            return match.group(1).decode()
    return None


def merge_bytes(ours: bytes, base: bytes, theirs: bytes) -> tuple[bytes, int]:
    """``git merge-file -p`` of the three versions in a private temporary folder: (merged bytes, number of
    conflicts). A merge git refuses (binary content) counts as one conflict."""
    with tempfile.TemporaryDirectory(prefix="codebox-3way-") as tmp:
        folder = Path(tmp)
        for name, data in (("target", ours), ("baseline", base), ("approved", theirs)):
            (folder / name).write_bytes(data)
        try:
            done = HostGit(folder).run(
                "merge-file", "-p", "--quiet", "target", "baseline", "approved", timeout=MERGE_TIMEOUT_S
            )
        except HostGitError:
            return b"", 1
    if done.returncode < 0 or done.returncode > 127:
        return b"", 1
    return done.stdout, done.returncode


def merge_change(change: ApprovedChange, current: bytes, base: bytes, source: str) -> tuple[bytes | None, FileMerge]:
    """Merge ``change``'s approved hunks into ``current``; (merged bytes or None on conflict, the report)."""
    full = change.full_block or change.block
    try:
        numbers = {sha: n for n, sha in enumerate(hunk_hashes(full), start=1)}
        approved = apply_block(base, change.block)
    except PatchError as error:
        return None, FileMerge(change.relative_path, "conflict", source, reason=f"patch does not apply: {error}")
    chosen = list(change.hunks) if change.hunks is not None else list(numbers)
    merged, conflicts = merge_bytes(current, base, approved)
    if conflicts == 0:
        hunks = tuple(HunkMerge(numbers.get(h, 0), h, "merged") for h in chosen)
        return merged, FileMerge(change.relative_path, "merged", source, hunks)
    hunks = tuple(
        _hunk_alone(full, base, current, h, numbers.get(h, 0), index < MAX_HUNKS_CHECKED)
        for index, h in enumerate(chosen)
    )
    if not any(h.status == "conflict" for h in hunks):  # only together (adjacent hunks): all of them
        hunks = tuple(HunkMerge(h.number, h.sha256, "conflict") for h in hunks)
    return None, FileMerge(
        change.relative_path,
        "conflict",
        source,
        hunks,
        reason="the approved change and the target's own edits touch the same lines",
    )


def _hunk_alone(full: bytes, base: bytes, current: bytes, sha: str, number: int, check: bool) -> HunkMerge:
    if not check:
        return HunkMerge(number, sha, "not-checked")
    try:
        alone = apply_block(base, select_hunks(full, {sha}))
    except PatchError:
        return HunkMerge(number, sha, "conflict")
    _merged, conflicts = merge_bytes(current, base, alone)
    return HunkMerge(number, sha, "conflict" if conflicts else "merged")


def report(merges: Sequence[FileMerge]) -> dict[str, Any]:
    """The ``three_way`` object of an apply result's ``target`` (docs/contracts.md, "Three-way apply")."""
    merged = [m for m in merges if m.status == "merged"]
    conflicting = [m for m in merges if m.status == "conflict"]
    return {
        "merged_files": len(merged),
        "merged_hunks": sum(1 for m in merges for h in m.hunks if h.status == "merged"),
        "conflicting_files": len(conflicting),
        "conflicting_hunks": sum(len(m.conflicting) for m in merges),
        "files": [m.to_wire() for m in merges],
    }


def summary(three_way: dict[str, Any] | None) -> str | None:
    """One line for people (``codebox apply`` and the TUI's apply report), or None without a three-way
    report."""
    if not isinstance(three_way, dict):
        return None
    files = [f for f in three_way.get("files", []) if isinstance(f, dict)]
    merged = ", ".join(str(f.get("file")) for f in files if f.get("status") == "merged")
    text = (
        f"three-way: {three_way.get('merged_files', 0)} file(s) merged ({three_way.get('merged_hunks', 0)} "
        f"hunk(s)), {three_way.get('conflicting_hunks', 0)} conflicting hunk(s)"
    )
    return text + (f": {merged}" if merged else "")

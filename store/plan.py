"""What every apply adapter receives and implements: the plan (approved files with their patch blocks,
checked against a target before anything is written) and the :class:`ApplyAdapter` base class.

Its own module so the built-in adapters (``store/adapters/``) and :mod:`store.apply`, which imports them
plainly, share it without an import cycle."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from codebox_tui.contracts.apply import ApplyResult, Decision
from codebox_tui.errors import BadInputError, ConflictError
from store import fdtree, threeway
from store.approved import ApprovedChange
from store.patchtext import PatchError, apply_block
from store.threeway import BaselineLookup, FileMerge

MOVED_ON = "changed since the sandbox ran (before hash)"


@dataclass(frozen=True)
class PlannedWrite:
    """What one approved file becomes in a concrete target (computed and hash-checked in memory)."""

    relative_path: str
    path: Path
    action: str  # write | delete
    content: bytes | None
    mode: int | None  # file mode to give a written file
    expected_sha256: str | None = None  # the target file's hash when planned (re-checked when written)
    merge: FileMerge | None = None  # set when the file was merged three-way (store/threeway.py)


@dataclass(frozen=True)
class ApplyPlan:
    """Everything an adapter needs, derived from verified bundle bytes and the decision."""

    decision: Decision
    bundle_id: str
    bundle_dir: Path
    content_digest: str
    files: tuple[ApprovedChange, ...]
    patch: bytes  # the approved subset of patch.diff: blocks unchanged, or cut to their approved hunks
    options: dict[str, str] = field(default_factory=dict)
    # approved files in never-written-back folders (NEVER_WRITTEN_BACK): left out of ``files`` and
    # ``patch``, recorded in the result's ``target.withheld``
    withheld: tuple[dict[str, str], ...] = ()

    @property
    def approved_files(self) -> list[str]:
        return [f.relative_path for f in self.files]

    @property
    def patch_sha256(self) -> str:
        return hashlib.sha256(self.patch).hexdigest()

    def audit_reference(self, adapter: str) -> str:
        return f"{self.bundle_id}#decision-{self.decision.id}#{adapter}"

    def in_after_state(self, root: Path) -> bool:
        """True if every approved file in ``root`` already has its after content (applied before)."""
        root_real = target_root(root)
        with fdtree.opened_target(root_real) as root_fd:
            for change in self.files:
                current = fdtree.read_regular(root_fd, change.relative_path)
                if isinstance(current, str) or change.partial:  # a part's after bytes are not recorded
                    return False
                if change.status == "deleted":
                    if current is not None:
                        return False
                elif current is None or hashlib.sha256(current[0]).hexdigest() != change.after_sha256:
                    return False
        return True

    def plan_writes(
        self,
        root: Path,
        *,
        allow_binary: bool = False,
        three_way: bool = False,
        baseline: BaselineLookup | None = None,
    ) -> list[PlannedWrite]:
        """Check ``root`` against the baseline and compute each file's new bytes.

        Raises one :class:`ConflictError` listing every conflicting file; nothing is written.
        Binary files (a git binary patch) can only be written by git: with ``allow_binary`` their
        content is left None for ``git apply`` to produce, otherwise they are a conflict.
        With ``three_way`` a modified text file that changed in the target since the run is merged
        (store/threeway.py) instead of refused; ``baseline`` finds its base (default: the bundle).
        """
        root_real = target_root(root)
        with fdtree.opened_target(root_real) as root_fd:
            return self._plan_writes(root, root_real, root_fd, allow_binary, three_way, baseline)

    def _plan_writes(
        self,
        root: Path,
        root_real: Path,
        root_fd: int,
        allow_binary: bool,
        three_way: bool,
        baseline: BaselineLookup | None,
    ) -> list[PlannedWrite]:
        writes: list[PlannedWrite] = []
        conflicts: list[dict[str, Any]] = []
        merges: list[FileMerge] = []
        for change in self.files:
            path = root_real.joinpath(*PurePosixPath(change.relative_path).parts)
            # read through the target's descriptor without following links (store/fdtree.py)
            found = fdtree.read_regular(root_fd, change.relative_path)
            if isinstance(found, str):
                conflicts.append({"file": change.relative_path, "reason": found})
                continue
            current, current_mode = found if found is not None else (None, None)
            current_sha = hashlib.sha256(current).hexdigest() if current is not None else None
            if change.status == "added":
                if current is not None:
                    conflicts.append({"file": change.relative_path, "reason": "exists in the target already"})
                    continue
            else:
                if current is None:
                    conflicts.append({"file": change.relative_path, "reason": "missing from the target"})
                    continue
                if current_sha != change.before_sha256:
                    if three_way and change.status == "modified" and not change.binary:
                        merged = self._merge(change, current, current_mode, path, baseline)
                        if merged.merge is not None:
                            merges.append(merged.merge)
                        if merged.conflict is not None:
                            conflicts.append(merged.conflict)
                        elif merged.write is not None:
                            writes.append(merged.write)
                        continue
                    conflicts.append({"file": change.relative_path, "reason": MOVED_ON})
                    continue
            if change.status == "deleted":
                writes.append(PlannedWrite(change.relative_path, path, "delete", None, None, current_sha))
                continue
            if change.binary:
                if allow_binary:
                    writes.append(PlannedWrite(change.relative_path, path, "write", None, None, current_sha))
                else:
                    conflicts.append(
                        {"file": change.relative_path, "reason": "binary file: use the git or patch adapter"}
                    )
                continue
            try:
                content = apply_block(current, change.block)
            except PatchError as error:
                conflicts.append({"file": change.relative_path, "reason": f"patch does not apply: {error}"})
                continue
            # a file approved in part has no recorded after hash: its content is the baseline (checked
            # above) with exactly the approved hunks applied
            if not change.partial and hashlib.sha256(content).hexdigest() != change.after_sha256:
                conflicts.append(
                    {
                        "file": change.relative_path,
                        "reason": "the patch does not reproduce the recorded after hash",
                    }
                )
                continue
            mode = _mode_for(current_mode, change.after_mode)
            writes.append(PlannedWrite(change.relative_path, path, "write", content, mode, current_sha))
        if conflicts:
            details: dict[str, Any] = {"conflicts": conflicts}
            if merges:
                details["three_way"] = threeway.report(merges)
                details["hint"] = f"{threeway.summary(details['three_way'])}; nothing was written"
            elif not three_way and any(c["reason"] == MOVED_ON for c in conflicts):
                details["hint"] = (
                    "the target changed since the run: --3way merges the approved hunks into it "
                    "when they do not touch the lines the target changed"
                )
            raise ConflictError(
                f"{len(conflicts)} approved file(s) conflict with {root}; nothing was written: "
                + "; ".join(f"{c['file']}: {c['reason']}" for c in conflicts),
                code="target-conflict",
                field="target",
                details=details,
            )
        return writes

    def _merge(
        self,
        change: ApprovedChange,
        current: bytes,
        current_mode: int | None,
        path: Path,
        baseline: BaselineLookup | None,
    ) -> _Merged:
        """One modified file that changed in the target since the run, merged three-way."""
        found = baseline(change) if baseline is not None else None
        if found is None:
            base = threeway.baseline_from_bundle(self.bundle_dir, change)
            found = (base, "bundle") if base is not None else None
        if found is None:
            reason = f"{MOVED_ON}; no baseline to merge against"
            merge = threeway.FileMerge(change.relative_path, "conflict", None, reason=reason)
            return _Merged(conflict={"file": change.relative_path, "reason": reason}, merge=merge)
        base, source = found
        if not change.partial:  # the whole block must still reproduce the recorded after bytes
            try:
                after = apply_block(base, change.block)
            except PatchError as error:
                reason = f"patch does not apply to the baseline: {error}"
                return _Merged(conflict={"file": change.relative_path, "reason": reason})
            if hashlib.sha256(after).hexdigest() != change.after_sha256:
                reason = "the patch does not reproduce the recorded after hash"
                return _Merged(conflict={"file": change.relative_path, "reason": reason})
        content, merge = threeway.merge_change(change, current, base, source)
        if content is None:
            numbers = ", ".join(str(h.number) for h in merge.conflicting) or "?"
            reason = f"three-way merge conflicts in approved hunk(s) {numbers}" + (
                f" ({merge.reason})" if merge.reason else ""
            )
            return _Merged(
                conflict={"file": change.relative_path, "reason": reason, "hunks": [h.to_wire() for h in merge.hunks]},
                merge=merge,
            )
        mode = _mode_for(current_mode, change.after_mode)
        write = PlannedWrite(
            change.relative_path, path, "write", content, mode, hashlib.sha256(current).hexdigest(), merge
        )
        return _Merged(write=write, merge=merge)


@dataclass(frozen=True)
class _Merged:
    write: PlannedWrite | None = None
    conflict: dict[str, Any] | None = None
    merge: FileMerge | None = None


def merge_report(writes: list[PlannedWrite]) -> dict[str, Any] | None:
    """The result's ``target.three_way`` for the files that were merged (None when none was)."""
    merges = [w.merge for w in writes if w.merge is not None]
    return threeway.report(merges) if merges else None


class ApplyAdapter(ABC):
    """Writes a plan somewhere. Subclasses are registered under the ``codebox.apply_adapters``
    entry-point group (name → ``module:Class``) so other packages can add their own."""

    name: ClassVar[str]
    # three-way apply when a target file changed since the run (``--3way`` / ``--no-3way`` override it;
    # README, "Review and decide"): off unless an adapter turns it on
    three_way_default: ClassVar[bool] = False

    def target_key(self, target: str) -> str:
        """The identity of a target for idempotency (default: the absolute path)."""
        return str(Path(target).expanduser().resolve())

    @abstractmethod
    def apply(self, plan: ApplyPlan, target: str) -> ApplyResult | dict[str, Any]:
        """Write the approved changes; return ``wp-codebox/apply-result/v1``. Raise CodeboxError to refuse."""


def target_root(root: Path) -> Path:
    try:
        real = root.expanduser().resolve(strict=True)
    except OSError as error:
        raise BadInputError(f"the target {root} does not exist", code="target-missing", field="--target") from error
    if not real.is_dir():
        raise BadInputError(f"the target {root} is not a directory", code="target-missing", field="--target")
    return real


def _mode_for(current_mode: int | None, after_mode: str | None) -> int:
    """An existing file keeps its permission bits, a new one gets the bundle's; never setuid, setgid or
    sticky bits (docs/security-host.md, "Apply-back")."""
    if current_mode is not None:
        return current_mode & 0o777
    return 0o755 if after_mode == "100755" else 0o644

"""Apply-back: the adapter ABC, the preflight every adapter shares, and entry-point discovery.

:func:`apply_decision` is the one way approved changes leave a bundle:

1. only ``approve``/``approve-files`` decisions apply; the same decision applied again with the
   same adapter and target is a no-op that says so (``status: "already-applied"``);
2. the bundle is re-verified (fails closed), ``files/changed-files.json`` and ``files/patch.diff``
   are read **once** and the Mode B content digest is recomputed over those bytes and compared with
   the digest the decision recorded (:class:`ConflictError`, exit 5, on any mismatch);
3. every approved file must be a changed file (by ``relativePath`` or sandbox ``path``) with a safe
   relative path, and the patch is cut down to the approved files' blocks; approved files inside
   ``.git``, ``node_modules`` or ``.codebox-apply`` (at any depth) are never written: they are left
   out and listed in the result's ``target.withheld``;
4. the adapter checks its target (each file must still have the baseline's ``before`` hash —
   conflicts are reported per file and nothing is written) and writes;
5. the normalised ``wp-codebox/apply-result/v1`` is stored with the decision and every attempt,
   success or failure, is appended to ``apply-audit.jsonl`` (redacted).
"""

from __future__ import annotations

import hashlib
import os
import stat
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import content_digest_of
from codebox_tui.bundle.documents import parse_document
from codebox_tui.bundle.safe_read import read_regular
from codebox_tui.contracts.apply import (
    APPROVING_ACTIONS,
    ApplyResult,
    ApplyResultInvalid,
    Decision,
    normalize_apply_result,
)
from codebox_tui.contracts.bundle import ChangedFile, ChangedFilesListing
from codebox_tui.errors import BadInputError, CodeboxError, ConflictError
from store.audit import append_apply_audit
from store.db import Store
from store.journal import STAGING_DIR
from store.patchtext import PatchError, apply_block, filter_patch

ENTRY_POINT_GROUP = "codebox.apply_adapters"
MAX_EVIDENCE_BYTES = 64 * 1024 * 1024


# -- the plan every adapter receives ------------------------------------------------------------
@dataclass(frozen=True)
class ApprovedChange:
    """One approved entry of ``changed-files.json`` (a :class:`ChangedFile`) with its patch block, in the
    names adapters use."""

    relative_path: str
    sandbox_path: str
    status: str  # added | modified | deleted
    before_sha256: str | None
    after_sha256: str | None
    after_mode: str | None
    mount_index: int
    block: bytes
    binary: bool = False

    @classmethod
    def of(cls, entry: ChangedFile, block: bytes) -> ApprovedChange:
        return cls(
            relative_path=entry.relativePath,
            sandbox_path=entry.path or entry.relativePath,
            status=entry.status,
            before_sha256=entry.beforeSha256 or None,
            after_sha256=entry.afterSha256 or None,
            after_mode=entry.afterMode or None,
            mount_index=entry.mountIndex,
            block=block,
            binary=entry.binary,
        )


@dataclass(frozen=True)
class PlannedWrite:
    """What one approved file becomes in a concrete target (computed and hash-checked in memory)."""

    relative_path: str
    path: Path
    action: str  # write | delete
    content: bytes | None
    mode: int | None  # file mode to give a written file


@dataclass(frozen=True)
class ApplyPlan:
    """Everything an adapter needs, derived from verified bundle bytes and the decision."""

    decision: Decision
    bundle_id: str
    bundle_dir: Path
    content_digest: str
    files: tuple[ApprovedChange, ...]
    patch: bytes  # the approved subset of patch.diff, blocks unchanged
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
        root_real = _target_root(root)
        for change in self.files:
            path = root_real.joinpath(*PurePosixPath(change.relative_path).parts)
            if _unsafe_component(root_real, path):
                return False
            current = _read_regular(path)
            if isinstance(current, str):
                return False
            if change.status == "deleted":
                if current is not None:
                    return False
            elif current is None or hashlib.sha256(current).hexdigest() != change.after_sha256:
                return False
        return True

    def plan_writes(self, root: Path, *, allow_binary: bool = False) -> list[PlannedWrite]:
        """Check ``root`` against the baseline and compute each file's new bytes.

        Raises one :class:`ConflictError` listing every conflicting file; nothing is written.
        Binary files (a git binary patch) can only be written by git: with ``allow_binary`` their
        content is left None for ``git apply`` to produce, otherwise they are a conflict.
        """
        root_real = _target_root(root)
        writes: list[PlannedWrite] = []
        conflicts: list[dict[str, str]] = []
        for change in self.files:
            path = root_real.joinpath(*PurePosixPath(change.relative_path).parts)
            problem = _unsafe_component(root_real, path)
            if problem:
                conflicts.append({"file": change.relative_path, "reason": problem})
                continue
            current = _read_regular(path)
            if isinstance(current, str):
                conflicts.append({"file": change.relative_path, "reason": current})
                continue
            if change.status == "added":
                if current is not None:
                    conflicts.append({"file": change.relative_path, "reason": "exists in the target already"})
                    continue
            else:
                if current is None:
                    conflicts.append({"file": change.relative_path, "reason": "missing from the target"})
                    continue
                if hashlib.sha256(current).hexdigest() != change.before_sha256:
                    conflicts.append(
                        {
                            "file": change.relative_path,
                            "reason": "changed since the sandbox ran (before hash)",
                        }
                    )
                    continue
            if change.status == "deleted":
                writes.append(PlannedWrite(change.relative_path, path, "delete", None, None))
                continue
            if change.binary:
                if allow_binary:
                    writes.append(PlannedWrite(change.relative_path, path, "write", None, None))
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
            if hashlib.sha256(content).hexdigest() != change.after_sha256:
                conflicts.append(
                    {
                        "file": change.relative_path,
                        "reason": "the patch does not reproduce the recorded after hash",
                    }
                )
                continue
            mode = _mode_for(path, change.after_mode, current is not None)
            writes.append(PlannedWrite(change.relative_path, path, "write", content, mode))
        if conflicts:
            raise ConflictError(
                f"{len(conflicts)} approved file(s) conflict with {root}; nothing was written: "
                + "; ".join(f"{c['file']}: {c['reason']}" for c in conflicts),
                code="target-conflict",
                field="target",
                details={"conflicts": conflicts},
            )
        return writes


# -- adapters --------------------------------------------------------------------------------
class ApplyAdapter(ABC):
    """Writes a plan somewhere. Subclasses are registered under the ``codebox.apply_adapters``
    entry-point group (name → ``module:Class``) so other packages can add their own."""

    name: ClassVar[str]

    def target_key(self, target: str) -> str:
        """The identity of a target for idempotency (default: the absolute path)."""
        return str(Path(target).expanduser().resolve())

    @abstractmethod
    def apply(self, plan: ApplyPlan, target: str) -> ApplyResult | dict[str, Any]:
        """Write the approved changes; return ``wp-codebox/apply-result/v1``. Raise CodeboxError to refuse."""


def adapter_names() -> list[str]:
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)} | set(_BUILTIN))


def load_adapter(name: str) -> ApplyAdapter:
    """Instantiate the adapter registered as ``name`` (entry points first, built-ins as fallback)."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                cls = ep.load()
            except Exception as error:
                raise BadInputError(
                    f"apply adapter {name!r} failed to load from {ep.value}: {error}",
                    code="adapter-unavailable",
                    field="--adapter",
                ) from error
            break
    else:
        if name not in _BUILTIN:
            raise BadInputError(
                f"unknown apply adapter {name!r}; available: {', '.join(adapter_names())}",
                code="adapter-unknown",
                field="--adapter",
            )
        module_name, _, class_name = _BUILTIN[name].partition(":")
        import importlib

        cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, ApplyAdapter)):
        raise BadInputError(
            f"apply adapter {name!r} is not an ApplyAdapter subclass",
            code="adapter-unavailable",
            field="--adapter",
        )
    adapter = cls()
    return adapter


_BUILTIN = {
    "directory": "store.adapters.directory:DirectoryAdapter",
    "git": "store.adapters.git:GitAdapter",
    "patch": "store.adapters.patch:PatchAdapter",
}


# -- preflight -------------------------------------------------------------------------------
def _verify_bundle(bundle_dir: Path) -> None:
    try:
        from codebox_tui.bundle.verify import verify_bundle
    except ImportError as error:  # fail closed
        raise ConflictError(
            "bundle verification is unavailable, so the bundle cannot be trusted (fails closed)",
            code="bundle-invalid",
            field="bundle",
        ) from error
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


def _read_evidence(bundle_dir: Path, rel: str) -> bytes:
    try:  # a regular file only, never a FIFO or link (codebox_tui/bundle/safe_read.py)
        return read_regular(bundle_dir / rel, MAX_EVIDENCE_BYTES)
    except OSError as error:
        raise ConflictError(f"cannot read {rel} from the bundle: {error}", code="bundle-invalid", field=rel) from error


def safe_relative_path(rel: str) -> bool:
    if not rel or "\\" in rel or "\x00" in rel or rel.startswith("/") or ":" in rel.split("/")[0]:
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))


# Folders whose contents are never captured and never written back, at any depth, whatever a bundle or
# a decision says (README, "Review and decide"): a sandbox could plant hooks or config for git, scripts
# for npm, or a journal that apply-recover would trust. Compared case-insensitively (case-insensitive
# file systems).
NEVER_WRITTEN_BACK = frozenset({".git", "node_modules", STAGING_DIR})


def never_written_back(rel: str) -> str | None:
    """The never-written-back folder ``rel`` lies in, or None."""
    for part in rel.split("/")[:-1]:
        if part.casefold() in NEVER_WRITTEN_BACK:
            return part
    name = rel.rsplit("/", 1)[-1]
    return name if name.casefold() in NEVER_WRITTEN_BACK else None  # e.g. a worktree's ".git" file


def prepare_plan(store: Store, decision: Decision) -> ApplyPlan:
    """Steps 2–3 of the module docstring: everything that does not depend on the target."""
    if decision.action not in APPROVING_ACTIONS:
        raise BadInputError(
            f"decision {decision.id} is {decision.action!r}; only approve/approve-files decisions can be applied",
            code="decision-not-approved",
            field="decision",
        )
    bundle = store.decision_bundle(decision.id)  # the record decided on: Mode A ids can be shared
    bundle_dir = Path(bundle.path)
    if not bundle_dir.is_dir():
        raise ConflictError(f"the bundle directory {bundle_dir} is gone", code="bundle-invalid", field="bundle")
    _verify_bundle(bundle_dir)
    cf_bytes = _read_evidence(bundle_dir, layout.CHANGED_FILES)
    patch_bytes = _read_evidence(bundle_dir, layout.PATCH)
    digest = content_digest_of(cf_bytes, patch_bytes)
    if digest != decision.content_digest or digest != bundle.content_digest:
        raise ConflictError(
            "the bundle's content digest no longer matches the one the decision recorded; nothing was applied",
            code="digest-mismatch",
            field="content_digest",
            details={
                "decision": decision.content_digest,
                "recorded": bundle.content_digest,
                "recomputed": digest,
            },
        )
    entries = _changed_entries(cf_bytes)
    by_name: dict[str, ChangedFile] = {}
    for entry in entries:
        for value in (entry.relativePath, entry.path):
            if value:
                by_name.setdefault(value, entry)
                by_name.setdefault(value.lstrip("/"), entry)
    chosen: dict[str, ChangedFile] = {}
    outside: list[str] = []
    for name in decision.approved_files:
        found = by_name.get(name, by_name.get(name.lstrip("/")))
        if found is None:
            outside.append(name)
            continue
        chosen[found.relativePath] = found
    if outside:
        raise ConflictError(
            f"approved file(s) not in changed-files.json: {', '.join(outside)}; nothing was applied",
            code="approved-file-not-changed",
            field="approved_files",
            details={"files": outside},
        )
    unsafe = [rel for rel in chosen if not safe_relative_path(rel)]
    if unsafe:
        raise ConflictError(
            f"unsafe path(s) in changed-files.json: {', '.join(unsafe)}; nothing was applied",
            code="unsafe-path",
            field=layout.CHANGED_FILES,
            details={"files": unsafe},
        )
    withheld = []
    for rel in list(chosen):
        folder = never_written_back(rel)
        if folder is not None:
            withheld.append({"file": rel, "reason": "never-written-back", "folder": folder})
            del chosen[rel]
    if len({e.mountIndex for e in chosen.values()}) > 1:
        raise BadInputError(
            "the approved files span several mounts; approve and apply one mount's files at a time",
            code="multiple-mounts",
            field="approved_files",
        )
    try:
        filtered, blocks = filter_patch(patch_bytes, {rel: {rel, e.path} for rel, e in chosen.items()})
    except PatchError as error:
        raise ConflictError(f"{error}; nothing was applied", code="patch-invalid", field=layout.PATCH) from error
    files = tuple(ApprovedChange.of(e, blocks[rel].text) for rel, e in chosen.items())
    return ApplyPlan(
        decision=decision,
        bundle_id=bundle.bundle_id,
        bundle_dir=bundle_dir,
        content_digest=digest,
        files=files,
        patch=filtered,
        withheld=tuple(withheld),
    )


def _changed_entries(cf_bytes: bytes) -> list[ChangedFile]:
    """The entries of ``changed-files.json``, each a valid :class:`ChangedFile` (fails closed, naming the field)."""
    try:
        return parse_document(ChangedFilesListing, cf_bytes, layout.CHANGED_FILES).files
    except BadInputError as error:
        raise ConflictError(error.message, code="bundle-invalid", field=error.field or layout.CHANGED_FILES) from error


# -- target checks ---------------------------------------------------------------------------
def _target_root(root: Path) -> Path:
    try:
        real = root.expanduser().resolve(strict=True)
    except OSError as error:
        raise BadInputError(f"the target {root} does not exist", code="target-missing", field="--target") from error
    if not real.is_dir():
        raise BadInputError(f"the target {root} is not a directory", code="target-missing", field="--target")
    return real


def _unsafe_component(root: Path, path: Path) -> str | None:
    """A reason if ``path`` would leave ``root`` or pass through a symlink; else None."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return "outside the target"
    current = root
    for part in rel.parts[:-1]:
        current = current / part
        try:
            info = current.lstat()
        except FileNotFoundError:
            return None  # the rest will be created
        if stat.S_ISLNK(info.st_mode):
            return f"{current.relative_to(root)} is a symlink"
        if not stat.S_ISDIR(info.st_mode):
            return f"{current.relative_to(root)} is not a directory"
    return None


def _read_regular(path: Path) -> bytes | str | None:
    """The file's bytes, None if absent, or a reason string if it is not a regular file."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"cannot stat: {error}"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file (symlink or directory)"
    try:
        return path.read_bytes()
    except OSError as error:
        return f"cannot read: {error}"


def _mode_for(path: Path, after_mode: str | None, exists: bool) -> int:
    if exists:
        return stat.S_IMODE(path.stat().st_mode)
    return 0o755 if after_mode == "100755" else 0o644


# -- the entry point ---------------------------------------------------------------------------
def apply_decision(
    store: Store,
    decision_id: int | str,
    adapter_name: str,
    target: str | os.PathLike[str],
    *,
    options: dict[str, str] | None = None,
    audit_path: Path | None = None,
) -> ApplyResult:
    """Apply an approval decision through an adapter; returns ``wp-codebox/apply-result/v1``."""
    target_text = os.fspath(target)
    audit_file = audit_path or store.path.parent / "apply-audit.jsonl"
    decision = store.get_decision(decision_id)
    audit: dict[str, Any] = {
        "artifact_id": decision.artifact_id,
        "decision_id": decision.id,
        "content_digest": decision.content_digest,
        "approver": decision.approver,
        "approved_files": decision.approved_files,
        "adapter": adapter_name,
        "target": target_text,
    }
    try:
        adapter = load_adapter(adapter_name)
        key = adapter.target_key(target_text)
        audit["target"] = key
        previous = store.find_apply(decision.id, adapter_name, key)
        if previous is not None:
            result = previous.result.model_copy(update={"status": "already-applied"})
            append_apply_audit(
                audit_file,
                {
                    **audit,
                    "status": "success",
                    "noop": True,
                    "applied_at": previous.applied_at,
                    "result": result.to_wire(),
                },
            )
            return result
        plan = prepare_plan(store, decision)
        plan = ApplyPlan(**{**plan.__dict__, "options": dict(options or {})})
        audit["patch_sha256"] = plan.patch_sha256
        if plan.files:
            raw = adapter.apply(plan, target_text)
            try:
                result = normalize_apply_result(raw)
            except ApplyResultInvalid as error:
                raise CodeboxError(
                    f"Apply adapter returned an invalid result: {error}",
                    code="apply-result-invalid",
                    field="--adapter",
                    details={"adapter": adapter_name},
                    exit_code=None,
                ) from error
        else:  # every approved file was withheld: nothing for the adapter to do
            result = ApplyResult(adapter=adapter_name, status="nothing-applied", target={"path": key},
                                 applied_files=[], audit_reference=plan.audit_reference(adapter_name))
        if plan.withheld:
            withheld = [dict(w) for w in plan.withheld]
            result = result.model_copy(update={"target": {**result.target, "withheld": withheld}})
            audit["withheld"] = withheld
        try:
            store.record_apply(decision.id, adapter_name, key, result)
        except ConflictError as error:  # another process applied the same decision meanwhile
            earlier = store.find_apply(decision.id, adapter_name, key)
            if error.code != "already-applied" or earlier is None:
                raise
            result = earlier.result.model_copy(update={"status": "already-applied"})
    except CodeboxError as error:
        append_apply_audit(audit_file, {**audit, "status": "failure", "error": error.to_dict()})
        raise
    append_apply_audit(audit_file, {**audit, "status": "success", "result": result.to_wire()})
    return result

"""Apply-back: the preflight every adapter shares, and adapter discovery (the plan and the adapter base
class are :mod:`store.plan`).

:func:`apply_decision` is the one way approved changes leave a bundle:

1. only ``approve``/``approve-files`` decisions apply; the same decision applied again with the
   same adapter and target is a no-op that says so (``status: "already-applied"``);
2. the bundle is re-verified (fails closed), ``files/changed-files.json`` and ``files/patch.diff``
   are read **once** and the Mode B content digest is recomputed over those bytes and compared with
   the digest the decision recorded (:class:`ConflictError`, exit 5, on any mismatch);
3. every approved file must be a changed file (by sandbox ``path``, or a ``relativePath`` only one mount
   has: :mod:`store.changed_names`; an ambiguous one is refused, never bound to a mount) with a safe
   relative path, and the patch is cut down to the approved files' blocks; approved files inside
   ``.git``, ``node_modules`` or ``.codebox-apply`` (at any depth) are never written: they are left
   out and listed in the result's ``target.withheld``;
4. the adapter checks its target (each file must still have the baseline's ``before`` hash, or, with
   three-way apply, merge cleanly into it: :mod:`store.threeway` — conflicts are reported per file and
   per hunk and nothing is written) and writes;
5. the normalised ``wp-codebox/apply-result/v1`` is stored with the decision and every attempt,
   success or failure, is appended to ``apply-audit.jsonl`` (redacted).
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.contracts.apply import (
    APPROVING_ACTIONS,
    ApplyResult,
    ApplyResultInvalid,
    Decision,
    normalize_apply_result,
)
from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.errors import BadInputError, CodeboxError, ConflictError
from store.adapters.directory import DirectoryAdapter
from store.adapters.git import GitAdapter
from store.adapters.patch import PatchAdapter
from store.approved import ApprovedChange
from store.audit import append_apply_audit
from store.changed_names import ChangedFileNames, sandbox_key
from store.content import changed_entries, read_evidence, read_verified
from store.db import Store
from store.journal import STAGING_DIR
from store.patchtext import PatchBlock, PatchError, filter_patch, hunk_hashes
from store.plan import ApplyAdapter, ApplyPlan

ENTRY_POINT_GROUP = "codebox.apply_adapters"


# -- adapters --------------------------------------------------------------------------------


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
        cls = _BUILTIN[name]
    if not (isinstance(cls, type) and issubclass(cls, ApplyAdapter)):
        raise BadInputError(
            f"apply adapter {name!r} is not an ApplyAdapter subclass",
            code="adapter-unavailable",
            field="--adapter",
        )
    adapter = cls()
    return adapter


# The built-in adapters, also registered as entry points in pyproject.toml; these are used when Codebox
# runs from a source tree without installed package metadata.
_BUILTIN: dict[str, type[ApplyAdapter]] = {
    "directory": DirectoryAdapter,
    "git": GitAdapter,
    "patch": PatchAdapter,
}


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
    content = read_verified(bundle)  # fails closed; still the id and digest the store recorded
    patch_bytes, digest = content.patch, content.content_digest
    if digest != decision.content_digest:
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
    entries = content.changed
    names_of = ChangedFileNames(entries)  # sandbox paths; a relative name only when one mount has it
    approved: dict[str, ChangedFile] = {}  # sandbox path → entry
    outside: list[str] = []
    for name in decision.approved_files:
        found = names_of.find(name, field="approved_files")
        if found is None:
            outside.append(name)
            continue
        approved[sandbox_key(found)] = found
    if outside:
        raise ConflictError(
            f"approved file(s) not in changed-files.json: {', '.join(outside)}; nothing was applied",
            code="approved-file-not-changed",
            field="approved_files",
            details={"files": outside},
        )
    unsafe = [e.relativePath for e in approved.values() if not safe_relative_path(e.relativePath)]
    if unsafe:
        raise ConflictError(
            f"unsafe path(s) in changed-files.json: {', '.join(unsafe)}; nothing was applied",
            code="unsafe-path",
            field=layout.CHANGED_FILES,
            details={"files": unsafe},
        )
    withheld = []
    kept: list[ChangedFile] = []
    for entry in approved.values():
        folder = never_written_back(entry.relativePath)
        if folder is None:
            kept.append(entry)
        else:
            withheld.append({"file": entry.relativePath, "reason": "never-written-back", "folder": folder})
    if len({e.mountIndex for e in kept}) > 1:
        raise BadInputError(
            "the approved files span several mounts; approve and apply one mount's files at a time",
            code="multiple-mounts",
            field="approved_files",
        )
    chosen = {e.relativePath: e for e in kept}  # one mount's files: relativePath is unique among them
    names = {rel: {rel, e.path} for rel, e in chosen.items()}
    # a relativePath another mount changes too: its block is told apart by mount order
    occurrences = {rel: at for rel, e in chosen.items() if (at := names_of.occurrence(e)) is not None}
    try:
        filtered, blocks = filter_patch(patch_bytes, names, occurrences=occurrences)
    except PatchError as error:
        raise ConflictError(f"{error}; nothing was applied", code="patch-invalid", field=layout.PATCH) from error
    partial = _partial_files(decision, names_of, set(approved), chosen, blocks)
    whole = blocks  # each file's uncut block: a three-way apply recovers the baseline with it
    if partial:
        try:
            filtered, blocks = filter_patch(
                patch_bytes, names, {rel: frozenset(h) for rel, h in partial.items()}, occurrences
            )
        except PatchError as error:
            raise ConflictError(f"{error}; nothing was applied", code="patch-invalid", field=layout.PATCH) from error
    files = tuple(
        ApprovedChange.of(e, blocks[rel].text, partial.get(rel), whole[rel].text) for rel, e in chosen.items()
    )
    return ApplyPlan(
        decision=decision,
        bundle_id=bundle.bundle_id,
        bundle_dir=bundle_dir,
        content_digest=digest,
        files=files,
        patch=filtered,
        withheld=tuple(withheld),
    )


def _partial_files(
    decision: Decision,
    names_of: ChangedFileNames,
    approved: set[str],
    chosen: dict[str, ChangedFile],
    blocks: dict[str, PatchBlock],
) -> dict[str, tuple[str, ...]]:
    """The files the decision approves in part (docs/contracts.md, "Hunk selection"; ``approved`` holds the
    sandbox paths of every approved file, ``chosen`` the ones written, by relativePath): relativePath →
    approved hunk hashes, each checked against the file's block of the verified patch. A hash the
    patch does not have refuses the whole apply; a selection of every hunk is the file approved whole;
    files withheld (never written back) are skipped. The hashes come back in patch order."""
    partial: dict[str, tuple[str, ...]] = {}
    problems: list[str] = []
    for name, hashes in (decision.approved_hunks or {}).items():
        entry = names_of.find(name, field="approved_hunks")
        if entry is None or sandbox_key(entry) not in approved:
            problems.append(f"{name}: not an approved file")
            continue
        rel = entry.relativePath
        if chosen.get(rel) is not entry:
            continue  # withheld
        try:
            known = hunk_hashes(blocks[rel].text)
        except PatchError as error:
            problems.append(f"{rel}: {error}")
            continue
        unknown = sorted(set(hashes) - set(known))
        if unknown or not hashes:
            problems.append(f"{rel}: hunk(s) {', '.join(h[:12] for h in unknown) or '(none)'} not in the patch")
            continue
        if set(hashes) != set(known):
            partial[rel] = tuple(h for h in known if h in set(hashes))
    if problems:
        raise ConflictError(
            "the approved hunks do not match the bundle's patch: " + "; ".join(problems) + "; nothing was applied",
            code="hunk-mismatch",
            field="approved_hunks",
            details={"problems": problems},
        )
    return partial


def apply_hint(decision: Decision) -> str:
    """How to apply an approval, naming the adapter that will accept it: the directory adapter refuses a
    binary file (only git writes a binary patch), so a selection with one is pointed at git, or at a patch
    file ``git apply`` takes (README, "Apply-back"). Only a hint: the apply itself checks everything again."""
    approved = set(decision.approved_files)
    try:
        entries = changed_entries(read_evidence(Path(decision.bundle_directory or ""), layout.CHANGED_FILES))
    except CodeboxError:
        entries = []
    binary = sorted(e.relativePath for e in entries if e.binary and sandbox_key(e) in approved)
    if not binary:
        return f"apply it with: codebox apply {decision.id} --adapter directory --target <folder>"
    named = ", ".join(binary[:3]) + (f" and {len(binary) - 3} more" if len(binary) > 3 else "")
    return (
        f"apply it with: codebox apply {decision.id} --adapter git --target <git work tree> (binary: {named}, "
        "which the directory adapter does not write; or --adapter patch --target <file.patch>)"
    )


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
        **({"approved_hunks": decision.approved_hunks} if decision.approved_hunks else {}),
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
            result = ApplyResult(
                adapter=adapter_name,
                status="nothing-applied",
                target={"path": key},
                applied_files=[],
                audit_reference=plan.audit_reference(adapter_name),
            )
        partial = {f.relative_path: list(f.hunks) for f in plan.files if f.hunks is not None}
        if partial:  # which files were applied in part (docs/contracts.md, "Hunk selection")
            result = result.model_copy(update={"target": {**result.target, "approved_hunks": partial}})
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

"""Write the approved files into a target folder, all or nothing (see :mod:`store.journal`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from codebox_tui.contracts.apply import ApplyResult
from store.journal import JournalWrite, recover, target_lock, transactional_write
from store.plan import ApplyAdapter, ApplyPlan, target_root


class DirectoryAdapter(ApplyAdapter):
    """``--target`` is the host folder that corresponds to the mount root."""

    name = "directory"

    def apply(self, plan: ApplyPlan, target: str) -> ApplyResult:
        root = target_root(Path(target))
        with target_lock(root):
            recovered = recover(root)
            if plan.in_after_state(root):  # e.g. applied, then killed before the store recorded it
                return ApplyResult(
                    adapter=self.name,
                    status="already-applied",
                    target={"kind": "directory", "path": str(root)},
                    applied_files=plan.approved_files,
                    audit_reference=plan.audit_reference(self.name),
                )
            planned = plan.plan_writes(root)
            originals = {f.relative_path: f.before_sha256 for f in plan.files}
            transactional_write(
                root,
                [
                    JournalWrite(
                        relative_path=w.relative_path,
                        path=w.path,
                        content=w.content,
                        mode=w.mode,
                        expected_sha256=originals.get(w.relative_path),
                    )
                    for w in planned
                ],
            )
        target_info: dict[str, object] = {"kind": "directory", "path": str(root)}
        if recovered:
            target_info["recovered"] = recovered
        return ApplyResult(
            adapter=self.name,
            status="applied",
            target=target_info,
            applied_files=[w.relative_path for w in planned],
            audit_reference=plan.audit_reference(self.name) + "#" + hashlib.sha256(plan.patch).hexdigest()[:12],
        )

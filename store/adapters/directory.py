"""Write the approved files into a target folder, all or nothing (see :mod:`store.journal`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from codebox_tui.contracts.apply import ApplyResult
from store import threeway
from store.journal import JournalWrite, recover, target_lock, transactional_write
from store.plan import ApplyAdapter, ApplyPlan, merge_report, target_root


class DirectoryAdapter(ApplyAdapter):
    """``--target`` is the host folder that corresponds to the mount root."""

    name = "directory"
    # a plain folder has no history in which to review or undo a merge: three-way is opt-in (``--3way``)
    three_way_default = False

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
            planned = plan.plan_writes(root, three_way=threeway.enabled(plan.options, self.three_way_default))
            transactional_write(
                root,
                [
                    JournalWrite(
                        relative_path=w.relative_path,
                        path=w.path,
                        content=w.content,
                        mode=w.mode,
                        expected_sha256=w.expected_sha256,  # as planned: the baseline's, or what was merged into
                    )
                    for w in planned
                ],
            )
        target_info: dict[str, object] = {"kind": "directory", "path": str(root)}
        if recovered:
            target_info["recovered"] = recovered
        merged = merge_report(planned)
        if merged is not None:
            target_info["three_way"] = merged
        return ApplyResult(
            adapter=self.name,
            status="applied",
            target=target_info,
            applied_files=[w.relative_path for w in planned],
            audit_reference=plan.audit_reference(self.name) + "#" + hashlib.sha256(plan.patch).hexdigest()[:12],
        )

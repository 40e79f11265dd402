"""Export the approved subset of the patch as a file ``git apply`` accepts."""

from __future__ import annotations

import os
from pathlib import Path

from codebox_tui.contracts.apply import ApplyResult
from codebox_tui.errors import BadInputError
from store.plan import ApplyAdapter, ApplyPlan


class PatchAdapter(ApplyAdapter):
    """``--target`` is the patch file to write (its folder must exist; an existing file is replaced)."""

    name = "patch"

    def apply(self, plan: ApplyPlan, target: str) -> ApplyResult:
        path = Path(target).expanduser().resolve()
        if not path.parent.is_dir():
            raise BadInputError(f"the folder of {target} does not exist", code="target-missing", field="--target")
        if path.is_dir():
            raise BadInputError(f"{target} is a directory; give a file name", code="target-invalid", field="--target")
        data = plan.patch if plan.patch.endswith(b"\n") else plan.patch + b"\n"
        tmp = path.with_name(f".{path.name}.codebox-tmp-{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return ApplyResult(
            adapter=self.name,
            status="exported",
            target={"kind": "patch-file", "path": str(path), "patch_sha256": plan.patch_sha256},
            applied_files=plan.approved_files,
            audit_reference=plan.audit_reference(self.name),
        )

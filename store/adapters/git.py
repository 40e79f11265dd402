"""Apply the approved subset of the patch to a git work tree, optionally on a new branch with a commit.

Options (``codebox apply --branch NAME --commit --message TEXT``): ``branch`` creates and switches to
a new branch (and implies a commit), ``commit`` commits only the approved paths. ``git apply`` is
all-or-nothing; if anything after it fails, the work tree, index and branch are put back.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

from codebox_tui.contracts.apply import ApplyResult
from codebox_tui.errors import BadInputError, ConflictError
from store.apply import ApplyAdapter, ApplyPlan, _target_root

GIT_TIMEOUT_S = 120.0


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ConflictError(f"git {args[0]} failed: {error}", code="git-failed", field="--target") from error
    if check and done.returncode != 0:
        raise ConflictError(
            f"git {' '.join(args[:2])} failed: {done.stderr.strip() or done.stdout.strip()}",
            code="git-failed",
            field="--target",
        )
    return done


class GitAdapter(ApplyAdapter):
    """``--target`` is the work-tree folder that corresponds to the mount root."""

    name = "git"

    def apply(self, plan: ApplyPlan, target: str) -> ApplyResult:
        root = _target_root(Path(target))
        top = _git(root, "rev-parse", "--show-toplevel", check=False)
        if top.returncode != 0:
            raise BadInputError(f"{target} is not inside a git work tree", code="target-not-git", field="--target")
        toplevel = Path(top.stdout.strip()).resolve()
        prefix = root.relative_to(toplevel).as_posix()
        branch = plan.options.get("branch") or None
        commit = bool(branch) or plan.options.get("commit") in ("1", "true", "yes")
        if branch:
            if _git(toplevel, "check-ref-format", "--branch", branch, check=False).returncode != 0:
                raise BadInputError(f"{branch!r} is not a valid branch name", code="branch-invalid", field="--branch")
            if _git(toplevel, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0:
                raise ConflictError(f"branch {branch!r} already exists", code="branch-exists", field="--branch")
        planned = plan.plan_writes(
            root, allow_binary=True
        )  # before-hash conflicts and exact after bytes, nothing written yet
        paths = [(root / w.relative_path).relative_to(toplevel).as_posix() for w in planned]
        with tempfile.TemporaryDirectory(prefix="codebox-git-apply-") as tmp:
            patch_file = Path(tmp) / "approved.patch"
            patch_file.write_bytes(plan.patch if plan.patch.endswith(b"\n") else plan.patch + b"\n")
            apply_args = ["apply", "--whitespace=nowarn", "-p1"]
            if prefix != ".":
                apply_args.append(f"--directory={prefix}")
            if commit:
                apply_args.append("--index")
            check = _git(toplevel, *apply_args, "--check", str(patch_file), check=False)
            if check.returncode != 0:
                raise ConflictError(
                    f"git apply --check refused the approved patch: {check.stderr.strip()}; nothing was written",
                    code="target-conflict",
                    field="--target",
                )
            original = _current_ref(toplevel)
            created_branch = False
            applied = False
            try:
                if branch:
                    _git(toplevel, "switch", "-c", branch)
                    created_branch = True
                _git(toplevel, *apply_args, str(patch_file))
                applied = True
                after = {f.relative_path: f for f in plan.files}
                for write in planned:
                    data = write.path.read_bytes() if write.path.exists() else None
                    want = after[write.relative_path].after_sha256
                    if (data is None) != (write.action == "delete") or (
                        data is not None and hashlib.sha256(data).hexdigest() != want
                    ):
                        raise ConflictError(
                            f"git apply produced different content for {write.relative_path}",
                            code="target-conflict",
                            field="--target",
                        )
                sha = None
                if commit:
                    message = plan.options.get("message") or _message(plan)
                    _git(
                        toplevel,
                        *_identity(toplevel),
                        "commit",
                        "--no-verify",
                        "-q",
                        "-m",
                        message,
                        "--",
                        *paths,
                    )
                    sha = _git(toplevel, "rev-parse", "HEAD").stdout.strip()
            except BaseException:
                if applied:
                    _git(
                        toplevel,
                        *[a for a in apply_args if a != "--check"],
                        "-R",
                        str(patch_file),
                        check=False,
                    )
                if created_branch and original:
                    _git(toplevel, "switch", original, check=False)
                    _git(toplevel, "branch", "-D", branch or "", check=False)
                raise
        current_branch = _git(toplevel, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
        result = ApplyResult(
            adapter=self.name,
            status="committed" if commit else "applied",
            target={
                "kind": "git",
                "path": str(root),
                "repo": str(toplevel),
                "branch": current_branch or None,
            },
            applied_files=[w.relative_path for w in planned],
            audit_reference=plan.audit_reference(self.name),
            commit=sha,
            branch=current_branch or None,
        )
        return result


def _current_ref(toplevel: Path) -> str | None:
    name = _git(toplevel, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    if name:
        return name
    sha = _git(toplevel, "rev-parse", "--verify", "-q", "HEAD", check=False).stdout.strip()
    return sha or None


def _identity(toplevel: Path) -> list[str]:
    email = _git(toplevel, "config", "user.email", check=False).stdout.strip()
    name = _git(toplevel, "config", "user.name", check=False).stdout.strip()
    args: list[str] = []
    if not name:
        args += ["-c", "user.name=Codebox"]
    if not email:
        args += ["-c", "user.email=codebox@localhost"]
    return args


def _message(plan: ApplyPlan) -> str:
    decision = plan.decision
    files = len(plan.files)
    lines = [
        f"Apply {files} approved file{'s' if files != 1 else ''} from a Codebox sandbox",
        "",
        f"Decision {decision.id} ({decision.action}) by {decision.approver}"
        + (f": {decision.reason}" if decision.reason else ""),
        "",
        f"Codebox-Bundle: {plan.bundle_id}",
        f"Codebox-Content-Digest: {plan.content_digest}",
        f"Approved-by: {decision.approver}",
    ]
    return "\n".join(lines) + "\n"

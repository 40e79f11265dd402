"""Apply the approved subset of the patch to a git work tree, optionally on a new branch with a commit.

Options (``codebox apply --branch NAME --commit --message TEXT``): ``branch`` creates and switches to
a new branch (and implies a commit), ``commit`` commits only the approved paths. ``git apply`` is
all-or-nothing; if anything after it fails, the work tree, index and branch are put back.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from pathlib import Path, PurePosixPath

from codebox_tui.bundle.diff import diff_file
from codebox_tui.bundle.hostgit import HostGit, HostGitError, user_identity
from codebox_tui.contracts.apply import ApplyResult
from codebox_tui.errors import BadInputError, ConflictError
from store import threeway
from store.approved import ApprovedChange
from store.patchtext import split_blocks
from store.plan import ApplyAdapter, ApplyPlan, PlannedWrite, merge_report, target_root

GIT_TIMEOUT_S = 120.0


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    # hardened (codebox_tui/bundle/hostgit.py): the target's repository configuration may name hooks,
    # filters or a signing program; none of them runs (docs/security-host.md)
    try:
        raw = HostGit(cwd).run(*args, timeout=GIT_TIMEOUT_S)
    except HostGitError as error:
        raise ConflictError(f"git {args[0]} failed: {error}", code="git-failed", field="--target") from error
    done = subprocess.CompletedProcess(
        raw.args,
        raw.returncode,
        raw.stdout.decode("utf-8", errors="replace"),
        raw.stderr.decode("utf-8", errors="replace"),
    )
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
    # a work tree's history shows (and can undo) what a merge did: three-way is on by default, so a
    # branch that moved on elsewhere in a file still takes the approved hunks (``--no-3way``: strict)
    three_way_default = True

    def apply(self, plan: ApplyPlan, target: str) -> ApplyResult:
        root = target_root(Path(target))
        top = _git(root, "rev-parse", "--show-toplevel", check=False)
        if top.returncode != 0:
            raise BadInputError(f"{target} is not inside a git work tree", code="target-not-git", field="--target")
        toplevel = Path(top.stdout.strip()).resolve()
        if not root.is_relative_to(toplevel):  # e.g. a core.worktree in the repository's config
            raise BadInputError(
                f"{target} is not inside the work tree its repository names ({toplevel}); nothing was written",
                code="target-not-git",
                field="--target",
            )
        prefix = root.relative_to(toplevel).as_posix()
        branch = plan.options.get("branch") or None
        commit = bool(branch) or plan.options.get("commit") in ("1", "true", "yes")
        if branch:
            if _git(toplevel, "check-ref-format", "--branch", branch, check=False).returncode != 0:
                raise BadInputError(f"{branch!r} is not a valid branch name", code="branch-invalid", field="--branch")
            if _git(toplevel, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0:
                raise ConflictError(f"branch {branch!r} already exists", code="branch-exists", field="--branch")

        def baseline(change: ApprovedChange) -> tuple[bytes, str] | None:
            base = threeway.baseline_from_bundle(plan.bundle_dir, change)
            if base is not None:
                return base, "bundle"
            blob = threeway.baseline_from_git(toplevel, change)  # the blob the patch's index line names
            return (blob, "git") if blob is not None else None

        planned = plan.plan_writes(
            root,
            allow_binary=True,
            three_way=threeway.enabled(plan.options, self.three_way_default),
            baseline=baseline,
        )  # before-hash conflicts (or three-way merges) and exact after bytes, nothing written yet
        patch_bytes = _patch_for(plan, planned)
        modes = _expected_modes(plan, root)  # refuses a mode change the approved entries do not record
        paths = [(root / w.relative_path).relative_to(toplevel).as_posix() for w in planned]
        with tempfile.TemporaryDirectory(prefix="codebox-git-apply-") as tmp:
            patch_file = Path(tmp) / "approved.patch"
            patch_file.write_bytes(patch_bytes if patch_bytes.endswith(b"\n") else patch_bytes + b"\n")
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
                    if write.content is not None:  # computed and baseline-checked (a part: no after hash)
                        want = hashlib.sha256(write.content).hexdigest()
                    if (data is None) != (write.action == "delete") or (
                        data is not None and hashlib.sha256(data).hexdigest() != want
                    ):
                        raise ConflictError(
                            f"git apply produced different content for {write.relative_path}",
                            code="target-conflict",
                            field="--target",
                        )
                    if data is not None and _git_mode(write.path) != modes[write.relative_path]:
                        raise ConflictError(
                            f"git apply gave {write.relative_path} mode {_git_mode(write.path)}, not the approved "
                            f"{modes[write.relative_path]}",
                            code="unapproved-mode-change",
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
        target_info: dict[str, object] = {
            "kind": "git",
            "path": str(root),
            "repo": str(toplevel),
            "branch": current_branch or None,
        }
        merged = merge_report(planned)
        if merged is not None:
            target_info["three_way"] = merged
        result = ApplyResult(
            adapter=self.name,
            status="committed" if commit else "applied",
            target=target_info,
            applied_files=[w.relative_path for w in planned],
            audit_reference=plan.audit_reference(self.name),
            commit=sha,
            branch=current_branch or None,
        )
        return result


def _patch_for(plan: ApplyPlan, planned: list[PlannedWrite]) -> bytes:
    """What ``git apply`` gets: the approved patch, with the block of each file merged three-way replaced
    by a block from the target's current bytes to the merged bytes (exact, so ``git apply`` and its
    reverse for a rollback apply it as computed)."""
    merged = {w.relative_path: w for w in planned if w.merge is not None}
    if not merged:
        return plan.patch
    out: list[bytes] = []
    for block in split_blocks(plan.patch):
        owner = next((rel for rel in merged if rel in block.paths), None)
        if owner is None:
            out.append(block.text)
            continue
        write = merged[owner]
        current = write.path.read_bytes()
        mode = _git_mode(write.path)
        diff = diff_file(owner, current, write.content, mode, mode)
        if diff is not None:  # None: the target already has the merged bytes
            out.append(diff.text.encode("utf-8"))
    return b"".join(out)


_MODE_LINE = re.compile(rb"^(?:new mode|new file mode) ([0-7]{6})$")


def _git_mode(path: Path) -> str:
    return "100755" if path.stat().st_mode & 0o111 else "100644"


def _expected_modes(plan: ApplyPlan, root: Path) -> dict[str, str]:
    """The mode each written file must end with: the ``afterMode`` its approved entry records, else its
    current mode (a modified file) or ``100644`` (an added one). A patch block that sets another mode is
    refused before anything is written: the reviewed change list is what was approved, not the patch's
    headers."""
    expected: dict[str, str] = {}
    refused: list[str] = []
    for change in plan.files:
        if change.status == "deleted":
            continue
        path = root.joinpath(*PurePosixPath(change.relative_path).parts)
        fallback = _git_mode(path) if change.status == "modified" and path.is_file() else "100644"
        want = change.after_mode if change.after_mode in ("100644", "100755") else fallback
        expected[change.relative_path] = want
        for line in change.block.split(b"\n"):
            if line.startswith((b"@@", b"GIT binary patch")):
                break
            match = _MODE_LINE.match(line.rstrip(b"\r"))
            if match and match.group(1).decode() != want:
                refused.append(f"{change.relative_path} ({match.group(1).decode()}, approved {want})")
    if refused:
        raise ConflictError(
            "the patch changes the mode of file(s) beyond what was approved: "
            + ", ".join(refused)
            + "; nothing was written",
            code="unapproved-mode-change",
            field="--target",
            details={"files": refused},
        )
    return expected


def _current_ref(toplevel: Path) -> str | None:
    name = _git(toplevel, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    if name:
        return name
    sha = _git(toplevel, "rev-parse", "--verify", "-q", "HEAD", check=False).stdout.strip()
    return sha or None


def _identity(toplevel: Path) -> list[str]:
    """The repository's identity, else the user's global one (host git reads no global config), else
    Codebox's."""
    email = _git(toplevel, "config", "user.email", check=False).stdout.strip()
    name = _git(toplevel, "config", "user.name", check=False).stdout.strip()
    if not (name and email):
        global_name, global_email = user_identity()
        name, email = name or global_name, email or global_email
    return ["-c", f"user.name={name or 'Codebox'}", "-c", f"user.email={email or 'codebox@localhost'}"]


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
    lines += [
        f"Codebox-Partial: {f.relative_path} ({len(f.hunks)} approved hunk(s))"
        for f in plan.files
        if f.hunks is not None
    ]  # docs/contracts.md, "Hunk selection"
    return "\n".join(lines) + "\n"

"""Three-way apply onto a target that moved on since the run (README, "Review and decide"; docs/contracts.md,
"Three-way apply"): approved hunks merge into a file the maintainer edited elsewhere, and any approved hunk
that touches the maintainer's lines refuses the apply, writing nothing. Real capture, real SQLite, real git
(``git merge-file``) and real folders."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from codebox_tui.errors import ConflictError
from store import threeway
from store.apply import apply_decision, prepare_plan
from store.db import Store
from store.decisions import decide, register_bundle
from tests.factories.apply_back import CHANGES, Captured, git, git_repo, tree
from tests.factories.holds import codebox_in_process
from tests.factories.hunks import BIG_BEFORE, EDITS, big_after, captured

MAINTAINER_LINE = 10  # far from the sandbox's edits at lines 3, 20 and 37
CLASHING_LINE = 20  # the line the sandbox's second hunk changes


def edited(data: bytes, line: int, text: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    lines[line - 1] = text
    return b"".join(lines)


def expected(chosen: set[int], maintainer: dict[int, bytes]) -> bytes:
    """``big.txt`` with the chosen sandbox edits and the maintainer's own lines, built by hand."""
    out = []
    for number, line in enumerate(BIG_BEFORE.splitlines(keepends=True), start=1):
        out.append(maintainer.get(number, EDITS[number] if number in chosen else line))
    return b"".join(out)


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "home" / "codebox.sqlite3")
    yield s
    s.close()


def moved_repo(cap: Captured, tmp_path: Path, line: int = MAINTAINER_LINE) -> Path:
    """The maintainer's branch after the run: one commit editing ``big.txt`` at ``line``."""
    repo = git_repo(cap, tmp_path)
    big = repo / "big.txt"
    big.write_bytes(edited(big.read_bytes(), line, b"maintainer's line %d\n" % line))
    git(repo, "commit", "-q", "-am", "maintainer moves on")
    return repo


def snapshot(repo: Path) -> tuple[dict[str, bytes], str, str]:
    return tree(repo), git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")


def test_git_merges_approved_hunks_into_a_file_edited_elsewhere(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    repo = moved_repo(cap, tmp_path)

    result = apply_decision(store, decision.id, "git", repo, options={"commit": "true"})

    assert result.status == "committed"
    mine = {MAINTAINER_LINE: b"maintainer's line 10\n"}
    assert (repo / "big.txt").read_bytes() == expected(set(EDITS), mine)  # both edits present
    assert (repo / "demo.php").read_bytes() == CHANGES["demo.php"]  # unmoved files applied as before
    report = result.target["three_way"]
    assert (report["merged_files"], report["merged_hunks"], report["conflicting_hunks"]) == (1, 3, 0)
    (big,) = report["files"]
    assert big["file"] == "big.txt" and big["status"] == "merged" and big["baseline"] == "bundle"
    assert [h["number"] for h in big["hunks"]] == [1, 2, 3]
    assert git(repo, "status", "--porcelain") == ""
    assert "maintainer's line 10" in git(repo, "show", "HEAD:big.txt")
    stored = store.get_decision(decision.id).applies[0].result
    assert stored.target["three_way"]["merged_files"] == 1  # kept with the decision


def test_git_refuses_a_conflicting_hunk_and_leaves_the_work_tree_byte_identical(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    repo = moved_repo(cap, tmp_path, CLASHING_LINE)
    before = snapshot(repo)

    with pytest.raises(ConflictError) as caught:
        apply_decision(store, decision.id, "git", repo, options={"commit": "true"})

    assert caught.value.code == "target-conflict" and caught.value.exit_code == 5
    assert snapshot(repo) == before  # nothing written: files, HEAD, index and status as they were
    (conflict,) = caught.value.details["conflicts"]
    assert conflict["file"] == "big.txt" and "hunk(s) 2" in conflict["reason"]
    statuses = {h["number"]: h["status"] for h in conflict["hunks"]}
    assert statuses == {1: "merged", 2: "conflict", 3: "merged"}
    report = caught.value.details["three_way"]
    assert (report["conflicting_files"], report["conflicting_hunks"]) == (1, 1)
    assert "1 conflicting hunk(s)" in caught.value.details["hint"]
    assert store.get_decision(decision.id).applies == []
    assert not list(repo.rglob("*.orig")) and b"<<<<<<<" not in (repo / "big.txt").read_bytes()


def test_partial_approval_merges_only_the_approved_hunks_into_a_moved_target(tmp_path: Path, store: Store) -> None:
    """The maintainer changed line 20, which only the unapproved hunk 2 touches: hunks 1 and 3 merge."""
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve-files", approver="ana", hunks={"big.txt": [1, 3]})
    repo = moved_repo(cap, tmp_path, CLASHING_LINE)

    result = apply_decision(store, decision.id, "git", repo)

    assert result.status == "applied"
    assert (repo / "big.txt").read_bytes() == expected({3, 37}, {CLASHING_LINE: b"maintainer's line 20\n"})
    (big,) = result.target["three_way"]["files"]
    assert [(h["number"], h["status"]) for h in big["hunks"]] == [(1, "merged"), (3, "merged")]
    assert result.target["approved_hunks"] == {"big.txt": [h["sha256"] for h in big["hunks"]]}

    # the same approval with the clashing hunk 2 instead of 3 is refused, writing nothing
    second = decide(store, str(cap.bundle_dir), "approve-files", approver="ana", hunks={"big.txt": [2]})
    other = tmp_path / "other"
    shutil.copytree(repo, other)
    before = snapshot(other)
    with pytest.raises(ConflictError):
        apply_decision(store, second.id, "git", other)
    assert snapshot(other) == before


def test_no_3way_keeps_the_strict_refusal_for_git(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    repo = moved_repo(cap, tmp_path)
    before = snapshot(repo)
    with pytest.raises(ConflictError) as caught:
        apply_decision(store, decision.id, "git", repo, options={threeway.OPTION: "off"})
    assert caught.value.details["conflicts"] == [
        {"file": "big.txt", "reason": "changed since the sandbox ran (before hash)"}
    ]
    assert "--3way" in caught.value.details["hint"]
    assert snapshot(repo) == before


def test_directory_is_strict_by_default_and_merges_with_3way(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    target = tmp_path / "target"
    shutil.copytree(cap.baseline, target)
    (target / "big.txt").write_bytes(edited(BIG_BEFORE, MAINTAINER_LINE, b"maintainer's line 10\n"))
    before = tree(target)

    with pytest.raises(ConflictError):  # a plain folder: three-way is opt-in
        apply_decision(store, decision.id, "directory", target)
    assert tree(target) == before

    result = apply_decision(store, decision.id, "directory", target, options={threeway.OPTION: "on"})
    assert result.status == "applied"
    assert (target / "big.txt").read_bytes() == expected(set(EDITS), {MAINTAINER_LINE: b"maintainer's line 10\n"})
    assert (target / "demo.php").read_bytes() == CHANGES["demo.php"]
    assert not (target / "includes" / "old.php").exists()
    assert result.target["three_way"]["merged_hunks"] == 3


def test_directory_3way_refuses_a_conflict_and_writes_nothing(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(
        store, str(cap.bundle_dir), "approve-files", approver="ana", files=["demo.php"], hunks={"big.txt": [3]}
    )
    target = tmp_path / "target"
    shutil.copytree(cap.baseline, target)
    (target / "big.txt").write_bytes(edited(BIG_BEFORE, 37, b"the maintainer kept line 37\n"))
    before = tree(target)
    with pytest.raises(ConflictError) as caught:
        apply_decision(store, decision.id, "directory", target, options={threeway.OPTION: "on"})
    assert tree(target) == before  # demo.php, which would apply cleanly, is not written either
    (conflict,) = caught.value.details["conflicts"]
    assert [(h["number"], h["status"]) for h in conflict["hunks"]] == [(3, "conflict")]


def test_3way_keeps_the_symlink_check(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve-files", approver="ana", hunks={"big.txt": [1]})
    target = tmp_path / "target"
    shutil.copytree(cap.baseline, target)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(edited(BIG_BEFORE, MAINTAINER_LINE, b"elsewhere\n"))
    (target / "big.txt").unlink()
    (target / "big.txt").symlink_to(outside)
    with pytest.raises(ConflictError) as caught:
        apply_decision(store, decision.id, "directory", target, options={threeway.OPTION: "on"})
    assert "not a regular file" in caught.value.details["conflicts"][0]["reason"]
    assert outside.read_bytes() == edited(BIG_BEFORE, MAINTAINER_LINE, b"elsewhere\n")


def test_the_git_baseline_is_the_blob_the_patch_names(tmp_path: Path, store: Store) -> None:
    """Without the bundle's after copy, the git adapter's base is the patch's preimage blob from the target
    repository, checked against the recorded before hash."""
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    repo = moved_repo(cap, tmp_path)
    plan = prepare_plan(store, decision)
    big = next(f for f in plan.files if f.relative_path == "big.txt")
    assert threeway.baseline_from_bundle(plan.bundle_dir, big) == BIG_BEFORE
    assert threeway.baseline_from_git(repo, big) == BIG_BEFORE
    assert hashlib.sha256(BIG_BEFORE).hexdigest() == big.before_sha256
    forged = type(big)(**{**big.__dict__, "before_sha256": "0" * 64})
    assert threeway.baseline_from_git(repo, forged) is None  # a blob that does not hash right is no base
    assert threeway.baseline_from_bundle(plan.bundle_dir, forged) is None


def test_a_forged_artifact_path_never_reads_a_host_file(tmp_path: Path, store: Store) -> None:
    """``artifactPath`` comes from changed-files.json: the baseline is only ever read from inside the
    bundle's evidence folder, whatever hash the entry claims."""
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    plan = prepare_plan(store, decision)
    big = next(f for f in plan.files if f.relative_path == "big.txt")
    host = tmp_path / "host-file.txt"
    host.write_bytes(big_after(set(EDITS)))  # the after bytes, so only the path check can refuse it
    inside_link = cap.bundle_dir / "files" / "link.txt"
    inside_link.symlink_to(host)
    for forged in (str(host), "../host-file.txt", "files/../../host-file.txt", "files/link.txt", "files"):
        changed = type(big)(**{**big.__dict__, "artifact_path": forged})
        assert threeway.baseline_from_bundle(plan.bundle_dir, changed) is None, forged
    assert threeway.baseline_from_bundle(plan.bundle_dir, big) == BIG_BEFORE


# -- CLI ------------------------------------------------------------------------------------------
def codebox(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``codebox ARGS`` through the real entry point, in-process (decisions and apply start no sandbox)."""
    return codebox_in_process(home, *args)


def test_cli_apply_prints_merged_and_conflicting_counts(tmp_path: Path) -> None:
    cap = captured(tmp_path)
    home = tmp_path / "cli-home"
    made = codebox(home, "review", "approve", str(cap.bundle_dir), "--approver", "ana", "--json")
    assert made.returncode == 0, made.stderr
    decision = str(json.loads(made.stdout)["id"])

    clash = moved_repo(cap, tmp_path, CLASHING_LINE)
    refused = codebox(home, "apply", decision, "--adapter", "git", "--target", str(clash))
    assert refused.returncode == 5
    assert "three-way: 0 file(s) merged (2 hunk(s)), 1 conflicting hunk(s); nothing was written" in refused.stderr
    assert "big.txt: three-way merge conflicts in approved hunk(s) 2" in refused.stderr

    fine = tmp_path / "fine"
    shutil.copytree(cap.baseline, fine)
    git(fine, "init", "-q", "-b", "main")
    git(fine, "add", "-A")
    git(fine, "-c", "user.email=d@example.test", "-c", "user.name=D", "commit", "-q", "-m", "base")
    (fine / "big.txt").write_bytes(edited(BIG_BEFORE, MAINTAINER_LINE, b"maintainer's line 10\n"))
    strict = codebox(home, "apply", decision, "--adapter", "git", "--target", str(fine), "--no-3way")
    assert strict.returncode == 5 and "--3way merges" in strict.stderr
    applied = codebox(home, "apply", decision, "--adapter", "git", "--target", str(fine))
    assert applied.returncode == 0, applied.stderr
    assert "three-way: 1 file(s) merged (3 hunk(s)), 0 conflicting hunk(s): big.txt" in applied.stdout
    assert (fine / "big.txt").read_bytes() == expected(set(EDITS), {MAINTAINER_LINE: b"maintainer's line 10\n"})
    assert big_after(set(EDITS)) != (fine / "big.txt").read_bytes()

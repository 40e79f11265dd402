"""Apply-back end to end: bundles from the real capture, real directories, real git, real SQLite.

Each test builds a baseline folder, changes files the way a sandbox would through a read-write mount,
captures a bundle with :func:`codebox_tui.bundle.capture.capture_bundle`, decides, and applies to
a pristine copy of the baseline (the host folder that corresponds to the mount root).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codebox_tui.contracts.apply import ApplyResult
from codebox_tui.errors import BadInputError, ConflictError
from store.apply import apply_decision
from store.audit import read_audit
from store.db import Store
from store.decisions import decide, prune_discarded, register_bundle
from tests.factories.apply_back import (
    CHANGES,
    MOUNT_TARGET,
    Captured,
    capture,
    expected_tree,
    git,
    git_repo,
    reseal,
    tree,
    verify_ok,
)
from tests.factories.holds import codebox_in_process


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "home" / "codebox.sqlite3")
    yield s
    s.close()


def fresh_target(cap: Captured, tmp_path: Path, name: str = "target") -> Path:
    target = tmp_path / name
    shutil.copytree(cap.baseline, target)
    return target


def audit_path(store: Store) -> Path:
    return store.path.parent / "apply-audit.jsonl"


# -- directory adapter ----------------------------------------------------------------------
def test_subset_approval_writes_only_the_approved_files(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    register_bundle(store, cap.bundle_dir)
    approved = ["demo.php", "includes/old.php", "includes/new/extra.php"]
    decision = decide(
        store,
        str(cap.bundle_dir),
        "approve-files",
        approver="ana",
        reason="not the readme",
        files=[approved[0], MOUNT_TARGET + "/" + approved[1], approved[2]],
    )
    assert decision.approved_relative_paths == approved
    assert decision.approved_files == [MOUNT_TARGET + "/" + rel for rel in approved]  # sandbox paths
    target = fresh_target(cap, tmp_path)
    result = apply_decision(store, decision.id, "directory", target)
    assert isinstance(result, ApplyResult)
    assert result.status == "applied" and sorted(result.applied_files) == sorted(approved)
    assert tree(target) == expected_tree(approved)
    assert not (target / ".codebox-apply").exists()
    stored = store.get_decision(decision.id)
    assert stored.applies[0].result.applied_files == result.applied_files
    assert store.decision_bundle(decision.id).status == "applied"
    [line] = read_audit(audit_path(store))
    assert line["schema"] == "wp-codebox/apply-audit/v1" and line["status"] == "success"
    assert line["approved_files"] == decision.approved_files
    raw = audit_path(store).read_text()
    assert "return 2" not in raw  # no patch bodies in the audit


def test_applying_the_same_decision_twice_is_a_noop_that_says_so(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    target = fresh_target(cap, tmp_path)
    first = apply_decision(store, decision.id, "directory", target)
    assert first.status == "applied"
    assert tree(target) == expected_tree(list(CHANGES))
    second = apply_decision(store, decision.id, "directory", target)
    assert second.status == "already-applied"
    assert second.applied_files == first.applied_files
    assert tree(target) == expected_tree(list(CHANGES))
    assert [entry.get("noop") for entry in read_audit(audit_path(store))] == [None, True]


def test_conflicting_target_refuses_per_file_and_writes_nothing(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    target = fresh_target(cap, tmp_path)
    (target / "readme.txt").write_bytes(b"edited on the host after the run\n")
    (target / "includes" / "new").mkdir(parents=True)
    (target / "includes" / "new" / "extra.php").write_bytes(b"<?php // host version\n")
    before = tree(target)
    with pytest.raises(ConflictError) as info:
        apply_decision(store, decision.id, "directory", target)
    assert info.value.code == "target-conflict" and info.value.exit_code == 5
    files = {c["file"] for c in info.value.details["conflicts"]}
    assert files == {"readme.txt", "includes/new/extra.php"}
    assert tree(target) == before
    assert read_audit(audit_path(store))[-1]["status"] == "failure"
    assert store.get_decision(decision.id).applies == []


def test_tampered_bundle_is_refused_and_target_untouched(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    patch = cap.bundle_dir / "files" / "patch.diff"
    patch.write_bytes(patch.read_bytes().replace(b"return 2", b"return system($_GET['x'])"))
    target = fresh_target(cap, tmp_path)
    before = tree(target)
    with pytest.raises(ConflictError) as info:
        apply_decision(store, decision.id, "directory", target)
    assert info.value.code == "bundle-invalid"
    assert tree(target) == before


def test_digest_mismatch_is_refused_even_when_the_bundle_verifies(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    patch = cap.bundle_dir / "files" / "patch.diff"
    patch.write_bytes(patch.read_bytes().replace(b"Stable tag: 1.1", b"Stable tag: 6.6"))
    reseal(cap.bundle_dir)
    assert verify_ok(cap.bundle_dir)  # the manifest is consistent again; only the content digest knows
    target = fresh_target(cap, tmp_path)
    before = tree(target)
    with pytest.raises(ConflictError) as info:
        apply_decision(store, decision.id, "directory", target)
    assert info.value.code == "digest-mismatch" and info.value.exit_code == 5
    assert tree(target) == before


def test_approved_file_outside_the_bundle_is_refused(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    bundle = register_bundle(store, cap.bundle_dir)
    with pytest.raises(BadInputError, match="not a changed file"):
        decide(store, bundle.bundle_id, "approve-files", approver="ana", files=["includes/keep.php"])
    # a decision written straight into the store (another tool, an old version) is still checked at apply
    decision = store.record_decision(
        bundle.bundle_id,
        "approve-files",
        approver="ana",
        approved_files=["demo.php", "wp-config.php"],
        content_digest=bundle.content_digest,
    )
    target = fresh_target(cap, tmp_path)
    before = tree(target)
    with pytest.raises(ConflictError) as info:
        apply_decision(store, decision.id, "directory", target)
    assert info.value.code == "approved-file-not-changed"
    assert tree(target) == before


def test_path_traversal_in_changed_files_is_refused(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    files_dir = cap.bundle_dir / "files"
    cf = json.loads((files_dir / "changed-files.json").read_text())
    for entry in cf["files"]:
        if entry["relativePath"] == "includes/new/extra.php":
            entry["relativePath"] = "../escaped.php"
            entry["path"] = MOUNT_TARGET + "/../escaped.php"
    (files_dir / "changed-files.json").write_text(json.dumps(cf, indent=2) + "\n")
    patch = files_dir / "patch.diff"
    patch.write_bytes(patch.read_bytes().replace(b"includes/new/extra.php", b"../escaped.php"))
    review = files_dir / "review.json"
    review.write_bytes(review.read_bytes().replace(b"includes/new/extra.php", b"../escaped.php"))
    reseal(cap.bundle_dir)
    bundle = register_bundle(store, cap.bundle_dir)
    decision = store.record_decision(
        bundle.bundle_id,
        "approve-files",
        approver="mallory",
        approved_files=["../escaped.php", "demo.php"],
        content_digest=bundle.content_digest,
    )
    target = fresh_target(cap, tmp_path)
    before = tree(target)
    with pytest.raises(ConflictError) as info:
        apply_decision(store, decision.id, "directory", target)
    assert info.value.code == "unsafe-path"
    assert tree(target) == before
    assert not (tmp_path / "escaped.php").exists()


def test_symlinked_directory_in_target_is_a_conflict(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    decision = decide(store, str(cap.bundle_dir), "approve-files", approver="ana", files=["includes/new/extra.php"])
    target = fresh_target(cap, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(target / "includes")
    (target / "includes").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConflictError, match="symlink"):
        apply_decision(store, decision.id, "directory", target)
    assert list(outside.iterdir()) == []


def test_discard_and_iterate_are_not_applicable_and_keep_evidence(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    iterate = decide(store, str(cap.bundle_dir), "iterate", approver="ana", reason="rename the function")
    with pytest.raises(BadInputError, match="only approve"):
        apply_decision(store, iterate.id, "directory", fresh_target(cap, tmp_path))
    decide(store, iterate.artifact_id, "discard", approver="ana")
    assert store.get_bundle(iterate.artifact_id).status == "discarded"
    assert (cap.bundle_dir / "manifest.json").is_file()  # discard never deletes evidence
    assert [b.bundle_id for b in prune_discarded(store, dry_run=True)] == [iterate.artifact_id]
    assert cap.bundle_dir.is_dir()
    prune_discarded(store)  # only an explicit prune deletes it
    assert not cap.bundle_dir.exists()
    assert store.get_bundle(iterate.artifact_id).status == "pruned"


# -- git adapter ----------------------------------------------------------------------------


def test_git_adapter_commits_the_approved_subset_on_a_new_branch(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    approved = ["demo.php", "includes/old.php"]
    decision = decide(store, str(cap.bundle_dir), "approve-files", approver="ana", files=approved)
    repo = git_repo(cap, tmp_path)
    result = apply_decision(store, decision.id, "git", repo, options={"branch": "codebox/demo"})
    assert result.status == "committed" and result.branch == "codebox/demo"
    assert result.commit == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "status", "--porcelain") == ""
    changed = git(repo, "show", "--name-status", "--format=", "HEAD").split("\n")
    assert sorted(line for line in changed if line) == ["D\tincludes/old.php", "M\tdemo.php"]
    assert tree(repo) == expected_tree(approved)
    assert "Codebox-Content-Digest: " + decision.content_digest in git(repo, "log", "-1", "--format=%B")
    assert git(repo, "rev-parse", "main").strip() != result.commit


def test_git_adapter_in_a_subdirectory_without_commit(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q", "-b", "main")
    shutil.copytree(cap.baseline, outer / "wp-content" / "plugins" / "demo")
    git(outer, "add", "-A")
    git(outer, "-c", "user.email=d@e.test", "-c", "user.name=D", "commit", "-q", "-m", "base")
    target = outer / "wp-content" / "plugins" / "demo"
    result = apply_decision(store, decision.id, "git", target)
    assert result.status == "applied" and result.commit is None
    assert tree(target) == expected_tree(list(CHANGES))


def test_git_adapter_conflict_leaves_repo_and_branches_untouched(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    repo = git_repo(cap, tmp_path)
    (repo / "demo.php").write_bytes(b"<?php // someone committed a rewrite\n")
    git(repo, "commit", "-qam", "host change")
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(ConflictError) as info:
        apply_decision(store, decision.id, "git", repo, options={"branch": "codebox/x"})
    assert [c["file"] for c in info.value.details["conflicts"]] == ["demo.php"]
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""
    assert "codebox/x" not in git(repo, "branch", "--list")


# -- patch adapter --------------------------------------------------------------------------
def test_patch_adapter_exports_a_subset_git_apply_accepts(tmp_path: Path, store: Store) -> None:
    cap = capture(tmp_path)
    approved = ["readme.txt", "includes/new/extra.php"]
    decision = decide(store, str(cap.bundle_dir), "approve-files", approver="ana", files=approved)
    out = tmp_path / "approved.patch"
    result = apply_decision(store, decision.id, "patch", out)
    assert result.status == "exported" and result.target["path"] == str(out.resolve())
    text = out.read_bytes()
    assert hashlib.sha256(text).hexdigest() == result.target["patch_sha256"]
    assert b"demo.php" not in text and b"old.php" not in text
    repo = git_repo(cap, tmp_path)
    git(repo, "apply", "--check", str(out))
    git(repo, "apply", str(out))
    assert tree(repo) == expected_tree(approved)


# -- CLI ------------------------------------------------------------------------------------
def codebox(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``codebox ARGS`` through the real entry point, in-process (decisions and apply start no sandbox)."""
    return codebox_in_process(home, *args)


def test_cli_review_and_apply_with_json(tmp_path: Path) -> None:
    cap = capture(tmp_path)
    home = tmp_path / "cli-home"
    approved = codebox(
        home,
        "review",
        "approve-files",
        str(cap.bundle_dir),
        "--file",
        "demo.php",
        "--approver",
        "ana",
        "--json",
    )
    assert approved.returncode == 0, approved.stderr
    decision = json.loads(approved.stdout)
    assert decision["schema"] == "wp-codebox/artifact-review-decision/v1"
    listed = json.loads(codebox(home, "review", "list", "--json").stdout)
    assert [b["status"] for b in listed["bundles"]] == ["approved"]
    shown = json.loads(codebox(home, "review", "show", decision["artifact_id"][:30], "--json").stdout)
    assert shown["contentDigestVerified"] is True and len(shown["decisions"]) == 1
    target = fresh_target(cap, tmp_path)
    applied = codebox(home, "apply", str(decision["id"]), "--adapter", "directory", "--target", str(target), "--json")
    assert applied.returncode == 0, applied.stderr
    result = json.loads(applied.stdout)
    assert result["schema"] == "wp-codebox/apply-result/v1" and result["applied_files"] == ["demo.php"]
    assert tree(target) == expected_tree(["demo.php"])
    again = codebox(home, "apply", str(decision["id"]), "--adapter", "directory", "--target", str(target))
    assert again.returncode == 0 and "already applied" in again.stdout
    iterate = codebox(home, "review", "iterate", decision["artifact_id"], "--reason", "", "--json")
    assert iterate.returncode == 2
    assert json.loads(iterate.stdout)["error"]["code"] == "decision-invalid"
    (target / "demo.php").write_text("host edit\n")
    conflict = codebox(
        home,
        "apply",
        str(decision["id"]),
        "--adapter",
        "directory",
        "--target",
        str(tmp_path / "other-target"),
        "--json",
    )
    assert conflict.returncode == 2  # the target folder does not exist
    shutil.copytree(target, tmp_path / "other-target")
    conflict = codebox(
        home,
        "apply",
        str(decision["id"]),
        "--adapter",
        "directory",
        "--target",
        str(tmp_path / "other-target"),
    )
    assert conflict.returncode == 5 and "demo.php" in conflict.stderr


def test_two_processes_applying_one_decision_write_once(tmp_path: Path) -> None:
    cap = capture(tmp_path)
    home = tmp_path / "cli-home"
    made = codebox(home, "review", "approve", str(cap.bundle_dir), "--approver", "ana", "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    decision = json.loads(made.stdout)["id"]
    target = fresh_target(cap, tmp_path)
    env = {**os.environ, "CODEBOX_HOME": str(home)}
    args = [
        sys.executable,
        "-m",
        "codebox_tui",
        "apply",
        str(decision),
        "--adapter",
        "directory",
        "--target",
        str(target),
        "--json",
    ]
    procs = [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    statuses = sorted(json.loads(out)["status"] for out, _ in outs)
    assert statuses == ["already-applied", "applied"]
    assert tree(target) == expected_tree(list(CHANGES))
    assert len(read_audit(home / "apply-audit.jsonl")) == 2


def test_binary_files_apply_through_git_and_are_refused_by_directory(tmp_path: Path, store: Store) -> None:
    logo = bytes(range(256)) * 8 + b"\x00\xff"
    cap = capture(tmp_path, {**CHANGES, "assets/logo.png": logo})
    decision = decide(
        store, str(cap.bundle_dir), "approve-files", approver="ana", files=["assets/logo.png", "demo.php"]
    )
    target = fresh_target(cap, tmp_path)
    before = tree(target)
    with pytest.raises(ConflictError, match="binary file"):
        apply_decision(store, decision.id, "directory", target)
    assert tree(target) == before
    repo = git_repo(cap, tmp_path)
    result = apply_decision(store, decision.id, "git", repo, options={"commit": "1"})
    assert result.status == "committed"
    assert (repo / "assets" / "logo.png").read_bytes() == logo
    assert (repo / "demo.php").read_bytes() == CHANGES["demo.php"]
    assert git(repo, "status", "--porcelain") == ""


def test_decisions_record_the_same_mode_b_digest_as_the_bundle_module(tmp_path: Path, store: Store) -> None:
    from codebox_tui.bundle.digests import content_digest_b

    cap = capture(tmp_path)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    assert decision.content_digest == content_digest_b(cap.bundle_dir)
    manifest = json.loads((cap.bundle_dir / "manifest.json").read_text())
    assert decision.artifact_id == manifest["id"]
    assert decision.content_digest != manifest["contentDigest"]["value"]  # Mode A is not what we bind to


def test_a_decision_recorded_before_sandbox_paths_still_applies(tmp_path: Path, store: Store) -> None:
    """Decisions written before ``approved_relative_paths`` existed list mount-relative ``approved_files``;
    new ones list sandbox paths. Apply-back takes both and writes the same files."""
    cap = capture(tmp_path)
    record = register_bundle(store, cap.bundle_dir)
    from store.content import read_content

    digest = read_content(cap.bundle_dir).content_digest
    old = store.record_decision(
        record.key, "approve-files", approver="ana", approved_files=["demo.php"], content_digest=digest
    )
    assert old.approved_relative_paths is None
    new = decide(store, f"@{record.key}", "approve-files", approver="ana", files=["demo.php"])
    assert new.approved_files == [MOUNT_TARGET + "/demo.php"] and new.approved_relative_paths == ["demo.php"]
    for decision, name in ((old, "old"), (new, "new")):
        target = fresh_target(cap, tmp_path, name)
        result = apply_decision(store, decision.id, "directory", target)
        assert result.applied_files == ["demo.php"]
        assert tree(target) == expected_tree(["demo.php"])


def test_the_approval_hints_the_adapter_that_will_accept_it(tmp_path: Path) -> None:
    """`review approve` names the git adapter when the approved files include a binary one (the directory
    adapter refuses those), and the directory adapter otherwise; the hinted command then applies."""
    logo = bytes(range(256)) * 8 + b"\x00\xff"
    cap = capture(tmp_path, {**CHANGES, "assets/logo.png": logo})
    home = tmp_path / "cli-home"
    text_only = codebox(home, "review", "approve-files", str(cap.bundle_dir), "--file", "demo.php", "--approver", "ana")
    assert text_only.returncode == 0, text_only.stderr
    assert "--adapter directory --target <folder>" in text_only.stderr, text_only.stderr
    with_binary = codebox(
        home,
        "review",
        "approve-files",
        str(cap.bundle_dir),
        "--file",
        "assets/logo.png",
        "--file",
        "demo.php",
        "--approver",
        "ana",
    )
    assert with_binary.returncode == 0, with_binary.stderr
    hint = next(line for line in with_binary.stderr.splitlines() if "apply it with" in line)
    assert "--adapter git --target <git work tree>" in hint and "assets/logo.png" in hint, hint
    decision_id = hint.split("codebox apply ")[1].split()[0]
    refused = codebox(
        home, "apply", decision_id, "--adapter", "directory", "--target", str(fresh_target(cap, tmp_path))
    )
    assert refused.returncode != 0 and "binary file" in refused.stdout + refused.stderr
    repo = git_repo(cap, tmp_path)
    applied = codebox(home, "apply", decision_id, "--adapter", "git", "--target", str(repo))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert (repo / "assets" / "logo.png").read_bytes() == logo

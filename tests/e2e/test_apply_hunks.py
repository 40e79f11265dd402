"""Approving single hunks (docs/contracts.md, "Hunk selection"): the decision records the approved hunks'
hashes, and every adapter applies exactly those hunks. Real capture, real SQLite, real directories and git."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from codebox_tui.errors import BadInputError, ConflictError
from store.apply import apply_decision
from store.content import read_content
from store.db import Store
from store.decisions import decide, register_bundle
from tests.factories.apply_back import BASELINE, CHANGES, git, git_repo, tree
from tests.factories.holds import codebox_in_process
from tests.factories.hunks import EDITS, big_after, captured


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "home" / "codebox.sqlite3")
    yield s
    s.close()


def test_the_big_file_has_three_hunks_listed_in_order(tmp_path: Path) -> None:
    cap = captured(tmp_path)
    hunks = read_content(cap.bundle_dir).hunks("big.txt")
    assert [h.old_start for h in hunks] == [1, 17, 34]
    assert all(h.sha256 == hashlib.sha256(h.text).hexdigest() and h.text.startswith(b"@@ -") for h in hunks)


def test_directory_adapter_writes_only_the_approved_hunks(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    hunks = read_content(cap.bundle_dir).hunks("big.txt")
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana", hunks={"big.txt": [1, 3]})
    assert decision.approved_hunks == {"big.txt": [hunks[0].sha256, hunks[2].sha256]}
    assert store.get_decision(decision.id).approved_hunks == decision.approved_hunks  # stored as recorded
    target = tmp_path / "target"
    shutil.copytree(cap.baseline, target)
    result = apply_decision(store, decision.id, "directory", target)
    assert result.status == "applied"
    assert result.target["approved_hunks"] == {"big.txt": [hunks[0].sha256, hunks[2].sha256]}
    assert (target / "big.txt").read_bytes() == big_after({3, 37})
    assert (target / "demo.php").read_bytes() == CHANGES["demo.php"]  # other files whole
    assert not (target / "includes/old.php").exists()


def test_git_and_patch_adapters_apply_the_same_subset(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(
        store, str(cap.bundle_dir), "approve-files", approver="ana", files=["readme.txt"], hunks={"big.txt": [2]}
    )
    assert decision.approved_relative_paths == ["readme.txt", "big.txt"]
    repo = git_repo(cap, tmp_path)
    result = apply_decision(store, decision.id, "git", repo, options={"commit": "true"})
    assert result.status == "committed"
    assert (repo / "big.txt").read_bytes() == big_after({20})
    assert git(repo, "status", "--porcelain") == ""
    assert "Codebox-Partial: big.txt (1 approved hunk(s))" in git(repo, "log", "-1", "--format=%B")
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == ["big.txt", "readme.txt"]

    exported = tmp_path / "approved.patch"
    assert apply_decision(store, decision.id, "patch", exported).status == "exported"
    plain = tmp_path / "plain"
    shutil.copytree(cap.baseline, plain)
    subprocess.run(["git", "apply", "-p1", str(exported)], cwd=plain, check=True, capture_output=True)
    assert (plain / "big.txt").read_bytes() == big_after({20})
    assert (plain / "readme.txt").read_bytes() == CHANGES["readme.txt"]
    assert (plain / "demo.php").read_bytes() == BASELINE["demo.php"]


def test_every_hunk_selected_is_the_file_approved_whole(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve-files", approver="ana", hunks={"big.txt": [3, 1, 2]})
    target = tmp_path / "target"
    shutil.copytree(cap.baseline, target)
    apply_decision(store, decision.id, "directory", target)
    assert (target / "big.txt").read_bytes() == big_after(set(EDITS))


def test_an_unknown_hunk_hash_refuses_and_writes_nothing(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    record = register_bundle(store, cap.bundle_dir)
    content = read_content(cap.bundle_dir)
    decision = store.record_decision(
        record.key,
        "approve-files",
        approver="ana",
        approved_files=["big.txt", "demo.php"],
        approved_relative_paths=["big.txt", "demo.php"],
        approved_hunks={"big.txt": [content.hunks("big.txt")[0].sha256, "0" * 64]},
        content_digest=content.content_digest,
    )
    target = tmp_path / "target"
    shutil.copytree(cap.baseline, target)
    before = tree(target)
    with pytest.raises(ConflictError) as caught:
        apply_decision(store, decision.id, "directory", target)
    assert caught.value.code == "hunk-mismatch" and "big.txt" in caught.value.message
    assert tree(target) == before


def test_hunks_of_a_file_that_is_not_approved_are_refused_when_recorded(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    record = register_bundle(store, cap.bundle_dir)
    content = read_content(cap.bundle_dir)
    with pytest.raises(BadInputError) as caught:
        store.record_decision(
            record.key,
            "approve-files",
            approver="ana",
            approved_files=["demo.php"],
            approved_relative_paths=["demo.php"],
            approved_hunks={"big.txt": [content.hunks("big.txt")[0].sha256]},
            content_digest=content.content_digest,
        )
    assert caught.value.field == "approved_hunks"


def test_a_hunk_number_out_of_range_names_the_file_and_the_count(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path)
    register_bundle(store, cap.bundle_dir)
    with pytest.raises(BadInputError) as caught:
        decide(store, str(cap.bundle_dir), "approve", approver="ana", hunks={"big.txt": [4]})
    assert caught.value.field == "--hunk" and "big.txt has 3 hunk(s)" in caught.value.message
    with pytest.raises(BadInputError):
        decide(store, str(cap.bundle_dir), "discard", approver="ana", hunks={"big.txt": [1]})


# -- CLI ------------------------------------------------------------------------------------------
def codebox(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``codebox ARGS`` through the real entry point, in-process (decisions and apply start no sandbox)."""
    return codebox_in_process(home, *args)


def test_cli_show_numbers_hunks_and_approve_hunk_applies_exactly_them(tmp_path: Path) -> None:
    cap = captured(tmp_path)
    home = tmp_path / "cli-home"
    shown = codebox(home, "review", "show", str(cap.bundle_dir))
    assert shown.returncode == 0, shown.stderr
    assert "hunk 3  @@ -34," in shown.stdout
    listed = json.loads(codebox(home, "review", "show", str(cap.bundle_dir), "--json").stdout)
    big = next(f for f in listed["changedFiles"] if f["relativePath"] == "big.txt")
    assert [h["number"] for h in big["hunks"]] == [1, 2, 3]

    bad = codebox(home, "review", "approve", str(cap.bundle_dir), "--hunk", "big.txt", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["field"] == "--hunk"

    made = codebox(
        home,
        "review",
        "approve-files",
        str(cap.bundle_dir),
        "--hunk",
        "big.txt:3",
        "--hunk",
        "big.txt:1",
        "--approver",
        "ana",
        "--json",
    )
    assert made.returncode == 0, made.stdout + made.stderr
    decision = json.loads(made.stdout)
    assert decision["approved_relative_paths"] == ["big.txt"]
    assert decision["approved_hunks"] == {"big.txt": [big["hunks"][0]["sha256"], big["hunks"][2]["sha256"]]}
    again = codebox(home, "review", "show", str(cap.bundle_dir))
    assert "big.txt: hunk(s) 1, 3 of 3" in again.stdout

    target = tmp_path / "target"
    shutil.copytree(cap.baseline, target)
    applied = codebox(home, "apply", str(decision["id"]), "--adapter", "directory", "--target", str(target), "--json")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["applied_files"] == ["big.txt"]
    assert (target / "big.txt").read_bytes() == big_after({3, 37})
    assert (target / "demo.php").read_bytes() == BASELINE["demo.php"]


def test_hunk_headers_are_printed_without_terminal_controls() -> None:
    """A hunk's ``@@`` line can carry any text (an imported bundle's patch, git's function context):
    ``review show`` prints it escaped, never as a raw control sequence."""
    from codebox_tui.cli.review import _hunk_header
    from store.patchtext import split_hunks

    block = b"--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@ evil\x1b[2J\x1b]0;owned\x07()\n-a\n+b\n"
    (hunk,) = split_hunks(block)[1]
    shown = _hunk_header(hunk)
    assert shown.startswith("@@ -1,1 +1,1 @@ evil") and "\x1b" not in shown and "\x07" not in shown

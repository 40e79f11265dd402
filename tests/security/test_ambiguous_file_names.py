"""A decision binds to the mount the reviewer named (README, "Security model"; store/changed_names.py).

The attack: a real sandbox run with two read-write mounts whose PHP changes `readme.txt` in both (the
same relative path). Through the real CLI, approving `readme.txt` is refused naming both sandbox
paths; approving the second mount's sandbox path records that file, and the apply writes the second
mount's content to the second target while the first mount's folder is untouched. Before the fix, the
relative name silently meant the first mount's file (and `prepare_plan` bound it first-match-wins). The binding is
the host's (store, apply), whatever the backend: the run is on the native backend, the faster one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.factories.apply_back import tree

# the decisions and the apply after the run go through the real entry point in-process (they start no sandbox)
from tests.factories.holds import codebox_in_process as codebox
from tests.factories.two_mounts import BASELINE, EDITS, FIRST, SECOND, readme_folders, run_changing_both_readmes

pytestmark = pytest.mark.native


def test_a_relative_name_two_mounts_share_is_refused_and_the_sandbox_path_binds_its_mount(  # type: ignore[no-untyped-def]
    playground_session, tmp_path: Path
) -> None:
    home = playground_session.private_home(tmp_path)
    folders = readme_folders(tmp_path)
    run = run_changing_both_readmes(home, folders, "--artifacts", str(tmp_path / "artifacts"), "--json")
    assert run.returncode == 0, run.stderr
    bundle = json.loads(run.stdout)["artifacts"]["directory"]
    listed = json.loads(codebox(home, "review", "show", bundle, "--json").stdout)
    assert sorted(f["path"] for f in listed["changedFiles"]) == [f"{FIRST}/readme.txt", f"{SECOND}/readme.txt"]
    # the mounts are copy-on-write: the host folders keep the baseline until an apply writes them back
    before = {target: tree(folder) for target, folder in folders.items()}
    assert before[FIRST] == before[SECOND] == {"readme.txt": BASELINE}

    refused = codebox(home, "review", "approve-files", bundle, "--file", "readme.txt", "--approver", "ana", "--json")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "file-name-ambiguous"
    assert f"{FIRST}/readme.txt" in error["message"] and f"{SECOND}/readme.txt" in error["message"]
    assert sorted(error["details"]["candidates"]) == [f"{FIRST}/readme.txt", f"{SECOND}/readme.txt"]
    hunk = codebox(home, "review", "approve-files", bundle, "--hunk", "readme.txt:1", "--approver", "ana", "--json")
    assert hunk.returncode == 2 and json.loads(hunk.stdout)["error"]["code"] == "file-name-ambiguous"
    listed = json.loads(codebox(home, "review", "show", bundle, "--json").stdout)
    assert listed["decisions"] == []  # nothing was recorded

    approved = codebox(
        home, "review", "approve-files", bundle, "--file", f"{SECOND}/readme.txt", "--approver", "ana", "--json"
    )
    assert approved.returncode == 0, approved.stdout + approved.stderr
    decision = json.loads(approved.stdout)
    assert decision["approved_files"] == [f"{SECOND}/readme.txt"]
    shown = codebox(home, "review", "show", bundle)
    assert "approve-files by ana" in shown.stdout and f"[{SECOND}/readme.txt]" in shown.stdout, shown.stdout
    applied = codebox(
        home, "apply", str(decision["id"]), "--adapter", "directory", "--target", str(folders[SECOND]), "--json"
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert json.loads(applied.stdout)["applied_files"] == ["readme.txt"]
    assert (folders[SECOND] / "readme.txt").read_bytes() == EDITS[SECOND]
    assert tree(folders[FIRST]) == before[FIRST]  # the first mount's folder is untouched

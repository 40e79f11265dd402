"""Pilot test of the apply report for a target that moved on (docs/contracts.md, "Three-way apply"): the
git adapter merges the approved hunks into a file the maintainer edited elsewhere and the dialog shows the
merged count; a clashing edit is refused with the conflicting count, and the work tree stays as it was."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Select, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import ApplyDialog
from store.db import Store
from store.decisions import decide, register_bundle
from tests.factories.apply_back import git, git_repo, tree
from tests.factories.hunks import BIG_BEFORE, captured
from tests.factories.widget_hosts import wait_for


def _moved(repo: Path, line: int) -> None:
    lines = BIG_BEFORE.splitlines(keepends=True)
    lines[line - 1] = b"maintainer's line\n"
    (repo / "big.txt").write_bytes(b"".join(lines))
    git(repo, "commit", "-q", "-am", "maintainer moves on")


async def _apply_in_dialog(decision_id: int, target: Path) -> str:
    app = CodeboxApp()
    async with app.run_test(size=(120, 50)) as pilot:
        await pilot.pause()
        app.push_screen(ApplyDialog(decision_id))
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ApplyDialog)
        dialog.query_one("#adapter", Select).value = "git"
        dialog.query_one("#target", Input).value = str(target)
        dialog.query_one("#target", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        await wait_for(pilot, lambda: not dialog.applying, timeout=120)  # the apply runs in a worker
        return str(dialog.query_one("#apply-result", Static).render())


async def test_the_apply_report_shows_merged_and_conflicting_hunks(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path / "cap")
    register_bundle(store, cap.bundle_dir)
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")

    merged_repo = git_repo(cap, tmp_path / "a")
    _moved(merged_repo, 10)
    shown = await _apply_in_dialog(decision.id, merged_repo)
    assert "three-way: 1 file(s) merged (3 hunk(s)), 0 conflicting hunk(s): big.txt" in shown, shown
    assert b"maintainer's line\n" in (merged_repo / "big.txt").read_bytes()
    assert b"line 3 changed\n" in (merged_repo / "big.txt").read_bytes()

    clash_repo = git_repo(cap, tmp_path / "b")
    _moved(clash_repo, 20)
    before = tree(clash_repo)
    shown = await _apply_in_dialog(decision.id, clash_repo)
    assert shown.startswith("Refused:") and "1 conflicting hunk(s); nothing was written" in shown, shown
    assert tree(clash_repo) == before

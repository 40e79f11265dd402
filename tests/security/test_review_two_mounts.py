"""The Review screen binds a decision to the mount the reviewer picked (issue #25, point 4; README, "Security
model"; store/changed_names.py).

The attack: a real sandbox run (native backend) with two read-write mounts whose PHP changes `readme.txt` in
both. The reviewer opens the bundle from Home as a user does. Before the fix the Review screen keyed files
by relative path: the file tree showed one `readme.txt`, so the other mount's change could not be seen, and
what the reviewer selected was recorded under the shared relative name. Now both are shown, each under its
mount's sandbox folder, with its own diff; a comment and an approval of the second name the second mount's
sandbox path, and `codebox apply` writes only that file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.comments import CommentDialog
from codebox_tui.screens.dialogs import ApplyDialog, ConfirmDialog
from codebox_tui.settings import get_settings, reload_settings
from store.db import Store
from tests.factories.apply_back import tree
from tests.factories.held import codebox
from tests.factories.playground import PlaygroundSession
from tests.factories.tui import confirm_ready, review_opened, screen_lines
from tests.factories.two_mounts import BASELINE, EDITS, FIRST, SECOND, readme_folders, run_changing_both_readmes
from tests.factories.widget_hosts import wait_for
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree

pytestmark = pytest.mark.native


@pytest.fixture
def run_with_two_readmes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, dict[str, Path]]]:
    """One real run through the CLI in a private home (sharing the session's prepared native install); the
    app under test then reads that home's store."""
    home = PlaygroundSession(get_settings().home).private_home(tmp_path)
    folders = readme_folders(tmp_path)
    run = run_changing_both_readmes(home, folders, "--json", "--quiet", env={"CODEBOX_APPROVER": "ana"})
    assert run.returncode == 0, run.stdout + run.stderr
    monkeypatch.setenv("CODEBOX_HOME", str(home))
    monkeypatch.setenv("CODEBOX_APPROVER", "ana")
    reload_settings()
    yield home, folders
    monkeypatch.undo()
    reload_settings()


async def test_both_same_named_files_are_shown_and_approving_one_applies_only_it(
    run_with_two_readmes: tuple[Path, dict[str, Path]],
) -> None:
    home, folders = run_with_two_readmes
    first, second = f"{FIRST}/readme.txt", f"{SECOND}/readme.txt"
    app = CodeboxApp()
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # Home: review the run's bundle
        screen = await review_opened(pilot)
        file_tree = screen.query_one(ChangedFileTree)
        view = screen.query_one(DiffView)
        assert file_tree.file_paths == [first, second]  # both files, each under its sandbox path
        shown = "\n".join(screen_lines(app))
        assert "first/" in shown and "second/" in shown, shown  # the mounts' folders tell them apart
        assert view.current_path() == first
        assert any("changed in the FIRST mount" in row.text for row in view.rows)

        await pilot.press("]")  # the next file: the second mount's readme, with its own diff
        await wait_for(pilot, lambda: view.current_path() == second)
        assert any("changed in the SECOND mount" in row.text for row in view.rows)
        assert not any("FIRST" in row.text for row in view.rows)

        await pilot.press("C")  # a file comment on the second mount's readme
        await pilot.pause()
        assert isinstance(app.screen, CommentDialog)
        app.screen.query_one(Input).value = ""
        await pilot.press(*"second only", "enter")
        await wait_for(pilot, lambda: len(screen.comments) == 1)
        assert screen.comments[0].path == second

        await pilot.press("space", "A")  # select it and approve the selection
        await wait_for(pilot, lambda: confirm_ready(app), timeout=60)
        assert isinstance(app.screen, ConfirmDialog)
        assert f"- {second}" in app.screen.body and first not in app.screen.body, app.screen.body
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ApplyDialog), timeout=60)
        await pilot.press("escape")  # skip: applied below through the CLI

    store = Store.open(get_settings().db_path)
    try:
        record = store.list_bundles()[0]
        decision = store.latest_decision(record.key)
    finally:
        store.close()
    assert decision is not None and decision.action == "approve-files"
    assert decision.approved_files == [second]
    applied = codebox(
        home,
        *("apply", str(decision.id), "--adapter", "directory", "--target", str(folders[SECOND]), "--json"),
        env={"CODEBOX_APPROVER": "ana"},
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert json.loads(applied.stdout)["applied_files"] == ["readme.txt"]
    assert (folders[SECOND] / "readme.txt").read_bytes() == EDITS[SECOND]
    assert tree(folders[FIRST]) == {"readme.txt": BASELINE}  # the first mount's folder is untouched

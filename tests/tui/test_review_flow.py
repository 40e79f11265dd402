"""Pilot tests of the review flows, asserting on the store and the files, not only on pixels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import HelpDialog
from codebox_tui.screens.review import ReviewScreen
from codebox_tui.settings import reload_settings
from store.db import Store
from tests.factories.tui import type_text
from widgets.decision_bar import DecisionBar
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree


async def _open(app: CodeboxApp, pilot, bundle_dir: Path) -> ReviewScreen:  # type: ignore[no-untyped-def]
    await pilot.pause()
    assert isinstance(app.screen, ReviewScreen)
    return app.screen


async def test_review_shows_tree_and_diff(bundle_dir: Path) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open(app, pilot, bundle_dir)
        tree = screen.query_one(ChangedFileTree)
        assert set(tree.file_paths) == {"added.php", "keep.bin", "lib/run.sh", "plugin.php", "readme.txt"}
        diff = screen.query_one(DiffView)
        assert diff.model is not None and diff.model.rows
        await pilot.press("]")
        await pilot.pause()
        assert diff.model.path != ""


async def test_approve_all_records_a_decision_with_the_reviewed_digest(bundle_dir: Path, store: Store) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(app, pilot, bundle_dir)
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("escape")  # skip apply
        await pilot.pause()
    decisions = store.list_decisions()
    assert len(decisions) == 1
    decision = decisions[0]
    assert decision.action == "approve"
    review = json.loads((bundle_dir / "files/review.json").read_text())
    assert decision.content_digest == review["evidence"]["contentDigestB"]
    assert sorted(decision.approved_relative_paths or []) == [
        "added.php",
        "keep.bin",
        "lib/run.sh",
        "plugin.php",
        "readme.txt",
    ]
    assert all(f.startswith("/wordpress/") for f in decision.approved_files)  # sandbox paths (reference preflight)


async def test_approve_selected_records_only_the_selected_files(bundle_dir: Path, store: Store) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open(app, pilot, bundle_dir)
        tree = screen.query_one(ChangedFileTree)
        tree.focus()
        assert tree.highlight_path("plugin.php")
        await pilot.press("space")
        await pilot.pause()
        await pilot.press("A")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
    (decision,) = store.list_decisions()
    assert decision.action == "approve-files"
    assert decision.approved_relative_paths == ["plugin.php"]


async def test_discard_and_iterate_are_recorded(bundle_dir: Path, store: Store) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(app, pilot, bundle_dir)
        await pilot.press("i")
        await pilot.pause()
        await type_text(pilot, "please add tests")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    actions = [(d.action, d.reason) for d in store.list_decisions()]
    assert ("iterate", "please add tests") in actions
    assert any(a == "discard" for a, _ in actions)
    assert bundle_dir.exists(), "discard never deletes evidence"


async def test_invalid_bundle_can_be_inspected_but_not_approved(bundle_dir: Path, store: Store) -> None:
    with open(bundle_dir / "files/patch.diff", "a") as handle:
        handle.write("tampered\n")
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open(app, pilot, bundle_dir)
        assert not screen.bundle.valid
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen), "no confirmation dialog for an invalid bundle"
    assert store.list_decisions() == []


async def test_home_lists_bundles_from_the_store_and_opens_one(bundle_dir: Path, store: Store) -> None:
    from codebox_tui.screens import data

    data.register(store, bundle_dir)
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        from textual.widgets import DataTable

        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)


async def test_missing_bundle_is_a_clear_message(tmp_path: Path) -> None:
    app = CodeboxApp(tmp_path / "nope")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not isinstance(app.screen, ReviewScreen)
        assert any("Cannot open bundle" in str(n.message) for n in app._notifications)


async def test_older_reference_patch_headers_still_show_each_diff(bundle_dir: Path) -> None:
    """Reference bundles written before 2026-07-14 name files by sandbox path in patch headers
    (``a/wordpress/wp-content/plugins/...``): Review still finds each file's block."""
    patch_path = bundle_dir / "files" / "patch.diff"
    target = "wordpress/wp-content/plugins/plugin"
    text = patch_path.read_text()
    for rel in ("plugin.php", "added.php", "readme.txt"):
        text = text.replace(f" a/{rel}", f" a/{target}/{rel}").replace(f" b/{rel}", f" b/{target}/{rel}")
    patch_path.write_text(text)
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open(app, pilot, bundle_dir)
        diff = screen.query_one(DiffView)
        tree = screen.query_one(ChangedFileTree)
        for rel in ("added.php", "plugin.php", "readme.txt"):
            assert tree.highlight_path(rel)
            await pilot.pause()
            assert diff.model is not None and diff.model.path == rel and diff.model.hunk_rows, rel


async def test_decision_bar_and_help_show_the_remapped_keys(
    bundle_dir: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key remapped in the keymap is the key the decision bar names and the one that works."""
    monkeypatch.setenv("CODEBOX_KEYMAP", '{"review.approve_all": "ctrl+a", "files.toggle": "x"}')
    reload_settings()
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await _open(app, pilot, bundle_dir)
        bar = screen.query_one(DecisionBar)
        text = bar.render().plain
        assert " ctrl+a approve all" in text and " x select" in text, text
        assert " a approve all" not in text and "space" not in text
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpDialog)
        help_text = app.screen.markdown
        assert "- `]`: Next file" in help_text and "right_square_bracket" not in help_text
        assert "- `ctrl+a`: Approve all" in help_text
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("a")  # the old key no longer approves
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("ctrl+a")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("escape")  # skip apply
        await pilot.pause()
    assert [d.action for d in store.list_decisions()] == ["approve"]


async def test_the_tui_records_the_configured_approver(
    bundle_dir: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rule for who decides: CODEBOX_APPROVER counts in the TUI as it does in the CLI and MCP."""
    monkeypatch.setenv("CODEBOX_APPROVER", "ana from the audit trail")
    reload_settings()
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(app, pilot, bundle_dir)
        await pilot.press("a")
        await pilot.pause()
        assert "Approver: ana from the audit trail" in "\n".join(str(w.render()) for w in app.screen.query("Static"))
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
    assert [d.approver for d in store.list_decisions()] == ["ana from the audit trail"]

"""Pilot tests of the Review screen's shell (issue #15): the command palette lists each action once, with
the diff's view toggles and hunk keys and open-bundle whatever pane has the focus; the focused pane is
visibly highlighted; F1 in a dialog explains that dialog. A real captured bundle."""

from __future__ import annotations

import inspect
from collections import Counter
from pathlib import Path

from textual.app import SystemCommand
from textual.containers import Vertical
from textual.widgets import Markdown, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import HelpDialog, OpenBundleDialog, ReasonDialog
from codebox_tui.screens.review import ReviewScreen
from tests.factories.widget_hosts import wait_for
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree


async def _run(command: SystemCommand) -> None:
    """What the palette does with a chosen command: call it (and await what it returns)."""
    result = command.callback()
    if inspect.isawaitable(result):
        await result


async def test_palette_lists_each_action_once_with_view_toggles_hunks_and_open_bundle(bundle_dir: Path) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.query_one(ChangedFileTree).has_focus  # the diff is not focused
        commands = list(app.get_system_commands(app.screen))
        titles = [command.title for command in commands]
        assert [t for t, n in Counter(titles).items() if n > 1] == []
        for title in (
            "Split/unified",
            "Wrap",
            "Next hunk",
            "Prev hunk",
            "All files / one file",
            "Toggle hunk",
            "Open bundle…",
            "Help",
            "Theme",
            "Quit",
        ):
            assert title in titles, (title, titles)
        # a diff command runs on the diff even from the tree: wrap turns on
        view = app.screen.query_one(DiffView)
        assert not view.wrap
        await _run(next(c for c in commands if c.title == "Wrap"))
        await pilot.pause()
        assert view.wrap
        await _run(next(c for c in commands if c.title == "Open bundle…"))
        await pilot.pause()
        assert isinstance(app.screen, OpenBundleDialog)


async def test_the_focused_pane_is_highlighted(bundle_dir: Path) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        tree = screen.query_one(ChangedFileTree)
        status = screen.query_one("#diff-status", Static)
        assert tree.has_focus
        tree_edge, status_background = tree.styles.border_right, status.styles.background
        assert tree_edge[0] == "heavy"
        screen.query_one(DiffView).focus()
        # the focus-within styles are re-applied on a later refresh: under load one pause is not always enough
        await wait_for(pilot, lambda: status.styles.background != status_background)
        assert tree.styles.border_right[0] != "heavy" and tree.styles.border_right != tree_edge
        assert status.styles.background != status_background
        assert status.styles.text_style.bold


async def test_f1_in_a_dialog_explains_the_dialog(bundle_dir: Path) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("i")  # request changes: the reason dialog, its field focused
        await pilot.pause()
        assert isinstance(app.screen, ReasonDialog)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpDialog)
        text = app.screen.query_one(Markdown).source
        assert "# Request changes" in text and "feedback.md" in text
        await pilot.press("f1")  # F1 again closes the help, back in the dialog
        await pilot.pause()
        assert isinstance(app.screen, ReasonDialog)
        assert app.screen.query(Vertical)


async def test_review_opens_with_the_first_file_shown(bundle_dir: Path) -> None:
    """The first file (in the tree's order) is highlighted and its diff shown on open, not an empty pane."""
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        tree = screen.query_one(ChangedFileTree)
        view = screen.query_one(DiffView)
        assert tree.cursor_node is not None and tree.cursor_node.data is not None
        assert tree.cursor_node.data.relativePath == tree.file_paths[0]
        assert view.model is not None and view.model.path == tree.file_paths[0]
        assert str(screen.query_one("#diff-status", Static).render()).startswith(tree.file_paths[0])


def _long_name(source: Path) -> None:
    (source / "class-greeting-cards-shortcode-renderer-for-blocks.php").write_text("<?php\n// one\n// two\n")


async def test_a_long_file_name_keeps_its_counts_at_80x24(tmp_path: Path) -> None:
    from tests.factories.bundles import make_bundle

    summary, _ = make_bundle(tmp_path, _long_name)
    app = CodeboxApp(summary.path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        tree = app.screen.query_one(ChangedFileTree)
        node = tree.node_for("class-greeting-cards-shortcode-renderer-for-blocks.php")
        assert node is not None
        label = tree.render_label(node, tree.rich_style, tree.rich_style).plain
        room = tree.scrollable_content_region.width
        assert len(label.removesuffix("  •")) <= room, (label, room)  # the viewed mark may be cut
        assert "+3 -0" in label and "…" in label, label  # the counts survive; the name's middle goes
        name = label.split()[1]
        assert name.startswith("class-g") and name.endswith(".php"), label

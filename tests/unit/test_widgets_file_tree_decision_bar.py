"""ChangedFileTree and DecisionBar in a host app: messages, selection, viewed marks, status text."""

from __future__ import annotations

import os
from typing import Any

from codebox_tui.contracts.bundle import ChangedFile
from tests.factories.widget_hosts import Recorder
from widgets.decision_bar import DecisionBar
from widgets.file_tree import ChangedFileTree

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")


def _entry(fields: dict[str, Any]) -> ChangedFile:
    """A changed-files entry as the reader hands it to the tree (the contract model)."""
    rel = fields["relativePath"]
    return ChangedFile.model_validate(
        {
            "path": f"/wordpress/wp-content/plugins/{rel}",
            "mountIndex": 0,
            "mountTarget": "/wordpress/wp-content/plugins",
            "patchPath": "files/diffs/mount-0.patch",
            **fields,
        }
    )


FILES: list[ChangedFile] = [
    _entry(e)
    for e in (
        {"relativePath": "plugin/a.php", "status": "modified", "afterSha256": "1" * 64, "additions": 3, "deletions": 1},
        {"relativePath": "plugin/inc/b.php", "status": "added", "afterSha256": "2" * 64, "additions": 9},
        {"relativePath": "logo.png", "status": "modified", "binary": True, "afterSha256": "3" * 64},
        {"relativePath": "old.txt", "status": "deleted"},
    )
]


def _labels(tree: ChangedFileTree) -> dict[str, str]:
    return {rel: node.label.plain for rel in tree.file_paths if (node := tree.node_for(rel))}


async def test_tree_groups_badges_and_messages() -> None:
    tree = ChangedFileTree(id="files")
    app = Recorder(tree)
    async with app.run_test(size=(80, 20)) as pilot:
        tree.load(FILES)
        tree.focus()
        await pilot.pause()
        labels = _labels(tree)
        assert labels["plugin/a.php"].split() == ["M", "a.php", "+3", "-1"]
        assert "binary" in labels["logo.png"] and labels["logo.png"].split()[0] == "MB"
        assert labels["old.txt"].split()[0] == "D"
        folders = [str(n.label) for n in tree.root.children]
        assert "plugin/" in folders
        await pilot.press("down")
        await pilot.pause()
        highlighted = app.of(ChangedFileTree.FileHighlighted)
        assert highlighted and highlighted[-1].entry.relativePath in tree.file_paths
        assert tree.highlight_path("plugin/a.php")
        await pilot.pause()
        await pilot.press("space")
        await pilot.pause()
        assert tree.selected == {"plugin/a.php"}
        assert app.of(ChangedFileTree.SelectionChanged)[-1].selected == ["plugin/a.php"]
        assert _labels(tree)["plugin/a.php"].startswith("✓")
        await pilot.press("space")
        await pilot.pause()
        assert tree.selected == set()
        await pilot.press("enter")
        await pilot.pause()
        assert app.of(ChangedFileTree.FileSelected)[-1].entry.relativePath == "plugin/a.php"


async def test_viewed_mark_resets_when_content_hash_changes() -> None:
    tree = ChangedFileTree()
    app = Recorder(tree)
    async with app.run_test(size=(80, 20)) as pilot:
        tree.load(FILES)
        await pilot.pause()
        tree.mark_viewed(FILES[0])
        assert _labels(tree)["plugin/a.php"].endswith("•")
        changed = [FILES[0].model_copy(update={"afterSha256": "9" * 64}), *FILES[1:]]
        tree.load(changed)
        await pilot.pause()
        assert not tree.is_viewed(changed[0]) and not _labels(tree)["plugin/a.php"].endswith("•")


async def test_decision_bar_status_and_keys() -> None:
    bar = DecisionBar()
    app = Recorder(bar)
    async with app.run_test(size=(160, 3)) as pilot:
        bar.total, bar.selected = 4, 1
        await pilot.pause()
        text = bar.render().plain
        assert "verified" in text and "1/4 selected" in text and " a approve all" in text
        assert "A approve selected" in text and "space select" in text
        bar.show_keys({"approve_all": "ctrl+a", "select": "x"})
        text = bar.render().plain
        assert " ctrl+a approve all" in text and " x select" in text and "space" not in text
        assert "d discard" in text  # the others keep their keys
        bar.valid, bar.reason = False, "patch.diff digest mismatch"
        await pilot.pause()
        assert "INVALID" in bar.render().plain and "digest mismatch" in bar.render().plain
        assert not DecisionBar.BINDINGS  # the screen owns the decision keys; the bar never has focus

"""SVG snapshots of the widgets in a small host app (look at them after `pytest --snapshot-update`)."""

from __future__ import annotations

import os
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Horizontal

from codebox_tui.contracts.bundle import ChangedFile
from widgets.decision_bar import DecisionBar
from widgets.diff_model import split_patch
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

PATCH = """\
diff --git a/plugin/hello.php b/plugin/hello.php
index 3b18e51..a9c1f2d 100644
--- a/plugin/hello.php
+++ b/plugin/hello.php
@@ -1,6 +1,7 @@
 <?php
 /* Plugin Name: Hello */
-$greeting = 'hello world';
+$greeting = 'hello there world';
+$count = 2;
 function hello_render() {
-    echo esc_html( $greeting );
+    echo esc_html( strtoupper( $greeting ) );
 }
diff --git a/logo.png b/logo.png
index 1..2 100644
GIT binary patch
literal 12
zcmZ?wbhEHbWMW`qkPrZ3KmZE^

literal 9
"""

FILES: list[ChangedFile] = [
    ChangedFile.model_validate(
        {
            "path": f"/wordpress/wp-content/plugins/{e['relativePath']}",
            "mountIndex": 0,
            "mountTarget": "/wordpress/wp-content/plugins",
            "patchPath": "files/diffs/mount-0.patch",
            **e,
        }
    )
    for e in (
        {
            "relativePath": "plugin/hello.php",
            "status": "modified",
            "afterSha256": "a" * 64,
            "additions": 3,
            "deletions": 2,
        },
        {"relativePath": "logo.png", "status": "modified", "binary": True, "afterSha256": "b" * 64},
        {"relativePath": "plugin/readme.txt", "status": "deleted", "deletions": 4},
    )
]


class ReviewHost(App[None]):
    CSS = "ChangedFileTree { width: 34; } DiffView { width: 1fr; }"

    def __init__(self, search: str = "") -> None:
        super().__init__()
        self.animation_level = "none"
        self.search_text = search

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield ChangedFileTree()
            yield DiffView()
        yield DecisionBar()

    def on_mount(self) -> None:
        self.setup()

    def setup(self) -> None:
        tree = self.query_one(ChangedFileTree)
        tree.load(FILES)
        tree.selected.add("plugin/hello.php")
        tree.refresh_entry("plugin/hello.php")
        view = self.query_one(DiffView)
        view.show_file("plugin/hello.php", split_patch(PATCH)["plugin/hello.php"])
        if self.search_text:
            view.search(self.search_text)
        bar = self.query_one(DecisionBar)
        bar.total, bar.selected = 3, 1


class BinaryInvalidHost(ReviewHost):
    def setup(self) -> None:
        super().setup()
        self.query_one(DiffView).show_file("logo.png", split_patch(PATCH)["logo.png"])
        bar = self.query_one(DecisionBar)
        bar.valid, bar.reason = False, "patch.diff sha256 mismatch"


def test_review_widgets_snapshot(snap_compare: Any) -> None:
    assert snap_compare(ReviewHost(search="greeting"), terminal_size=(110, 16))


def test_binary_and_invalid_snapshot(snap_compare: Any) -> None:
    assert snap_compare(BinaryInvalidHost(), terminal_size=(110, 10))


class SplitHost(App[None]):
    def compose(self) -> ComposeResult:
        yield DiffView()

    def on_mount(self) -> None:
        self.animation_level = "none"
        self.query_one(DiffView).show_file("plugin/hello.php", split_patch(PATCH)["plugin/hello.php"])


def test_side_by_side_snapshot(snap_compare: Any) -> None:
    assert snap_compare(SplitHost(), terminal_size=(170, 12))  # auto-split at >= 160 columns


class ContinuousHost(App[None]):
    """Every file in one scroll: hello.php with a line comment, logo.png (binary), readme collapsed."""

    def compose(self) -> ComposeResult:
        yield DiffView()

    def on_mount(self) -> None:
        self.animation_level = "none"
        blocks = split_patch(PATCH)
        view = self.query_one(DiffView)
        readme = (
            "diff --git a/plugin/readme.txt b/plugin/readme.txt\n--- a/plugin/readme.txt\n+++ /dev/null\n"
            "@@ -1 +0,0 @@\n-gone\n"
        )
        view.show_files(
            [
                ("logo.png", blocks["logo.png"]),
                ("plugin/hello.php", blocks["plugin/hello.php"]),
                ("plugin/readme.txt", readme),
            ],
            collapsed={"plugin/readme.txt"},
        )
        view.set_notes_by_file({"plugin/hello.php": [("new", 3, "suggestion", "name it $greeting_text")]})
        view.set_marks_by_file({"plugin/hello.php": [("new", 3, 3, "suggestion")]})


def test_continuous_view_snapshot(snap_compare: Any) -> None:
    assert snap_compare(ContinuousHost(), terminal_size=(100, 20))

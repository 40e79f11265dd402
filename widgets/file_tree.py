"""ChangedFileTree: changed files grouped by folder, with status badges, +/- counts, a selection mark
for approve-selected (``space``) and a "viewed" mark that resets when the file's content hash changes.

Each file is known by a key the caller gives (its relativePath unless told otherwise): the Review screen
keys a relativePath two mounts change by sandbox path, so each shows under its own mount's folders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.textsafe import pieces, safe_text

ESCAPE_STYLE = "bold #ff5fd7 on #3a1f3a"  # a control character in a name, shown as an escape (as in the diff)
BADGES = {"added": ("A", "green"), "modified": ("M", "yellow"), "deleted": ("D", "red")}


class ChangedFileTree(Tree[ChangedFile | None]):
    HELP = """\
## Changed files
- `↑` `↓`: move; the diff follows the highlighted file
- `space`: select / unselect the file for "approve selected"
- Badges: **A** added, **M** modified, **D** deleted, **B** binary; ✓ selected, • viewed
"""

    DEFAULT_CSS = """
    ChangedFileTree { background: $surface; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_selected", "Select file", id="files.toggle"),
    ]

    class FileHighlighted(Message):
        def __init__(self, entry: ChangedFile) -> None:
            self.entry = entry
            super().__init__()

    class FileSelected(Message):
        """``enter`` on a file."""

        def __init__(self, entry: ChangedFile) -> None:
            self.entry = entry
            super().__init__()

    class SelectionChanged(Message):
        def __init__(self, selected: list[str]) -> None:
            self.selected = selected
            super().__init__()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("changes", **kwargs)
        self.show_root = False
        self.guide_depth = 2
        self.selected: set[str] = set()  # keys
        self.viewed: dict[str, str | None] = {}  # key -> afterSha256 when viewed
        self._leaves: dict[str, TreeNode[ChangedFile | None]] = {}
        self._keys: dict[int, str] = {}  # id(entry) -> its key

    def load(self, files: list[ChangedFile], key_of: Callable[[ChangedFile], str] | None = None) -> None:
        """Show ``files`` (the bundle's change list, parsed with its contract) grouped by the folders of their
        keys (``key_of(entry)``, default its relativePath); folder nodes carry no entry."""
        self.clear()
        self._leaves.clear()
        keyed = [(key_of(f) if key_of is not None else f.relativePath, f) for f in files]
        self._keys = {id(f): k for k, f in keyed}
        self.selected &= {k for k, _f in keyed}
        folders: dict[str, TreeNode[ChangedFile | None]] = {}
        for rel, entry in sorted(keyed, key=lambda pair: pair[0]):
            parent = self.root
            parts = rel.lstrip("/").split("/")
            for depth in range(1, len(parts)):
                key = "/".join(parts[:depth])
                if key not in folders:
                    label = Text(safe_text(parts[depth - 1]) + "/", style="bold #61afef")
                    folders[key] = parent.add(label, expand=True, data=None)
                parent = folders[key]
            leaf = parent.add_leaf(self._label(entry), data=entry)
            self._leaves[rel] = leaf
        self.root.expand_all()

    def render_label(self, node: TreeNode[ChangedFile | None], base_style: Style, style: Style) -> Text:
        """A file's label fitted to the tree's width: a name too long loses its middle (``…``), never the
        badges or the +/- counts at its end (a narrow terminal, e.g. 80×24); the viewed mark is cut first."""
        text = super().render_label(node, base_style, style)
        entry = node.data
        width = self.scrollable_content_region.width
        if entry is None or width <= 0:
            return text
        depth, parent = 0, node.parent
        while parent is not None and parent is not self.root:
            depth, parent = depth + 1, parent.parent
        room = width - depth * self.guide_depth  # the guides before the label
        room += 3 if self.is_viewed(entry) else 0  # the viewed mark ("  •") may go first
        if text.cell_len <= room:
            return text
        name = self.key_of(entry).rsplit("/", 1)[-1]
        for keep in range(len(name) - 1, 1, -1):  # shorter and shorter until the label fits
            head = (keep + 1) // 2
            fitted = self._label(entry, name[:head] + "…" + name[len(name) - (keep - head) :])
            if fitted.cell_len <= room or keep == 2:
                fitted.stylize(style)
                return fitted
        return text

    def key_of(self, entry: ChangedFile) -> str:
        """The key ``entry`` is shown under (its relativePath when it was not loaded with another)."""
        return self._keys.get(id(entry), entry.relativePath)

    def _label(self, entry: ChangedFile, shown_name: str | None = None) -> Text:
        rel = self.key_of(entry)
        letter, colour = BADGES.get(entry.status, ("?", "white"))
        text = Text()
        text.append("✓ " if rel in self.selected else "  ", style="bold green")
        text.append(f"{letter}", style=f"bold {colour}")
        if entry.binary:
            text.append("B", style="bold magenta")
        text.append(" ")
        name = shown_name if shown_name is not None else rel.rsplit("/", 1)[-1]
        for piece in pieces(name, tab_size=None):  # escapes drawn distinctly
            text.append(piece.text, style=ESCAPE_STYLE if piece.escape else None)
        if entry.binary:
            text.append("  binary", style="dim")
        else:
            text.append(f"  +{entry.additions}", style="green")
            text.append(f" -{entry.deletions}", style="red")
        if self.is_viewed(entry):
            text.append("  •", style="dim")
        return text

    @property
    def file_paths(self) -> list[str]:
        """Every file shown (its key), sorted."""
        return sorted(self._leaves)

    def node_for(self, rel: str) -> TreeNode[ChangedFile | None] | None:
        """The tree node of the file ``rel``, or None when it is not shown."""
        return self._leaves.get(rel)

    def highlight_path(self, rel: str) -> bool:
        """Move the cursor to the file ``rel`` (the diff follows, as for ``↑``/``↓``); False when it is not
        shown. Not the approve-selection (``space``)."""
        leaf = self._leaves.get(rel)
        if leaf is None:
            return False
        self.move_cursor(leaf)
        return True

    def refresh_entry(self, rel: str) -> None:
        leaf = self._leaves.get(rel)
        if leaf is not None and leaf.data is not None:
            leaf.set_label(self._label(leaf.data))

    def mark_viewed(self, entry: ChangedFile) -> None:
        rel = self.key_of(entry)
        self.viewed[rel] = entry.afterSha256  # a later content change no longer matches → unviewed
        self.refresh_entry(rel)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[ChangedFile | None]) -> None:
        if event.node.data is not None:
            self.post_message(self.FileHighlighted(event.node.data))

    def on_tree_node_selected(self, event: Tree.NodeSelected[ChangedFile | None]) -> None:
        if event.node.data is not None:
            self.post_message(self.FileSelected(event.node.data))

    def is_viewed(self, entry: ChangedFile) -> bool:
        rel = self.key_of(entry)
        return rel in self.viewed and self.viewed[rel] == entry.afterSha256

    def action_toggle_selected(self) -> None:
        node = self.cursor_node
        if node is None or node.data is None:
            return
        rel = self.key_of(node.data)
        self.selected.symmetric_difference_update({rel})
        self.refresh_entry(rel)
        self.post_message(self.SelectionChanged(sorted(self.selected)))

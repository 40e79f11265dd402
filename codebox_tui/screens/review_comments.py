"""The Review screen's comments: their keys (``c`` ``C`` ``e`` ``x`` ``Y``), the comments of the bundle under
review, their marks and inline notes in the diff and the panel under it (store/comments.py and
store/feedback.py through screens/data.py; the panel's text is review_text.comment_panel_text)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Static

from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxScreen, call_store
from codebox_tui.screens.comments import CommentDialog
from codebox_tui.screens.dialogs import ConfirmDialog
from codebox_tui.screens.review_text import comment_panel_text
from codebox_tui.textsafe import safe_text
from widgets.diff_view import DiffView


class ReviewComments:
    """Comments on one bundle directory, shown in ``screen``'s diff (``#diff``) and ``#comment-panel``."""

    # the screen's action ``comments(name)`` runs :meth:`act` (screens/review.py)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "comments('comment')", "Comment", show=False, id="review.comment"),
        Binding("C", "comments('comment_file')", "Comment on file", show=False, id="review.comment_file"),
        Binding("e", "comments('edit')", "Edit comment", show=False, id="review.edit_comment"),
        Binding("x", "comments('delete')", "Delete comment", show=False, id="review.delete_comment"),
        Binding("Y", "comments('copy_feedback')", "Copy feedback", show=False, id="review.copy_feedback"),
    ]

    def __init__(self, screen: CodeboxScreen[None], bundle_dir: Path, revisions: data.RevisionView | None) -> None:
        self.screen = screen
        self.bundle_dir = bundle_dir
        self.revisions = revisions
        self.comments: list[data.Comment] = []  # this bundle directory's, in reading order

    def act(self, name: str) -> None:
        {
            "comment": self.comment,
            "comment_file": self.comment_file,
            "edit": self.edit,
            "delete": self.delete,
            "copy_feedback": self.copy_feedback,
        }[name]()

    @property
    def _view(self) -> DiffView:
        return self.screen.query_one(DiffView)

    @property
    def open_issues(self) -> list[data.Comment]:
        """``issue`` comments not yet sent with a decision (an approval warns about them)."""
        return [c for c in self.comments if c.kind == "issue" and c.decision_id is None]

    def load(self) -> None:
        store = data.open_store()
        try:
            self.comments = data.comments(store, self.bundle_dir)
        except Exception as error:  # an unreadable store is reported, the review goes on
            self.screen.notify(f"Comments could not be loaded: {safe_text(error)}", severity="warning", markup=False)
            self.comments = []
        finally:
            store.close()
        self.show()

    def show(self) -> None:
        """Marks in the diff for every file's line comments (the continuous view shows them all, one file's view
        its own), each under the last line it names; the panel lists the shown file's comments and those on
        the cursor's lines."""
        view = self._view
        path = view.current_path()
        carried_all = self.revisions.carried if self.revisions else []
        mine = [c for c in self.comments if c.path == path]
        carried = [c for c in carried_all if c.path == path]
        on_lines: dict[str, list[tuple[data.Comment, int, int]]] = {}  # path → (comment, first, last line)
        for c in self.comments + carried_all:
            if c.side != "file" and not c.outdated and c.line_start is not None and c.line_end is not None:
                on_lines.setdefault(c.path, []).append((c, c.line_start, c.line_end))
        view.set_marks_by_file(
            {p: [(c.side, first, last, c.kind) for c, first, last in cs] for p, cs in on_lines.items()}
        )
        view.set_notes_by_file(
            {
                p: [(c.side, last, c.kind, f"{c.body}  — {c.author} #{c.id}") for c, _f, last in cs]
                for p, cs in on_lines.items()
            }
        )
        panel = self.screen.query_one("#comment-panel", Static)
        shown = list({c.id: c for c in self.at_cursor() + [c for c in mine if c.side == "file"]}.values())
        at = {c.id for c in self.at_cursor(carried)}
        from_before = [c for c in carried if c.id in at or c.side == "file" or c.outdated]
        if not shown and not mine and not from_before:
            panel.add_class("hidden")
            panel.update("")
            return
        numbers = {r.bundle.key: r.number for r in self.revisions.revisions} if self.revisions else {}
        panel.update(comment_panel_text(shown, len(mine) - len(shown), from_before, numbers))
        panel.remove_class("hidden")

    def at_cursor(self, among: list[data.Comment] | None = None) -> list[data.Comment]:
        """The line comments (of this bundle, or ``among``) on the diff's selected lines of the shown file."""
        view = self._view
        path = view.current_path()
        rows = [view.rows[i] for i in view.selected_rows() if 0 <= i < len(view.rows)]
        found = []
        for c in self.comments if among is None else among:
            if c.path != path or c.side == "file":
                continue
            if any(
                (r.kind != "del" and r.new_no is not None and c.covers("new", r.new_no))
                or (r.kind != "add" and r.old_no is not None and c.covers("old", r.old_no))
                for r in rows
            ):
                found.append(c)
        return found

    def _target(self) -> data.Comment | None:
        """The comment at the cursor, else the shown file's (first) file comment."""
        at = self.at_cursor()
        if at:
            return at[0]
        path = self._view.current_path()
        return next((c for c in self.comments if c.path == path and c.side == "file"), None)

    def _ask(self, lines: tuple[str, int, int] | None) -> None:
        path = self._view.current_path()
        if path is None:
            self.screen.notify("Open a changed file first.", severity="warning")
            return
        if lines is None:
            where = f"{path} (whole file)"
        else:
            side, first, last = lines
            where = f"{path}:{first}" + (f"-{last}" if last != first else "") + (" (old)" if side == "old" else "")

        def got(answer: tuple[str, str] | None) -> None:
            if answer is None:
                return
            kind, body = answer
            comment = call_store(
                self.screen,
                lambda store: data.add_comment(store, self.bundle_dir, path=path, kind=kind, body=body, lines=lines),
            )
            if comment is not None:
                self.comments.append(comment)
                self._view.anchor_row = None
                self.show()
                self.screen.notify(f"Comment #{comment.id} ({kind}) on {safe_text(comment.where())}.", markup=False)

        self.screen.app.push_screen(CommentDialog(where), got)

    def comment(self) -> None:
        lines = self._view.selected_lines()
        if lines is None:
            self.screen.notify(
                "Put the line cursor on a changed or context line first (J / K or a click); "
                "C comments on the whole file.",
                severity="warning",
            )
            return
        self._ask(lines)

    def comment_file(self) -> None:
        self._ask(None)

    def edit(self) -> None:
        target = self._target()
        if target is None:
            self.screen.notify("No comment at the cursor.", severity="warning")
            return

        def got(answer: tuple[str, str] | None) -> None:
            if answer is None:
                return
            kind, body = answer
            changed = call_store(self.screen, lambda store: data.edit_comment(store, target.id, kind=kind, body=body))
            if changed is not None:
                self.comments = [changed if c.id == changed.id else c for c in self.comments]
                self.show()

        self.screen.app.push_screen(CommentDialog(target.where(), kind=target.kind, body=target.body), got)

    def delete(self) -> None:
        target = self._target()
        if target is None:
            self.screen.notify("No comment at the cursor.", severity="warning")
            return

        def done(confirmed: bool | None) -> None:
            if confirmed and call_store(self.screen, lambda store: data.delete_comment(store, target.id)) is not None:
                self.comments = [c for c in self.comments if c.id != target.id]
                self.show()
                self.screen.notify(f"Deleted comment #{target.id}.")

        self.screen.app.push_screen(
            ConfirmDialog(
                "Delete this comment?",
                f"{target.kind} on {safe_text(target.where())}:\n{safe_text(target.body, keep_newlines=True)}",
            ),
            done,
        )

    def copy_feedback(self) -> None:
        files = call_store(self.screen, lambda store: data.export_feedback(store, self.bundle_dir))
        if files is not None:
            self.screen.app.copy_to_clipboard(files.text)
            self.screen.notify(
                f"Feedback ({len(files.feedback.comments)} comment(s)) copied and written to "
                f"{safe_text(files.markdown)} and {safe_text(files.json.name)}.",
                markup=False,
                timeout=8,
            )

    def feedback_written(self) -> None:
        """After request changes: the comments are now recorded with the decision; say where the feedback is."""
        self.load()
        files = call_store(self.screen, lambda store: data.export_feedback(store, self.bundle_dir))
        if files is not None:
            self.screen.notify(
                f"Feedback with {len(files.feedback.comments)} comment(s): {safe_text(files.markdown)}",
                markup=False,
                timeout=8,
            )

"""The Review screen's decisions: their keys (``a`` ``A`` ``h`` ``d`` ``i``), the hunks left out of an
approval, the confirmation (its Mode B digest computed in the dialog's worker) and the recording, off the UI
thread, through screens/data.py (store/decisions.py)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType

from codebox_tui.bundle.digests import content_digest_b
from codebox_tui.bundle.reader import LoadedBundle
from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxScreen
from codebox_tui.screens.dialogs import ApplyDialog, ConfirmDialog, ReasonDialog
from codebox_tui.screens.review_comments import ReviewComments
from codebox_tui.screens.review_files import ReviewFiles
from codebox_tui.textsafe import safe_text
from widgets.decision_bar import DecisionBar
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree

# The confirmation's digest line, filled in by the dialog's worker (the digest hashes every changed byte).
DIGEST_PLACEHOLDER = "Content digest (Mode B): …"
APPROVALS = ("approve", "approve-files")


class ReviewDecisions:
    """Decisions on one bundle directory; files and hunks named by their Review keys (screens/review_files.py)."""

    # the screen's action ``decide(name)`` runs :meth:`act` (screens/review.py)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "decide('approve_all')", "Approve all", show=False, id="review.approve_all"),
        Binding("A", "decide('approve_selected')", "Approve selected", show=False, id="review.approve_selected"),
        Binding("h", "decide('toggle_hunk')", "Toggle hunk", show=False, id="review.toggle_hunk"),
        Binding("d", "decide('discard')", "Discard", show=False, id="review.discard"),
        Binding("i", "decide('iterate')", "Request changes", show=False, id="review.iterate"),
    ]

    def __init__(
        self,
        screen: CodeboxScreen[None],
        bundle_dir: Path,
        bundle: LoadedBundle,
        files: ReviewFiles,
        comments: ReviewComments,
        no_decision: str | None,
    ) -> None:
        self.screen = screen
        self.bundle_dir = bundle_dir
        self.bundle = bundle
        self.files = files
        self.comments = comments
        self.no_decision = no_decision  # an output-only bundle: why the decision keys cannot act
        self.skipped_hunks: dict[str, set[int]] = {}  # file key → 0-based hunks left out (``h``)
        self.hunk_totals: dict[str, int] = {}  # file key → its number of hunks (files shown)
        self.busy = ""  # what the decision worker is doing; decision keys wait for it

    def act(self, name: str) -> None:
        {
            "approve_all": self.approve_all,
            "approve_selected": self.approve_selected,
            "toggle_hunk": self.toggle_hunk,
            "discard": self.discard,
            "iterate": self.iterate,
        }[name]()

    # -- single hunks (docs/contracts.md, "Hunk selection") ------------------------------------------
    def hunk_picks(self, files: list[str]) -> tuple[dict[str, list[int]], set[str]]:
        """The 1-based approved hunks of each of ``files`` with hunks left out, and the files left out whole."""
        picks: dict[str, list[int]] = {}
        left_out: set[str] = set()
        for key in files:
            skipped = self.skipped_hunks.get(key)
            if not skipped:
                continue
            kept = [n + 1 for n in range(self.hunk_totals[key]) if n not in skipped]
            if kept:
                picks[key] = kept
            else:
                left_out.add(key)
        return picks, left_out

    def toggle_hunk(self) -> None:
        """Leave the hunk under the cursor out of the approval, or take it back in (``h``)."""
        view = self.screen.query_one(DiffView)
        place = view.hunk_location()
        if place is None:
            self.screen.notify("No hunk here to leave out (binary or empty change).", severity="warning")
            return
        key, index, total = place
        self.hunk_totals[key] = total
        skipped = self.skipped_hunks.setdefault(key, set())
        skipped.symmetric_difference_update({index})
        view.set_skipped_hunks(frozenset(skipped), path=key)
        state = "left out of" if index in skipped else "back in"
        self.screen.notify(
            f"{safe_text(key)}: hunk {index + 1} {state} the approval "
            f"({total - len(skipped)} of {total} hunks approved).",
            markup=False,
        )

    # -- the decision keys ---------------------------------------------------------------------------
    def approve_all(self) -> None:
        every = self.files.keys
        hunks, left_out = self.hunk_picks(every)
        if left_out:  # every hunk of some file left out: approve the others explicitly
            kept = [key for key in every if key not in left_out]
            if not kept:
                self.screen.notify("Every hunk is left out: nothing to approve.", severity="warning")
                return
            self.decide("approve-files", files=kept, hunks=hunks or None)
            return
        self.decide("approve", shown_files=every, hunks=hunks or None)

    def approve_selected(self) -> None:
        if self._refused_no_decision():
            return
        selected = sorted(self.screen.query_one(ChangedFileTree).selected)
        if not selected:
            self.screen.notify("Select files with space first.", severity="warning")
            return
        hunks, left_out = self.hunk_picks(selected)
        kept = [key for key in selected if key not in left_out]
        if not kept:
            self.screen.notify("Every hunk of the selected files is left out: nothing to approve.", severity="warning")
            return
        self.decide("approve-files", files=kept, hunks=hunks or None)

    def discard(self) -> None:
        self.decide("discard")

    def iterate(self) -> None:
        if self._refused_while_busy("iterate") or self._refused_no_decision():
            return

        def got(reason: str | None) -> None:
            if reason:
                self.decide("iterate", reason=reason)

        self.screen.app.push_screen(ReasonDialog(), got)

    # -- confirm, then record in a worker -------------------------------------------------------------
    def decide(
        self,
        action: str,
        files: list[str] | None = None,
        reason: str = "",
        shown_files: list[str] | None = None,
        hunks: dict[str, list[int]] | None = None,
    ) -> None:
        if self._refused_while_busy(action) or self._refused_no_decision():
            return
        if action in APPROVALS and not self.bundle.valid:
            self.screen.notify("An invalid bundle cannot be approved.", severity="error")
            return
        # ids shortened the way the title line does (a 64-hex id broke mid-string in an 80-column dialog; the
        # Provenance tab has them whole)
        short_id = self.bundle.id.removeprefix("artifact-bundle-sha256-")[:16]
        lines = [f"Bundle: {short_id}…", f"Action: {action}", f"Approver: {data.current_user()}", DIGEST_PLACEHOLDER]
        listed = files if files is not None else shown_files
        if listed is not None:
            lines.append("Files:")
            lines += [
                f"  - {safe_text(f)}"
                + (f"  ({len(hunks[f])} of {self.hunk_totals[f]} hunks)" if hunks and f in hunks else "")
                for f in listed
            ]
        if reason:
            lines.append(f"Reason: {reason}")
        issues = self.comments.open_issues
        if issues and action in APPROVALS:
            places = ", ".join(safe_text(c.where()) for c in issues[:3]) + (" …" if len(issues) > 3 else "")
            lines[:0] = [
                f"⚠ {len(issues)} open issue comment{'s' if len(issues) != 1 else ''} (must change): {places}",
                "",
            ]

        def verified() -> str:
            """In the dialog's worker: the Mode B digest (every changed byte hashed) and the store's warning."""
            full = [
                f"Content digest (Mode B): {self._content_digest_b()[:16]}…" if line is DIGEST_PLACEHOLDER else line
                for line in lines
            ]
            warning = data.decision_warning(self.bundle_dir)  # already discarded or applied: say so first
            return "\n".join([f"⚠ {warning}", "", *full] if warning else full)

        def done(confirmed: bool | None) -> None:
            if not confirmed or self._refused_while_busy(action):
                return
            self._set_busy(f"Verifying the bundle and recording {action}…")
            self.screen.run_worker(
                lambda: self._record(action, files, reason, hunks), thread=True, exclusive=True, group="decide"
            )

        waiting = [line for line in lines if line is not DIGEST_PLACEHOLDER]
        self.screen.app.push_screen(ConfirmDialog("Record this decision?", "\n".join(waiting), verify=verified), done)

    def _set_busy(self, doing: str) -> None:
        self.busy = doing
        self.screen.query_one(DecisionBar).busy = doing

    def _refused_no_decision(self) -> bool:
        """A decision key pressed on an output-only bundle: say why it cannot act (lazygit style)."""
        if self.no_decision is None:
            return False
        self.screen.notify(self.no_decision, severity="warning", markup=False)
        return True

    def _refused_while_busy(self, action: str) -> bool:
        """A decision key pressed while a decision is being verified and recorded: say why it cannot act
        (lazygit style) instead of starting a second one."""
        if not self.busy:
            return False
        self.screen.notify(f"{self.busy} — {action} waits until it is done.", severity="warning", markup=False)
        return True

    def _record(self, action: str, files: list[str] | None, reason: str, hunks: dict[str, list[int]] | None) -> None:
        """In a worker thread: verify the bundle (every file hashed once) and record the decision."""
        store = data.open_store()
        decision: data.Decision | None
        try:
            decision, problem = (
                data.decide(store, self.bundle_dir, action, files=files, reason=reason, hunks=hunks),
                None,
            )
        except Exception as error:  # a store refusal is shown, never a traceback
            decision, problem = None, safe_text(error)
        finally:
            store.close()
        self.screen.app.call_from_thread(self._decided, action, decision, problem)

    def _decided(self, action: str, decision: data.Decision | None, problem: str | None) -> None:
        self._set_busy("")
        if decision is None:
            self.screen.notify(problem or "The decision was not recorded.", severity="error", timeout=8, markup=False)
            return
        self.screen.query_one(DecisionBar).decision = f"{action} (#{decision.id})"
        self.screen.notify(f"Recorded {action} as decision #{decision.id}.")
        if action == "iterate":
            self.comments.feedback_written()
        if action in APPROVALS:
            self.screen.app.push_screen(ApplyDialog(decision.id))

    def _content_digest_b(self) -> str:
        """Mode B over the bytes on disk (what the decision binds to); bundles written by the reference
        do not record it in review.json."""
        recorded = self.bundle.review.evidence.contentDigestB
        try:
            return content_digest_b(self.bundle_dir)
        except OSError:
            return str(recorded or "?")

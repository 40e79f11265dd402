"""Review a bundle: changed-file tree, diff, tests, events, provenance; then decide."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import content_digest_b
from codebox_tui.bundle.reader import LoadedBundle
from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.keymap import key_for
from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxScreen
from codebox_tui.screens.dialogs import ApplyDialog, ConfirmDialog, ReasonDialog, TextDialog
from codebox_tui.screens.review_files import ReviewFiles
from codebox_tui.screens.review_text import ReviewText, escape, site_line_style
from codebox_tui.textsafe import safe_text
from widgets.decision_bar import DecisionBar
from widgets.diff_view import DiffView
from widgets.event_tail import EventTail
from widgets.evidence_view import EvidenceView
from widgets.file_tree import ChangedFileTree
from widgets.keys import key_display
from widgets.text_lines import TextLines

# The decision bar's hints and the bindings they name (the screen's own and the file tree's `space`).
DECISION_BINDINGS = {"approve_all": "review.approve_all", "approve_selected": "review.approve_selected",
                     "discard": "review.discard", "request_changes": "review.iterate", "select": "files.toggle"}


@dataclass(frozen=True)
class ReviewInputs:
    """Everything the Review screen reads from disk and the store before it can draw: the verified bundle
    (every file hashed), its changed files by key with their patch sections, the evaluation, checks and
    revisions."""

    bundle: LoadedBundle
    files: ReviewFiles
    evaluation: Any
    evaluation_problem: str | None
    checks: Any
    revisions: Any
    no_decision: str | None = None  # why no decision can be recorded (an output-only bundle), else None


def prepare_review(bundle_dir: Path) -> ReviewInputs:
    """Read and verify a bundle for review. Slow on a large bundle and free of Textual: run it in a worker
    (screens/opening.py). CodeboxError when the folder is not a readable bundle."""
    bundle = data.load(bundle_dir)
    evaluation, problem = data.patch_evaluation(bundle_dir)
    store = data.open_store()
    try:
        revisions = data.revision_view(store, bundle_dir)
    except Exception:  # a bundle of the chain that fails verification: no Revisions tab
        revisions = None
    try:
        no_decision = data.no_decision_reason(store, bundle_dir)
    finally:
        store.close()
    return ReviewInputs(bundle=bundle, files=ReviewFiles(bundle.changed_files, bundle.patch), evaluation=evaluation,
                        evaluation_problem=problem, checks=data.bundle_checks(bundle_dir, bundle.test_results),
                        revisions=revisions, no_decision=no_decision)


# The confirmation's digest line, filled in by the dialog's worker (the digest hashes every changed byte).
DIGEST_PLACEHOLDER = "Content digest (Mode B): …"


class ReviewScreen(CodeboxScreen[None]):
    CSS_PATH = "review.tcss"
    HELP = """\
# Review
Inspect what the sandbox changed, then decide. Decisions are recorded in the store with the
content digest you reviewed; nothing is applied until you choose an adapter.

## Hunks
- `h`: leave the hunk under the line cursor (or at the top of the diff) out of the approval, or take it
  back in. Left-out hunks are marked `✗ not approved`; `a` / `A` then approve the other hunks only, and
  the confirmation lists "k of n hunks" per file. The decision records each approved hunk's hash.

## Comments
- `c`: comment on the diff line under the line cursor (`J` / `K` or a click), or on the range selected with `v`
- `C`: comment on the whole file; `e` / `x`: edit / delete the comment at the cursor (or the file's comment)
- `Y`: write feedback.md and feedback.json next to the bundle and copy the Markdown
- Types: `issue` (must change), `suggestion`, `note`, `praise`. `i` (request changes) records the open
  comments with the decision and writes the feedback files.

## All files in one scroll
- `f`: every changed file in one scroll under its header, or back to one file at a time. Files already
  viewed are collapsed to their header (`z` shows or collapses the file at the cursor); `]` / `[` jump
  between files; search, the line cursor, comments and `h` work across all of them.

## Revisions and compare
- A later bundle for the same change is the next revision (same sandbox session or plugin and task, or
  `codebox review link NEW --revises OLD`): the Revisions tab shows each revision's decision and tests and
  what changed since the revision reviewed; earlier comments are carried over (outdated ones marked).
- `m`: compare this bundle with another one side by side (files, patches, tests, verdicts).
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve_all", "Approve all", show=False, id="review.approve_all"),
        Binding("A", "approve_selected", "Approve selected", show=False, id="review.approve_selected"),
        Binding("h", "toggle_hunk", "Toggle hunk", show=False, id="review.toggle_hunk"),
        Binding("d", "discard", "Discard", show=False, id="review.discard"),
        Binding("i", "iterate", "Request changes", show=False, id="review.iterate"),
        Binding("]", "next_file", "Next file", id="review.next_file"),
        Binding("[", "previous_file", "Prev file", id="review.previous_file"),
        Binding("escape", "back", "Back", id="review.back"),
        Binding("t", "show_tests", "Tests", show=False, id="review.tests"),
        Binding("/", "search", "Search diff", id="review.search"),
        Binding("c", "comment", "Comment", show=False, id="review.comment"),
        Binding("C", "comment_file", "Comment on file", show=False, id="review.comment_file"),
        Binding("e", "edit_comment", "Edit comment", show=False, id="review.edit_comment"),
        Binding("x", "delete_comment", "Delete comment", show=False, id="review.delete_comment"),
        Binding("Y", "copy_feedback", "Copy feedback", show=False, id="review.copy_feedback"),
        Binding("m", "compare", "Compare with…", show=False, id="review.compare"),
        Binding("f", "toggle_continuous", "All files / one file", show=False, id="review.continuous"),
        # The diff's own keys act from wherever the review has the focus (the file tree, the tab bar): same ids,
        # so a keymap remaps both at once; while the diff has the focus its own bindings come first.
        *(Binding(b.key, f"diff({b.action!r})", b.description, show=False, id=b.id)
          for b in DiffView.BINDINGS if isinstance(b, Binding)),
    ]

    def __init__(self, bundle_dir: Path, inputs: ReviewInputs | None = None, *, tab: str | None = None) -> None:
        """``inputs``: what :func:`prepare_review` read (in a worker, see screens/opening.py); read here when
        not given. ``tab``: the tab shown first (a run that ends on its verdict opens on ``tab-tests``)."""
        super().__init__()
        self.first_tab = tab
        self.bundle_dir = Path(bundle_dir)
        inputs = inputs if inputs is not None else prepare_review(self.bundle_dir)
        self.bundle = inputs.bundle
        self.files = inputs.files  # every changed file under its key (screens/review_files.py)
        self.evaluation, self.evaluation_problem = inputs.evaluation, inputs.evaluation_problem
        self.checks = inputs.checks
        self.text = ReviewText(self.bundle, self.bundle_dir, self.checks, self.evaluation, self.evaluation_problem)
        self.comments: list[Any] = []  # store.comments.Comment of this bundle directory
        self.revisions = inputs.revisions  # data.RevisionView when the review has several revisions
        self.no_decision = inputs.no_decision  # an output-only bundle: why the decision keys cannot act
        self.skipped_hunks: dict[str, set[int]] = {}  # file key → 0-based hunks left out (``h``)
        self.hunk_totals: dict[str, int] = {}  # file key → its number of hunks (files shown)
        self.continuous = False  # all files in one scroll (``f``) instead of one file
        self._seen_path: str | None = None  # the continuous view's current file, last marked viewed
        self.busy = ""  # what the decision worker is doing; decision keys wait for it

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        review = self.bundle.review
        stats = review.stats
        # Most important first, so a narrow terminal cuts only the prose (the full id is in Provenance).
        short = self.bundle.id.removeprefix("artifact-bundle-sha256-")[:16]
        counts = " · ".join(
            f"[{colour}]{sign}{count} {key}[/]" if count else f"[dim]0 {key}[/]"
            for count, key, sign, colour in ((stats.added, "added", "+", "green"),
                                             (stats.modified, "modified", "~", "yellow"),
                                             (stats.deleted, "deleted", "-", "red")))
        yield Static(f"[b]bundle {escape(short)}[/b]  {counts}  [dim]{escape(review.summary or '')}[/]",
                     id="review-title")
        if self.evaluation is not None or self.evaluation_problem:
            yield Static(self.text.verdict_line(), id="verdict")
        elif self.checks.verdict is not None:
            yield Static(self.text.recipe_line(), id="recipe-verdict")
        if review.riskFlags:
            yield Static(self.text.risk_line(), id="risks")
        with Horizontal(id="review-body"):
            yield ChangedFileTree(id="files")
            with TabbedContent(id="tabs"):
                with TabPane("Diff", id="tab-diff"):
                    yield Static("", id="diff-status", markup=False)
                    yield Input(placeholder="search the diff: enter searches, n / N next / previous, "
                                            "escape closes", id="diff-search", classes="hidden")
                    yield DiffView(id="diff")
                    yield Static("", id="comment-panel", classes="hidden")
                with TabPane("Tests", id="tab-tests"):
                    yield Static(self.text.tests_text(), id="tests")
                with TabPane("Evidence", id="tab-evidence"):
                    yield EvidenceView(self.bundle_dir, self.bundle.evidence, id="evidence")
                with TabPane("Events", id="tab-events"):
                    yield EventTail(self.bundle_dir / layout.EVENTS, id="events")
                if self.bundle.site_state is not None or self.bundle.site_state_problem:
                    with TabPane(self.text.site_tab_label(), id="tab-site"):
                        yield TextLines(self.text.site_lines(), styler=site_line_style, id="site")
                with TabPane("Provenance", id="tab-provenance"):
                    yield Static(self.text.provenance_text(), id="provenance")
                if self.revisions is not None:
                    with TabPane(f"Revisions ({len(self.revisions.revisions)})", id="tab-revisions"):
                        yield Static(self._revisions_text(), id="revisions")
        yield DecisionBar(id="decision-bar")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.query_one(ChangedFileTree)
        tree.load(self.bundle.changed_files, key_of=self.files.key_of)
        bar = self.query_one(DecisionBar)
        bar.show_keys(self._decision_keys())
        bar.valid = self.bundle.valid
        bar.total = len(self.bundle.changed_files)
        bar.blocked = "output only: nothing to decide" if self.no_decision else ""
        if not self.bundle.changed_files:
            self.query_one(DiffView).show_message("The sandbox produced no file changes.")
        else:
            first = sorted(self.files.keys)[0]
            # after the tree has laid out its lines: a cursor moved before that stays on the first folder
            self.call_after_refresh(self._show_first, first)
        self._load_comments()
        if not self.bundle.valid:
            codes = ", ".join(sorted({v.code for v in self.bundle.verification.violations}))
            self.notify(f"This bundle failed verification ({codes}); it can be inspected but not approved.",
                        severity="error", timeout=8)
        tree.focus()
        if self.first_tab is not None:
            self.query_one("#tabs", TabbedContent).active = self.first_tab

    def _show_first(self, rel: str) -> None:
        """Open on the first file, unless a file was chosen already."""
        tree = self.query_one(ChangedFileTree)
        node = tree.cursor_node
        if node is None or node.data is None:
            tree.highlight_path(rel)

    def _show(self, entry: ChangedFile) -> None:
        rel = self.files.key_of(entry)
        block = self.files.block(rel)
        view = self.query_one(DiffView)
        if self.continuous and view.continuous and view.scroll_to_file(rel):
            self.query_one(ChangedFileTree).mark_viewed(entry)
            self._show_comments()
            return
        if block is None:
            view.show_message(f"No patch block for {rel}.")
        else:
            view.show_file(rel, block)
            view.set_skipped_hunks(frozenset(self.skipped_hunks.get(rel, ())))
        self.query_one(ChangedFileTree).mark_viewed(entry)
        self._show_comments()

    def on_descendant_focus(self, _event: events.DescendantFocus) -> None:
        """The focused pane is visible: the diff's status line lights up while the diff has the focus (the
        file tree's edge by CSS, review.tcss)."""
        focused = self.focused
        diff = focused is not None and focused.id in ("diff", "diff-search")
        self.query_one("#diff-status", Static).set_class(diff, "pane-focused")

    def on_diff_view_status_changed(self, message: DiffView.StatusChanged) -> None:
        self.query_one("#diff-status", Static).update(message.text)
        if self.continuous:  # the file now under the cursor (or at the top) counts as viewed
            path = self.query_one(DiffView).current_path()
            if path is not None and path != self._seen_path:
                self._seen_path = path
                entry = self._entry(path)
                if entry is not None:
                    self.query_one(ChangedFileTree).mark_viewed(entry)
                self._show_comments()

    def _entry(self, rel: str) -> ChangedFile | None:
        found = self.files.get(rel)
        return found.entry if found is not None else None

    async def action_diff(self, action: str) -> None:
        """A diff key pressed while another pane has the focus: show the Diff tab and act there, or say why it
        cannot act."""
        view = self.query_one(DiffView)
        if view.model is None:
            self.notify("No diff is shown: pick a changed file in the tree first.", severity="warning")
            return
        tabs = self.query_one("#tabs", TabbedContent)
        if tabs.active != "tab-diff":
            tabs.active = "tab-diff"
        await view.run_action(action)

    def action_toggle_continuous(self) -> None:
        """All changed files in one scroll (viewed ones collapsed), or back to one file (``f``)."""
        view = self.query_one(DiffView)
        tree = self.query_one(ChangedFileTree)
        current = view.current_path()
        self.continuous = not self.continuous
        self.query_one("#tabs", TabbedContent).active = "tab-diff"
        if not self.continuous:
            entry = self._entry(current or "")
            if entry is not None:
                self._show(entry)
            self.notify("One file at a time (f: all files in one scroll).")
            return
        files = self.files.shown()
        if not files:
            self.continuous = False
            self.notify("No file patches to show.", severity="warning")
            return
        collapsed = {f.key for f in self.files.files if tree.is_viewed(f.entry) and f.key != current}
        view.show_files(files, collapsed=collapsed, at=current)
        for rel, skipped in self.skipped_hunks.items():
            view.set_skipped_hunks(frozenset(skipped), path=rel)
        self._seen_path = None
        self._show_comments()
        self.notify(f"All {len(files)} files in one scroll ({len(collapsed)} viewed, collapsed: z shows one); "
                    "f: one file at a time.")

    # -- search in the diff ------------------------------------------------------------------
    def _decision_keys(self) -> dict[str, str]:
        """The decision keys in force: the app's keymap (docs/settings.md) over the bindings' own keys."""
        keymap = self.app.active_keymap
        defaults = {b.id: b.key for b in [*self.BINDINGS, *ChangedFileTree.BINDINGS] if isinstance(b, Binding) and b.id}
        return {hint: key_display(key_for(binding_id, defaults[binding_id], keymap))
                for hint, binding_id in DECISION_BINDINGS.items()}

    def action_search(self) -> None:
        """Open the search field above the diff (``/``); ``enter`` searches, ``escape`` closes it."""
        self.query_one("#tabs", TabbedContent).active = "tab-diff"
        field = self.query_one("#diff-search", Input)
        field.remove_class("hidden")
        field.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        if message.input.id != "diff-search":
            return
        view = self.query_one(DiffView)
        message.input.add_class("hidden")  # the status line shows the term and the count; `/` reopens it
        total = view.search(message.value)
        if message.value and not total:
            self.notify(f"No match for {safe_text(message.value)!r} in this file.", severity="warning",
                        markup=False)
        view.focus()

    def _close_search(self) -> bool:
        field = self.query_one("#diff-search", Input)
        if field.has_focus:
            field.add_class("hidden")
            self.query_one(DiffView).focus()
            return True
        return False

    def on_changed_file_tree_file_highlighted(self, message: ChangedFileTree.FileHighlighted) -> None:
        self._show(message.entry)

    def on_changed_file_tree_selection_changed(self, message: ChangedFileTree.SelectionChanged) -> None:
        self.query_one(DecisionBar).selected = len(message.selected)

    def on_event_tail_inspect(self, message: EventTail.Inspect) -> None:
        text = json.dumps(message.event, indent=2) if isinstance(message.event, dict) else str(message.event)
        self.app.push_screen(TextDialog("Event", text))

    # -- navigation ------------------------------------------------------------------------
    def _move(self, step: int) -> None:
        files = self.files.keys
        tree = self.query_one(ChangedFileTree)
        node = tree.cursor_node
        current = self.files.key_of(node.data) if node and node.data else None
        view = self.query_one(DiffView)
        if self.continuous and view.continuous and view.model is not None:  # the order of the scroll
            order = [path for path, _row, _hunk in view.model.sections]
            here = view.current_path()
            target = order[((order.index(here) if here in order else -1) + step) % len(order)]
            view.scroll_to_file(target)
            tree.highlight_path(target)
            return
        if not files:
            return
        index = files.index(current) if current in files else -1
        target = files[(index + step) % len(files)]
        tree.highlight_path(target)

    def action_next_file(self) -> None:
        self._move(1)

    def action_previous_file(self) -> None:
        self._move(-1)

    def action_back(self) -> None:
        if self._close_search():
            return
        self.app.pop_screen()

    def action_show_tests(self) -> None:
        self.query_one("#tabs", TabbedContent).active = "tab-tests"

    # -- decisions -------------------------------------------------------------------------
    def _decide(self, action: str, files: list[str] | None = None, reason: str = "",
                shown_files: list[str] | None = None, hunks: dict[str, list[int]] | None = None) -> None:
        if self._refused_while_busy(action) or self._refused_no_decision():
            return
        if action in ("approve", "approve-files") and not self.bundle.valid:
            self.notify("An invalid bundle cannot be approved.", severity="error")
            return
        # ids shortened the way the title line does (a 64-hex id broke mid-string in an 80-column dialog; the
        # Provenance tab has them whole)
        short_id = self.bundle.id.removeprefix("artifact-bundle-sha256-")[:16]
        lines = [f"Bundle: {short_id}…", f"Action: {action}", f"Approver: {data.current_user()}",
                 DIGEST_PLACEHOLDER]
        listed = files if files is not None else shown_files
        if listed is not None:
            lines.append("Files:")
            lines += [f"  - {safe_text(f)}" + (f"  ({len(hunks[f])} of {self.hunk_totals[f]} hunks)"
                                               if hunks and f in hunks else "") for f in listed]
        if reason:
            lines.append(f"Reason: {reason}")
        issues = [c for c in self.comments if c.kind == "issue" and c.decision_id is None]
        if issues and action in ("approve", "approve-files"):
            places = ", ".join(safe_text(c.where()) for c in issues[:3]) + (" …" if len(issues) > 3 else "")
            lines[:0] = [f"⚠ {len(issues)} open issue comment{'s' if len(issues) != 1 else ''} "
                         f"(must change): {places}", ""]

        def verified() -> str:
            """In the dialog's worker: the Mode B digest (every changed byte hashed) and the store's warning."""
            full = [f"Content digest (Mode B): {self._content_digest_b()[:16]}…" if line is DIGEST_PLACEHOLDER
                    else line for line in lines]
            warning = data.decision_warning(self.bundle_dir)  # already discarded or applied: say so first
            return "\n".join([f"⚠ {warning}", "", *full] if warning else full)

        def done(confirmed: bool | None) -> None:
            if not confirmed or self._refused_while_busy(action):
                return
            self._set_busy(f"Verifying the bundle and recording {action}…")
            self._record_decision(action, files, reason, hunks)

        waiting = [line for line in lines if line is not DIGEST_PLACEHOLDER]
        self.app.push_screen(ConfirmDialog("Record this decision?", "\n".join(waiting), verify=verified), done)

    def _set_busy(self, doing: str) -> None:
        self.busy = doing
        self.query_one(DecisionBar).busy = doing

    def _refused_no_decision(self) -> bool:
        """A decision key pressed on an output-only bundle: say why it cannot act (lazygit style)."""
        if self.no_decision is None:
            return False
        self.notify(self.no_decision, severity="warning", markup=False)
        return True

    def _refused_while_busy(self, action: str) -> bool:
        """A decision key pressed while a decision is being verified and recorded: say why it cannot act
        (lazygit style) instead of starting a second one."""
        if not self.busy:
            return False
        self.notify(f"{self.busy} — {action} waits until it is done.", severity="warning", markup=False)
        return True

    @work(thread=True, exclusive=True, group="decide")
    def _record_decision(self, action: str, files: list[str] | None, reason: str,
                         hunks: dict[str, list[int]] | None) -> None:
        """Verify the bundle (every file hashed once) and record the decision, off the UI thread."""
        store = data.open_store()
        try:
            decision, problem = data.decide(store, self.bundle_dir, action, files=files, reason=reason,
                                            hunks=hunks), None
        except Exception as error:  # a store refusal is shown, never a traceback
            decision, problem = None, safe_text(error)
        finally:
            store.close()
        self.app.call_from_thread(self._decided, action, decision, problem)

    def _decided(self, action: str, decision: Any, problem: str | None) -> None:
        self._set_busy("")
        if decision is None:
            self.notify(problem or "The decision was not recorded.", severity="error", timeout=8, markup=False)
            return
        self.query_one(DecisionBar).decision = f"{action} (#{decision.id})"
        self.notify(f"Recorded {action} as decision #{decision.id}.")
        if action == "iterate":
            self._feedback_written()
        if action in ("approve", "approve-files"):
            self.app.push_screen(ApplyDialog(decision.id))

    def _content_digest_b(self) -> str:
        """Mode B over the bytes on disk (what the decision binds to); bundles written by the reference
        do not record it in review.json."""
        recorded = self.bundle.review.evidence.contentDigestB
        try:
            return content_digest_b(self.bundle_dir)
        except OSError:
            return str(recorded or "?")

    def action_approve_all(self) -> None:
        every = self.files.keys
        hunks, left_out = self._hunk_picks(every)
        if left_out:  # every hunk of some file left out: approve the others explicitly
            kept = [rel for rel in every if rel not in left_out]
            if not kept:
                self.notify("Every hunk is left out: nothing to approve.", severity="warning")
                return
            self._decide("approve-files", files=kept, hunks=hunks or None)
            return
        self._decide("approve", shown_files=every, hunks=hunks or None)

    def action_approve_selected(self) -> None:
        if self._refused_no_decision():
            return
        selected = sorted(self.query_one(ChangedFileTree).selected)
        if not selected:
            self.notify("Select files with space first.", severity="warning")
            return
        hunks, left_out = self._hunk_picks(selected)
        kept = [rel for rel in selected if rel not in left_out]
        if not kept:
            self.notify("Every hunk of the selected files is left out: nothing to approve.", severity="warning")
            return
        self._decide("approve-files", files=kept, hunks=hunks or None)

    # -- single hunks (docs/contracts.md, "Hunk selection") ------------------------------------------
    def _hunk_picks(self, files: list[str]) -> tuple[dict[str, list[int]], set[str]]:
        """The 1-based approved hunks of each of ``files`` with hunks left out, and the files left out whole."""
        picks: dict[str, list[int]] = {}
        left_out: set[str] = set()
        for rel in files:
            skipped = self.skipped_hunks.get(rel)
            if not skipped:
                continue
            kept = [n + 1 for n in range(self.hunk_totals[rel]) if n not in skipped]
            if kept:
                picks[rel] = kept
            else:
                left_out.add(rel)
        return picks, left_out

    def action_toggle_hunk(self) -> None:
        """Leave the hunk under the cursor out of the approval, or take it back in (``h``)."""
        view = self.query_one(DiffView)
        place = view.hunk_location()
        if place is None:
            self.notify("No hunk here to leave out (binary or empty change).", severity="warning")
            return
        rel, index, total = place
        self.hunk_totals[rel] = total
        skipped = self.skipped_hunks.setdefault(rel, set())
        skipped.symmetric_difference_update({index})
        view.set_skipped_hunks(frozenset(skipped), path=rel)
        state = "left out of" if index in skipped else "back in"
        self.notify(f"{safe_text(rel)}: hunk {index + 1} {state} the approval "
                    f"({total - len(skipped)} of {total} hunks approved).", markup=False)

    def action_discard(self) -> None:
        self._decide("discard")

    def action_iterate(self) -> None:
        if self._refused_while_busy("iterate") or self._refused_no_decision():
            return

        def got(reason: str | None) -> None:
            if reason:
                self._decide("iterate", reason=reason)

        self.app.push_screen(ReasonDialog(), got)



    # -- comments (store/comments.py through screens/data.py) --------------------------------------
    def _load_comments(self) -> None:
        store = data.open_store()
        try:
            self.comments = data.comments(store, self.bundle_dir)
        except Exception as error:  # an unreadable store is reported, the review goes on
            self.notify(f"Comments could not be loaded: {safe_text(error)}", severity="warning", markup=False)
            self.comments = []
        finally:
            store.close()
        self._show_comments()

    def _current_path(self) -> str | None:
        """The file under the diff's line cursor (or at its top, in the continuous view)."""
        return self.query_one(DiffView).current_path()

    def _show_comments(self) -> None:
        """Marks in the diff for the shown file's line comments; the panel under the diff lists the file's
        comments and those on the cursor's lines."""
        view = self.query_one(DiffView)
        path = self._current_path()
        mine = [c for c in self.comments if c.path == path]
        carried = [c for c in (self.revisions.carried if self.revisions else []) if c.path == path]
        # every file's line comments: the continuous view shows them all, one file's view its own
        everywhere = self.comments + (self.revisions.carried if self.revisions else [])
        on_lines: dict[str, list[Any]] = {}
        for c in everywhere:
            if c.side != "file" and not c.outdated:
                on_lines.setdefault(c.path, []).append(c)
        view.set_marks_by_file({p: [(c.side, c.line_start, c.line_end, c.kind) for c in cs]
                                for p, cs in on_lines.items()})
        # inline: each line comment under the last line it names (DiffView.set_notes_by_file, Line API)
        view.set_notes_by_file({p: [(c.side, c.line_end, c.kind, f"{c.body}  — {c.author} #{c.id}") for c in cs]
                                for p, cs in on_lines.items()})
        panel = self.query_one("#comment-panel", Static)
        shown = list({c.id: c for c in self._comments_at_cursor() + [c for c in mine if c.side == "file"]}.values())
        others = len(mine) - len(shown)
        at = {c.id for c in self._comments_at_cursor(carried)}
        from_before = [c for c in carried if c.id in at or c.side == "file" or c.outdated]
        if not shown and not mine and not from_before:
            panel.add_class("hidden")
            panel.update("")
            return
        lines = []
        for c in shown:
            colour = {"issue": "red", "suggestion": "yellow", "note": "blue", "praise": "green"}.get(c.kind, "white")
            sent = f" [dim](sent with decision #{c.decision_id})[/]" if c.decision_id is not None else ""
            lines.append(f"[b {colour}]● {c.kind}[/] [dim]#{c.id} {escape(c.where())} · {escape(c.author)}[/]{sent}"
                         f"\n  {escape(c.body)}")
        if others:
            lines.append(f"[dim]{others} more comment(s) on this file: the ● lines[/]")
        for c in from_before:
            number = self.revisions.number_of(c.bundle_key) if self.revisions else 0
            state = "[b yellow]outdated[/] " if c.outdated else ""
            lines.append(f"[dim]revision {number}:[/] {state}[b]{c.kind}[/] [dim]#{c.id} {escape(c.where())}[/]"
                         f"\n  {escape(c.body)}")
        panel.update("\n".join(lines))
        panel.remove_class("hidden")

    def _comments_at_cursor(self, among: list[Any] | None = None) -> list[Any]:
        view = self.query_one(DiffView)
        path = self._current_path()
        rows = [view.rows[i] for i in view.selected_rows() if 0 <= i < len(view.rows)]
        found = []
        for c in self.comments if among is None else among:
            if c.path != path or c.side == "file":
                continue
            if any((r.kind != "del" and r.new_no is not None and c.covers("new", r.new_no)) or
                   (r.kind != "add" and r.old_no is not None and c.covers("old", r.old_no)) for r in rows):
                found.append(c)
        return found

    def on_diff_view_cursor_moved(self, _message: DiffView.CursorMoved) -> None:
        self._show_comments()

    def _comment_target(self) -> Any:
        """The comment at the cursor, else the shown file's (first) file comment."""
        at = self._comments_at_cursor()
        if at:
            return at[0]
        path = self._current_path()
        return next((c for c in self.comments if c.path == path and c.side == "file"), None)

    def _store_call(self, call: Any) -> Any:
        """Run ``call(store)``; a refusal is shown (never a traceback) and None returned."""
        store = data.open_store()
        try:
            return call(store)
        except Exception as error:
            self.notify(safe_text(error), severity="error", timeout=8, markup=False)
            return None
        finally:
            store.close()

    def _ask_comment(self, lines: tuple[str, int, int] | None) -> None:
        path = self._current_path()
        if path is None:
            self.notify("Open a changed file first.", severity="warning")
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
            comment = self._store_call(lambda store: data.add_comment(store, self.bundle_dir, path=path, kind=kind,
                                                                      body=body, lines=lines))
            if comment is not None:
                self.comments.append(comment)
                self.query_one(DiffView).anchor_row = None
                self._show_comments()
                self.notify(f"Comment #{comment.id} ({kind}) on {safe_text(comment.where())}.", markup=False)

        from codebox_tui.screens.comments import CommentDialog

        self.app.push_screen(CommentDialog(where), got)

    def action_comment(self) -> None:
        lines = self.query_one(DiffView).selected_lines()
        if lines is None:
            self.notify("Put the line cursor on a changed or context line first (J / K or a click); "
                        "C comments on the whole file.", severity="warning")
            return
        self._ask_comment(lines)

    def action_comment_file(self) -> None:
        self._ask_comment(None)

    def action_edit_comment(self) -> None:
        target = self._comment_target()
        if target is None:
            self.notify("No comment at the cursor.", severity="warning")
            return

        def got(answer: tuple[str, str] | None) -> None:
            if answer is None:
                return
            kind, body = answer
            changed = self._store_call(lambda store: data.edit_comment(store, target.id, kind=kind, body=body))
            if changed is not None:
                self.comments = [changed if c.id == changed.id else c for c in self.comments]
                self._show_comments()

        from codebox_tui.screens.comments import CommentDialog

        self.app.push_screen(CommentDialog(target.where(), kind=target.kind, body=target.body), got)

    def action_delete_comment(self) -> None:
        target = self._comment_target()
        if target is None:
            self.notify("No comment at the cursor.", severity="warning")
            return

        def done(confirmed: bool | None) -> None:
            if confirmed and self._store_call(lambda store: data.delete_comment(store, target.id)) is not None:
                self.comments = [c for c in self.comments if c.id != target.id]
                self._show_comments()
                self.notify(f"Deleted comment #{target.id}.")

        self.app.push_screen(ConfirmDialog("Delete this comment?", f"{target.kind} on {safe_text(target.where())}:\n"
                                           f"{safe_text(target.body, keep_newlines=True)}"), done)

    def action_copy_feedback(self) -> None:
        files = self._store_call(lambda store: data.export_feedback(store, self.bundle_dir))
        if files is not None:
            self.app.copy_to_clipboard(files.text)
            self.notify(f"Feedback ({len(files.feedback.comments)} comment(s)) copied and written to "
                        f"{safe_text(files.markdown)} and {safe_text(files.json.name)}.", markup=False, timeout=8)

    def _feedback_written(self) -> None:
        """After request changes: the comments are now recorded with the decision; say where the feedback is."""
        self._load_comments()
        files = self._store_call(lambda store: data.export_feedback(store, self.bundle_dir))
        if files is not None:
            self.notify(f"Feedback with {len(files.feedback.comments)} comment(s): {safe_text(files.markdown)}",
                        markup=False, timeout=8)

    # -- revisions (store/revisions.py through screens/data.py) --------------------------------------
    def _revisions_text(self) -> str:
        view = self.revisions
        if view is None:
            return ""
        lines = [f"[b]Revision {view.number} of {len(view.revisions)}[/b]"]
        previous: dict[str, Any] = {}
        for r in view.revisions:
            here = "  [b]◀ this bundle[/]" if r.number == view.number else ""
            decision = r.decision.action if r.decision else "undecided"
            tests = r.tests
            text = (f"{tests.get('passed', 0)}/{tests.get('total', 0)} passed, {tests.get('failed', 0)} failed"
                    if "total" in tests else "no tests")
            delta = ""
            if "total" in tests and "total" in previous:
                change = [f"{key} {tests.get(key, 0) - previous.get(key, 0):+d}" for key in ("passed", "failed")
                          if tests.get(key, 0) != previous.get(key, 0)]
                delta = f" [dim]({', '.join(change) or 'same as before'})[/]"
            verdict = f" · verdict {escape(r.verdict)}" if r.verdict else ""
            linked = f" [dim]linked by {r.how}[/]" if r.how else ""
            lines.append(f"  {r.number}. {r.bundle.ref} [dim]{r.bundle.content_digest[:12]}[/] {escape(decision)} · "
                         f"{escape(text)}{delta}{verdict}{linked}{here}")
            previous = tests
        if view.carried:
            outdated = sum(1 for c in view.carried if c.outdated)
            lines += ["", f"[b]Comments from earlier revisions[/b] ({len(view.carried)}, {outdated} outdated)"]
            for c in view.carried:
                state = " [yellow]outdated[/]" if c.outdated else ""
                lines.append(f"  r{view.number_of(c.bundle_key)} {c.kind} {escape(c.where())}{state}: {escape(c.body)}")
        if view.base is None:
            lines += ["", "This is the first revision; later ones are listed above."]
            return "\n".join(lines)
        lines += ["", f"[b]What changed since revision {view.base.number}[/b]"
                      f"{' (the one reviewed)' if view.base.decision else ''}"]
        for f in view.interdiff:
            colour = {"unchanged": "dim", "changed": "yellow", "new-in-revision": "green"}.get(f.change, "red")
            lines.append(f"[{colour}]{f.change:<20}[/] {escape(f.path)}")
            for line in f.lines[:400]:
                style = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1], "")
                shown = escape(safe_text(line, tab_size=4))
                lines.append(f"    [{style}]{shown}[/]" if style else f"    {shown}")
            if len(f.lines) > 400:
                lines.append(f"    … {len(f.lines) - 400} more lines (codebox review revisions --interdiff)")
        return "\n".join(lines)

    # -- compare (store/compare.py through screens/data.py) --------------------------------------------
    def action_compare(self) -> None:
        from codebox_tui.screens.compare import CompareDialog, CompareScreen

        suggestion = ""
        if self.revisions is not None and self.revisions.base is not None:
            suggestion = self.revisions.base.bundle.ref

        def got(other: str | None) -> None:
            if not other:
                return
            result = self._store_call(lambda store: data.compare(store, self.bundle_dir, other))
            if result is not None:
                self.app.push_screen(CompareScreen(result))

        self.app.push_screen(CompareDialog(suggestion), got)

"""Review a bundle: changed-file tree, diff, tests, events, provenance; then decide."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer, Input, Static, TabbedContent, TabPane

from codebox_tui.bundle import layout
from codebox_tui.bundle.reader import LoadedBundle
from codebox_tui.bundle.results import BundleChecks
from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.keymap import key_for
from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxScreen
from codebox_tui.screens.dialogs import TextDialog
from codebox_tui.screens.review_comments import ReviewComments
from codebox_tui.screens.review_decisions import ReviewDecisions
from codebox_tui.screens.review_files import ReviewFiles
from codebox_tui.screens.review_revisions import ReviewRevisions
from codebox_tui.screens.review_text import ReviewText, escape, site_line_style
from codebox_tui.textsafe import safe_text
from widgets.app_header import AppHeader
from widgets.decision_bar import DecisionBar
from widgets.diff_view import DiffView
from widgets.event_tail import EventTail
from widgets.evidence_view import EvidenceView
from widgets.file_tree import ChangedFileTree
from widgets.keys import key_display
from widgets.text_lines import TextLines

# The decision bar's hints and the bindings they name (the screen's own and the file tree's `space`).
DECISION_BINDINGS = {
    "approve_all": "review.approve_all",
    "approve_selected": "review.approve_selected",
    "discard": "review.discard",
    "request_changes": "review.iterate",
    "select": "files.toggle",
}


@dataclass(frozen=True)
class ReviewInputs:
    """Everything the Review screen reads from disk and the store before it can draw: the verified bundle
    (every file hashed), its changed files by key with their patch sections, the evaluation, checks and
    revisions."""

    bundle: LoadedBundle
    files: ReviewFiles
    evaluation: data.JSONObject | None
    evaluation_problem: str | None
    checks: BundleChecks
    revisions: data.RevisionView | None
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
    return ReviewInputs(
        bundle=bundle,
        files=ReviewFiles(bundle.changed_files, bundle.patch),
        evaluation=evaluation,
        evaluation_problem=problem,
        checks=data.bundle_checks(bundle_dir, bundle.test_results),
        revisions=revisions,
        no_decision=no_decision,
    )


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
        *ReviewDecisions.BINDINGS,  # a A h d i
        Binding("]", "next_file", "Next file", id="review.next_file"),
        Binding("[", "previous_file", "Prev file", id="review.previous_file"),
        Binding("escape", "back", "Back", id="review.back"),
        Binding("t", "show_tests", "Tests", show=False, id="review.tests"),
        Binding("/", "search", "Search diff", id="review.search"),
        *ReviewComments.BINDINGS,  # c C e x Y
        *ReviewRevisions.BINDINGS,  # m
        Binding("f", "toggle_continuous", "All files / one file", show=False, id="review.continuous"),
        # The diff's own keys act from wherever the review has the focus (the file tree, the tab bar): same ids,
        # so a keymap remaps both at once; while the diff has the focus its own bindings come first.
        *(
            Binding(b.key, f"diff({b.action!r})", b.description, show=False, id=b.id)
            for b in DiffView.BINDINGS
            if isinstance(b, Binding)
        ),
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
        # one controller per concern, each owning its keys (their actions: comments(…), decide(…), revisions(…))
        self.revisions = ReviewRevisions(self, self.bundle_dir, inputs.revisions)
        self.comment_pane = ReviewComments(self, self.bundle_dir, inputs.revisions)
        self.decisions = ReviewDecisions(
            self, self.bundle_dir, self.bundle, self.files, self.comment_pane, inputs.no_decision
        )
        self.continuous = False  # all files in one scroll (``f``) instead of one file
        self._seen_path: str | None = None  # the continuous view's current file, last marked viewed

    @property
    def comments(self) -> list[data.Comment]:
        """This bundle directory's comments (the comments controller's)."""
        return self.comment_pane.comments

    @property
    def skipped_hunks(self) -> dict[str, set[int]]:
        """File key → 0-based hunks left out of the approval (the decisions controller's)."""
        return self.decisions.skipped_hunks

    def action_comments(self, name: str) -> None:
        self.comment_pane.act(name)

    def action_decide(self, name: str) -> None:
        self.decisions.act(name)

    def action_revisions(self, name: str) -> None:
        self.revisions.act(name)

    def compose(self) -> ComposeResult:
        yield AppHeader(icon="◆")
        review = self.bundle.review
        stats = review.stats
        # Most important first, so a narrow terminal cuts only the prose (the full id is in Provenance).
        short = self.bundle.id.removeprefix("artifact-bundle-sha256-")[:16]
        counts = " · ".join(
            f"[{colour}]{sign}{count} {key}[/]" if count else f"[dim]0 {key}[/]"
            for count, key, sign, colour in (
                (stats.added, "added", "+", "green"),
                (stats.modified, "modified", "~", "yellow"),
                (stats.deleted, "deleted", "-", "red"),
            )
        )
        yield Static(
            f"[b]bundle {escape(short)}[/b]  {counts}  [dim]{escape(review.summary or '')}[/]", id="review-title"
        )
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
                    yield Input(
                        placeholder="search the diff: enter searches, n / N next / previous, escape closes",
                        id="diff-search",
                        classes="hidden",
                    )
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
                if self.revisions.view is not None:
                    with TabPane(self.revisions.tab_label(), id="tab-revisions"):
                        yield Static(self.revisions.text(), id="revisions")
        yield DecisionBar(id="decision-bar")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.query_one(ChangedFileTree)
        tree.load(self.bundle.changed_files, key_of=self.files.key_of)
        bar = self.query_one(DecisionBar)
        bar.show_keys(self._decision_keys())
        bar.valid = self.bundle.valid
        bar.total = len(self.bundle.changed_files)
        bar.blocked = "output only: nothing to decide" if self.decisions.no_decision else ""
        if not self.bundle.changed_files:
            self.query_one(DiffView).show_message("The sandbox produced no file changes.")
        else:
            first = sorted(self.files.keys)[0]
            # after the tree has laid out its lines: a cursor moved before that stays on the first folder
            self.call_after_refresh(self._show_first, first)
        self.comment_pane.load()
        if not self.bundle.valid:
            codes = ", ".join(sorted({v.code for v in self.bundle.verification.violations}))
            self.notify(
                f"This bundle failed verification ({codes}); it can be inspected but not approved.",
                severity="error",
                timeout=8,
            )
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
            self.comment_pane.show()
            return
        if block is None:
            view.show_message(f"No patch block for {rel}.")
        else:
            view.show_file(rel, block)
            view.set_skipped_hunks(frozenset(self.skipped_hunks.get(rel, ())))
        self.query_one(ChangedFileTree).mark_viewed(entry)
        self.comment_pane.show()

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
                self.comment_pane.show()

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
        self.comment_pane.show()
        self.notify(
            f"All {len(files)} files in one scroll ({len(collapsed)} viewed, collapsed: z shows one); "
            "f: one file at a time."
        )

    def _decision_keys(self) -> dict[str, str]:
        """The decision keys in force: the app's keymap (docs/settings.md) over the bindings' own keys."""
        keymap = self.app.active_keymap
        defaults = {b.id: b.key for b in [*self.BINDINGS, *ChangedFileTree.BINDINGS] if isinstance(b, Binding) and b.id}
        return {
            hint: key_display(key_for(binding_id, defaults[binding_id], keymap))
            for hint, binding_id in DECISION_BINDINGS.items()
        }

    # -- search in the diff ------------------------------------------------------------------
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
            self.notify(f"No match for {safe_text(message.value)!r} in this file.", severity="warning", markup=False)
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

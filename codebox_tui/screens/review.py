"""Review a bundle: changed-file tree, diff, tests, events, provenance; then decide."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from rich.markup import escape as _markup_escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import content_digest_b
from codebox_tui.bundle.provenance import runtime_versions
from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.keymap import key_for
from codebox_tui.screens import data
from codebox_tui.screens.dialogs import ApplyDialog, ConfirmDialog, ReasonDialog, TextDialog
from codebox_tui.textsafe import safe_text
from widgets.decision_bar import DecisionBar
from widgets.diff_model import block_for, split_patch
from widgets.diff_view import DiffView
from widgets.event_tail import EventTail
from widgets.evidence_view import EvidenceView
from widgets.file_tree import ChangedFileTree
from widgets.keys import key_display


def escape(value: object) -> str:
    """Sandbox-written text for Rich markup: control characters shown as escapes, markup escaped."""
    return _markup_escape(safe_text(value))


VERDICT_STYLES = {"improvement": ("green", "✔"), "regression": ("red", "✘"), "neutral": ("white", "="),
                  "untested": ("yellow", "?"), "plugin-broken": ("red", "✘"),
                  "still-failing": ("yellow", "!"), "partial": ("yellow", "~")}  # the last two: older bundles


# The decision bar's hints and the bindings they name (the screen's own and the file tree's `space`).
DECISION_BINDINGS = {"approve_all": "review.approve_all", "approve_selected": "review.approve_selected",
                     "discard": "review.discard", "request_changes": "review.iterate", "select": "files.toggle"}


class ReviewScreen(Screen[None]):
    CSS_PATH = "review.tcss"
    HELP = """\
# Review
Inspect what the sandbox changed, then decide. Decisions are recorded in the store with the
content digest you reviewed; nothing is applied until you choose an adapter.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve_all", "Approve all", show=False, id="review.approve_all"),
        Binding("A", "approve_selected", "Approve selected", show=False, id="review.approve_selected"),
        Binding("d", "discard", "Discard", show=False, id="review.discard"),
        Binding("i", "iterate", "Request changes", show=False, id="review.iterate"),
        Binding("]", "next_file", "Next file", id="review.next_file"),
        Binding("[", "previous_file", "Prev file", id="review.previous_file"),
        Binding("escape", "back", "Back", id="review.back"),
        Binding("t", "show_tests", "Tests", show=False, id="review.tests"),
        Binding("/", "search", "Search diff", id="review.search"),
    ]

    def __init__(self, bundle_dir: Path) -> None:
        super().__init__()
        self.bundle_dir = Path(bundle_dir)
        self.bundle = data.load(self.bundle_dir)
        self.blocks = split_patch(self.bundle.patch)
        self.evaluation, self.evaluation_problem = data.patch_evaluation(self.bundle_dir)
        self.checks = data.bundle_checks(self.bundle_dir, self.bundle.test_results)

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        review = self.bundle.review
        stats = review.get("stats", {})
        # Most important first, so a narrow terminal cuts only the prose (the full id is in Provenance).
        short = self.bundle.id.removeprefix("artifact-bundle-sha256-")[:16]
        counts = " · ".join(
            f"[{colour}]{sign}{stats.get(key, 0)} {key}[/]" if stats.get(key, 0) else f"[dim]0 {key}[/]"
            for key, sign, colour in (("added", "+", "green"), ("modified", "~", "yellow"), ("deleted", "-", "red")))
        yield Static(f"[b]bundle {escape(short)}[/b]  {counts}  [dim]{escape(str(review.get('summary', '')))}[/]",
                     id="review-title")
        if self.evaluation is not None or self.evaluation_problem:
            yield Static(self._verdict_line(), id="verdict")
        elif self.checks.verdict is not None:
            yield Static(self._recipe_line(), id="recipe-verdict")
        if review.get("riskFlags"):
            yield Static(self._risk_line(), id="risks")
        with Horizontal(id="review-body"):
            yield ChangedFileTree(id="files")
            with TabbedContent(id="tabs"):
                with TabPane("Diff", id="tab-diff"):
                    yield Static("", id="diff-status", markup=False)
                    yield Input(placeholder="search the diff: enter searches, n / N next / previous, "
                                            "escape closes", id="diff-search", classes="hidden")
                    yield DiffView(id="diff")
                with TabPane("Tests", id="tab-tests"):
                    yield Static(self._tests_text(), id="tests")
                with TabPane("Evidence", id="tab-evidence"):
                    yield EvidenceView(self.bundle_dir, self.bundle.evidence, id="evidence")
                with TabPane("Events", id="tab-events"):
                    yield EventTail(self.bundle_dir / layout.EVENTS, id="events")
                with TabPane("Provenance", id="tab-provenance"):
                    yield Static(self._provenance_text(), id="provenance")
        yield DecisionBar(id="decision-bar")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.query_one(ChangedFileTree)
        tree.load(self.bundle.changed_files)
        bar = self.query_one(DecisionBar)
        bar.show_keys(self._decision_keys())
        bar.valid = self.bundle.valid
        bar.total = len(self.bundle.changed_files)
        if not self.bundle.changed_files:
            self.query_one(DiffView).show_message("The sandbox produced no file changes.")
        else:
            first = sorted(f.relativePath for f in self.bundle.changed_files)[0]
            tree.highlight_path(first)
        if not self.bundle.valid:
            codes = ", ".join(sorted({v.code for v in self.bundle.verification.violations}))
            self.notify(f"This bundle failed verification ({codes}); it can be inspected but not approved.",
                        severity="error", timeout=8)
        tree.focus()

    def _show(self, entry: ChangedFile) -> None:
        rel = entry.relativePath
        block = block_for(self.blocks, entry)
        view = self.query_one(DiffView)
        if block is None:
            view.show_message(f"No patch block for {rel}.")
        else:
            view.show_file(rel, block)
        self.query_one(ChangedFileTree).mark_viewed(entry)

    def on_diff_view_status_changed(self, message: DiffView.StatusChanged) -> None:
        self.query_one("#diff-status", Static).update(message.text)

    # -- search in the diff ------------------------------------------------------------------
    def _decision_keys(self) -> dict[str, str]:
        """The decision keys in force: the app's keymap (docs/settings.md) over the bindings' own keys."""
        keymap = getattr(self.app, "active_keymap", {})
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

    def _verdict_line(self) -> str:
        """One line for the header: the evaluate-patch verdict and its test delta in numbers."""
        if self.evaluation is None:
            return f"[b]Patch evaluation[/b] [red]unreadable:[/] {escape(self.evaluation_problem or '')}"
        ev = self.evaluation
        tests = ev["tests"]
        verdict = str(tests["verdict"])
        colour, mark = VERDICT_STYLES.get(verdict, ("white", "•"))
        parts = [f"[b {colour}]{mark} {verdict.upper()}[/]"]  # verdict and numbers first, names last
        if ev.get("applied") is False:
            parts.append("[red]did not apply[/]")
        parts.append(f"fixed {len(tests.get('fixed', []))} · broken {len(tests.get('broken', []))} · "
                     f"still failing {len(tests.get('stillFailing', []))}")
        before, after = tests.get("before"), tests.get("after")
        if isinstance(before, dict) and isinstance(after, dict):
            parts.append(f"passed {before.get('passed', 0)}/{before.get('tests', 0)} → "
                         f"{after.get('passed', 0)}/{after.get('tests', 0)}")
        parts.append(f"[dim]t: tests · patch {escape(str(ev.get('patch', '')))}[/]")
        return "  ".join(parts)

    def _recipe_line(self) -> str:
        """One line for the header: a recipe run's status and how many warnings and failures it had."""
        verdict = self.checks.verdict
        assert verdict is not None  # only called for a recipe-run bundle
        colour, mark = ("green", "✔") if verdict.passed else ("red", "✘")
        parts = [f"[b {colour}]{mark} RECIPE {verdict.status.upper()}[/]"]
        if verdict.failures:
            parts.append(f"[red]{len(verdict.failures)} failure{'s' if len(verdict.failures) != 1 else ''}[/]")
        if verdict.warnings:
            parts.append(f"[yellow]⚠ {len(verdict.warnings)} warning{'s' if len(verdict.warnings) != 1 else ''}[/]")
        failed = sum(1 for p in self.checks.probes if p.status != "passed")
        parts.append(f"probes {len(self.checks.probes) - failed}/{len(self.checks.probes)} passed")
        parts.append("[dim]t: tests and probes[/]")
        return "  ".join(parts)

    def _checks_lines(self) -> list[str]:
        """Probes (recipe probes, evaluate-patch's front-end probe) and a recipe run's failures and warnings;
        every value is already shortened and terminal-safe (bundle/checks.py), markup is escaped here."""
        checks = self.checks
        lines = ["", f"[b]Probes ({len(checks.probes)})[/b]" + ("" if checks.probes else "  none in this bundle")]
        for probe in checks.probes:
            if probe.status == "passed":
                lines.append(f"  [green]✔[/] {escape(probe.name)}")
                continue
            colour = "yellow" if probe.allow_failure else "red"
            soft = " (allowFailure)" if probe.allow_failure else ""
            lines.append(f"  [{colour}]✘ {escape(probe.name)}: {escape(probe.status)}{soft}[/]")
            if probe.expected is not None:
                lines.append(f"      expected  {escape(probe.expected)}")
            if probe.actual is not None:
                lines.append(f"      got       {escape(probe.actual)}")
            if probe.message and probe.actual is None:
                lines.append(f"      {escape(probe.message)}")
        verdict = checks.verdict
        if verdict is not None:
            colour = "green" if verdict.passed else "red"
            lines += ["", f"[b]Recipe run: [{colour}]{escape(verdict.status)}[/][/b]"]
            lines += [f"  [red]✘ {escape(f['what'])}:[/] {escape(f['message'])}" for f in verdict.failures]
            lines += [f"  [yellow]⚠ warning {escape(w['what'])}:[/] {escape(w['message'])}" for w in verdict.warnings]
        lines += [f"[red]{escape(p)}[/]" for p in checks.problems]
        return lines

    def _risk_line(self) -> str:
        """Risk flags where they cannot be missed; the details are in the Provenance tab."""
        flags = [str(f) for f in self.bundle.review.get("riskFlags", [])]
        uncaptured = sum(1 for s in self.bundle.skipped if s.get("reason") == "changed-in-skipped-directory")
        shown = [escape(f) + (f" ({uncaptured})" if f == "changes-in-uncaptured-directories" else "") for f in flags]
        return f"[b yellow]⚠ {len(flags)} risk{'s' if len(flags) != 1 else ''}:[/] " + " · ".join(shown) + \
            "  [dim](Provenance tab)[/]"

    def _delta_lines(self) -> list[str]:
        if self.evaluation is None:
            return [f"[red]Patch evaluation unreadable:[/] {escape(self.evaluation_problem or '')}", ""] \
                if self.evaluation_problem else []
        tests = self.evaluation["tests"]
        verdict = str(tests["verdict"])
        colour, mark = VERDICT_STYLES.get(verdict, ("white", "•"))
        lines = [f"[b]Test delta (evaluate-patch):[/b] [b {colour}]{mark} {verdict}[/]"]
        if tests.get("reason"):
            lines.append(f"  [{colour}]{escape(str(tests['reason']))}[/]")
        for key, label, style in (("fixed", "Fixed", "green"), ("broken", "Broken", "red"),
                                  ("stillFailing", "Still failing", "yellow"), ("added", "Added", "cyan"),
                                  ("removed", "Removed", "dim")):
            names = tests.get(key) or []
            lines.append(f"  [{style}]{label} ({len(names)})[/]" + (":" if names else ""))
            lines += [f"    {escape(str(name))}" for name in names]
        for phase in ("before", "after"):
            counts = tests.get(phase)
            if isinstance(counts, dict):
                lines.append(f"  {phase:<6} {counts.get('status')}: {counts.get('passed', 0)} passed, "
                             f"{counts.get('failed', 0)} failed, {counts.get('skipped', 0)} skipped "
                             f"of {counts.get('tests', 0)}")
        return [*lines, ""]

    def _tests_text(self) -> str:
        tests = self.bundle.test_results
        summary = tests.summary
        lines = self._delta_lines()
        sides = [t for t in self.checks.tests if t.side != "all"]
        if sides:  # a suite ran before and after a patch: each side's totals, never one merged status
            lines += [f"[b]Tests {escape(t.line())}[/b]" for t in sides]
        else:
            lines.append(f"[b]Tests: {escape(tests.status)}[/b]  total {escape(summary.total)} · "
                         f"passed {escape(summary.passed)} · failed {escape(summary.failed)} · "
                         f"skipped {escape(summary.skipped)}")
        for suite in tests.suites:
            lines.append(f"\n[b]{escape(suite.name)}[/b] ({escape(suite.phase or '')}) {escape(suite.status)}")
            for case in suite.cases:
                mark = {"passed": "[green]✔[/]", "failed": "[red]✘[/]", "error": "[red]✘[/]"}.get(
                    case.status, "[dim]-[/]")
                lines.append(f"  {mark} {escape(case.classname or '')}::{escape(case.name)}")
                if case.message:
                    lines.append(f"      [red]{escape(case.message)}[/]")
        if not tests.suites:
            lines.append("\nNo test-aware command ran in this sandbox.")
        return "\n".join(lines + self._checks_lines())

    def _provenance_text(self) -> str:
        meta = self.bundle.metadata
        verification = self.bundle.verification
        lines = [f"[b]Bundle[/b] {escape(self.bundle.id)}", f"[b]Path[/b] {escape(self.bundle_dir)}",
                 f"[b]Verified[/b] {'yes' if verification.valid else 'NO'}"]
        for violation in verification.violations[:20]:
            lines.append(f"  [red]{escape(violation.code)}[/] {escape(violation.path)}: {escape(violation.message)}")

        versions = runtime_versions(meta)
        wp, php = versions["wordpressVersion"] or "?", versions["phpVersion"] or "?"
        lines.append(f"[b]WordPress[/b] {escape(wp)}  [b]PHP[/b] {escape(php)}")
        lines.append(f"[b]Policy[/b] {escape(json.dumps(meta.get('policy', {})))}")
        for mount in meta.get("mounts", []):
            lines.append(f"[b]Mount[/b] {escape(mount.get('source'))} → {escape(mount.get('target'))} "
                         f"({escape(mount.get('mode'))})")
        for flag in self.bundle.review.get("riskFlags", []):
            lines.append(f"[b][yellow]Risk[/][/b] {escape(str(flag))}")
        skipped = self.bundle.skipped
        if skipped:
            lines.append(f"[b]Not captured[/b] ({len(skipped)}): content not in the bundle; changes inside "
                         "uncaptured folders (.git, node_modules) are listed so they can be checked by hand")
            for entry in skipped[:200]:
                change = f" [yellow]{escape(entry['change'])}[/]" if entry.get("change") else ""
                lines.append(f"  {escape(str(entry.get('relativePath')))}{change} "
                             f"[dim]{escape(entry.get('reason'))}[/]")
            if len(skipped) > 200:
                lines.append(f"  … {len(skipped) - 200} more in {layout.CHANGED_FILES}")
        return "\n".join(lines)

    # -- navigation ------------------------------------------------------------------------
    def _move(self, step: int) -> None:
        files = [f.relativePath for f in self.bundle.changed_files]
        tree = self.query_one(ChangedFileTree)
        node = tree.cursor_node
        current = node.data.relativePath if node and node.data else None
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
                shown_files: list[str] | None = None) -> None:
        if action in ("approve", "approve-files") and not self.bundle.valid:
            self.notify("An invalid bundle cannot be approved.", severity="error")
            return
        lines = [f"Bundle: {self.bundle.id}", f"Action: {action}", f"Approver: {data.current_user()}",
                 f"Content digest (Mode B): {self._content_digest_b()}"]
        listed = files if files is not None else shown_files
        if listed is not None:
            lines.append("Files:")
            lines += [f"  - {safe_text(f)}" for f in listed]
        if reason:
            lines.append(f"Reason: {reason}")
        warning = data.decision_warning(self.bundle_dir)  # already discarded or applied: say so first
        if warning:
            lines[:0] = [f"⚠ {warning}", ""]

        def done(confirmed: bool | None) -> None:
            if not confirmed:
                return
            store = data.open_store()
            try:
                decision = data.decide(store, self.bundle_dir, action, files=files, reason=reason)
            except Exception as error:  # a store refusal is shown, never a traceback
                self.notify(safe_text(error), severity="error", timeout=8, markup=False)
                return
            finally:
                store.close()
            self.query_one(DecisionBar).decision = f"{action} (#{decision.id})"
            self.notify(f"Recorded {action} as decision #{decision.id}.")
            if action in ("approve", "approve-files"):
                self.app.push_screen(ApplyDialog(decision.id))

        self.app.push_screen(ConfirmDialog("Record this decision?", "\n".join(lines)), done)

    def _content_digest_b(self) -> str:
        """Mode B over the bytes on disk (what the decision binds to); bundles written by the reference
        do not record it in review.json."""
        recorded = self.bundle.review.get("evidence", {}).get("contentDigestB")
        try:
            return content_digest_b(self.bundle_dir)
        except OSError:
            return str(recorded or "?")

    def action_approve_all(self) -> None:
        self._decide("approve", shown_files=[f.relativePath for f in self.bundle.changed_files])

    def action_approve_selected(self) -> None:
        selected = sorted(self.query_one(ChangedFileTree).selected)
        if not selected:
            self.notify("Select files with space first.", severity="warning")
            return
        self._decide("approve-files", files=selected)

    def action_discard(self) -> None:
        self._decide("discard")

    def action_iterate(self) -> None:
        def got(reason: str | None) -> None:
            if reason:
                self._decide("iterate", reason=reason)

        self.app.push_screen(ReasonDialog(), got)



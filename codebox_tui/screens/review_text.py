"""The Review screen's text panes, built from a loaded bundle: the verdict and recipe header lines, risks,
tests and probes, the Site tab and Provenance, the comment panel and the Revisions tab. Pure functions of
their inputs (unit-tested without Textual). Everything sandbox-written goes through :func:`escape`
(control characters shown as escapes, Rich markup escaped)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.markup import escape as _markup_escape
from rich.style import Style

from codebox_tui.bundle import layout
from codebox_tui.bundle.provenance import runtime_versions
from codebox_tui.bundle.reader import LoadedBundle
from codebox_tui.bundle.results import BundleChecks
from codebox_tui.bundle.site_state_view import site_state_lines
from codebox_tui.screens.data import Comment, RevisionView
from codebox_tui.textsafe import safe_text
from widgets.diff_styles import MARK_STYLES


def escape(value: object) -> str:
    """Sandbox-written text for Rich markup: control characters shown as escapes, markup escaped."""
    return _markup_escape(safe_text(value))


VERDICT_STYLES = {
    "improvement": ("green", "✔"),
    "regression": ("red", "✘"),
    "neutral": ("white", "="),
    "untested": ("yellow", "?"),
    "plugin-broken": ("red", "✘"),
    "still-failing": ("yellow", "!"),
    "partial": ("yellow", "~"),
}  # the last two: older bundles


_SITE_STYLES = {"+": Style(color="green"), "-": Style(color="red"), "~": Style(color="yellow")}


def site_line_style(line: str) -> Style:
    """The Site tab's colours: headings bold, risks by severity, changes by their mark."""
    if not line.startswith(" "):
        return Style(bold=True)
    body = line.lstrip()
    if body.startswith("HIGH"):
        return Style(color="red", bold=True)
    if body.startswith("MEDIUM"):
        return Style(color="yellow")
    return _SITE_STYLES.get(body[:1], Style())


@dataclass
class ReviewText:
    """The text of the Review screen's panes for one bundle."""

    bundle: LoadedBundle
    bundle_dir: Path
    checks: BundleChecks
    evaluation: dict[str, Any] | None
    evaluation_problem: str | None

    def verdict_line(self) -> str:
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
        parts.append(
            f"fixed {len(tests.get('fixed', []))} · broken {len(tests.get('broken', []))} · "
            f"still failing {len(tests.get('stillFailing', []))}"
        )
        before, after = tests.get("before"), tests.get("after")
        if isinstance(before, dict) and isinstance(after, dict):
            parts.append(
                f"passed {before.get('passed', 0)}/{before.get('tests', 0)} → "
                f"{after.get('passed', 0)}/{after.get('tests', 0)}"
            )
        parts.append(f"[dim]t: tests · patch {escape(str(ev.get('patch', '')))}[/]")
        return "  ".join(parts)

    def recipe_line(self) -> str:
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

    def checks_lines(self) -> list[str]:
        """Probes (recipe probes, evaluate-patch's front-end probe) and a recipe run's failures and warnings;
        every value is already shortened and terminal-safe (bundle/checks.py), markup is escaped here."""
        checks = self.checks
        lines = ["", f"[b]Probes ({len(checks.probes)})[/b]" + ("" if checks.probes else "  none in this bundle")]
        for probe in checks.probes:
            state = f" [dim]·[/] {escape(probe.plugin_state)}" if probe.plugin_state else ""
            if probe.status == "passed":
                lines.append(f"  [green]✔[/] {escape(probe.name)}{state}")
                continue
            colour = "yellow" if probe.allow_failure else "red"
            soft = " (allowFailure)" if probe.allow_failure else ""
            lines.append(f"  [{colour}]✘ {escape(probe.name)}: {escape(probe.status)}{soft}[/]{state}")
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

    def risk_line(self) -> str:
        """Risk flags where they cannot be missed; the details are in the Provenance tab."""
        flags = self.bundle.review.riskFlags
        uncaptured = sum(1 for s in self.bundle.skipped if s.reason == "changed-in-skipped-directory")
        shown = [escape(f) + (f" ({uncaptured})" if f == "changes-in-uncaptured-directories" else "") for f in flags]
        return (
            f"[b yellow]⚠ {len(flags)} risk{'s' if len(flags) != 1 else ''}:[/] "
            + " · ".join(shown)
            + "  [dim](Provenance tab)[/]"
        )

    def delta_lines(self) -> list[str]:
        if self.evaluation is None:
            return (
                [f"[red]Patch evaluation unreadable:[/] {escape(self.evaluation_problem or '')}", ""]
                if self.evaluation_problem
                else []
            )
        tests = self.evaluation["tests"]
        verdict = str(tests["verdict"])
        colour, mark = VERDICT_STYLES.get(verdict, ("white", "•"))
        lines = [f"[b]Test delta (evaluate-patch):[/b] [b {colour}]{mark} {verdict}[/]"]
        if tests.get("reason"):
            lines.append(f"  [{colour}]{escape(str(tests['reason']))}[/]")
        listed = tests.get("provedBy")
        proof = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
        if proof:  # the patch's own tests failed on the old code and pass with it (docs/evaluate-patch.md)
            lines.append(f"  [b green]Proved by ({len(proof)})[/]: failed before the fix, pass after it")
            lines += [f"    [green]✔[/] {escape(str(name))}" for name in proof]
        split = self.evaluation.get("split")
        if isinstance(split, dict) and split.get("testsRunBefore") is True and isinstance(split.get("testFiles"), list):
            files = ", ".join(escape(str(f)) for f in split["testFiles"])
            lines.append(f"  [dim]the patch's tests ({files}) also ran on the old code[/]")
        for key, label, style in (
            ("fixed", "Fixed", "green"),
            ("broken", "Broken", "red"),
            ("stillFailing", "Still failing", "yellow"),
            ("added", "Added", "cyan"),
            ("removed", "Removed", "dim"),
        ):
            names = tests.get(key) or []
            lines.append(f"  [{style}]{label} ({len(names)})[/]" + (":" if names else ""))
            lines += [f"    {escape(str(name))}" for name in names]
        for phase in ("before", "after"):
            counts = tests.get(phase)
            if isinstance(counts, dict):
                lines.append(
                    f"  {phase:<6} {counts.get('status')}: {counts.get('passed', 0)} passed, "
                    f"{counts.get('failed', 0)} failed, {counts.get('skipped', 0)} skipped "
                    f"of {counts.get('tests', 0)}"
                )
        return [*lines, ""]

    def tests_text(self) -> str:
        tests = self.bundle.test_results
        summary = tests.summary
        lines = self.delta_lines()
        sides = [t for t in self.checks.tests if t.side != "all"]
        if sides:  # a suite ran before and after a patch: each side's totals, never one merged status
            lines += [f"[b]Tests {escape(t.line())}[/b]" for t in sides]
        else:
            lines.append(
                f"[b]Tests: {escape(tests.status)}[/b]  total {escape(summary.total)} · "
                f"passed {escape(summary.passed)} · failed {escape(summary.failed)} · "
                f"skipped {escape(summary.skipped)}"
            )
        for suite in tests.suites:
            lines.append(f"\n[b]{escape(suite.name)}[/b] ({escape(suite.phase or '')}) {escape(suite.status)}")
            for case in suite.cases:
                mark = {"passed": "[green]✔[/]", "failed": "[red]✘[/]", "error": "[red]✘[/]"}.get(
                    case.status, "[dim]-[/]"
                )
                lines.append(f"  {mark} {escape(case.classname or '')}::{escape(case.name)}")
                if case.message:
                    lines.append(f"      [red]{escape(case.message)}[/]")
        if not tests.suites:
            lines.append("\nNo test-aware command ran in this sandbox.")
        return "\n".join(lines + self.checks_lines())

    def site_tab_label(self) -> str:
        diff = self.bundle.site_state
        if diff is None or not diff.risks:
            return "Site"
        return f"Site ({len(diff.risks)} risk{'s' if len(diff.risks) != 1 else ''})"

    def site_lines(self) -> list[str]:
        """The site-state diff (docs/site-state.md), terminal-safe lines: bundle/site_state_view.py."""
        if self.bundle.site_state is None:
            return [f"The site-state diff cannot be read: {self.bundle.site_state_problem}"]
        return site_state_lines(self.bundle.site_state)

    def provenance_text(self) -> str:
        meta = self.bundle.metadata
        verification = self.bundle.verification
        lines = [
            f"[b]Bundle[/b] {escape(self.bundle.id)}",
            f"[b]Path[/b] {escape(self.bundle_dir)}",
            f"[b]Verified[/b] {'yes' if verification.valid else 'NO'}",
        ]
        for violation in verification.violations[:20]:
            lines.append(f"  [red]{escape(violation.code)}[/] {escape(violation.path)}: {escape(violation.message)}")
        problems = self.bundle.read_problems
        if problems:
            lines.append(f"[b]Unread[/b] ({len(problems)}): fields of the wrong type, shown as their default")
            lines += [f"  [yellow]{escape(problem)}[/]" for problem in problems[:20]]

        versions = runtime_versions(meta)
        wp, php = versions["wordpressVersion"] or "?", versions["phpVersion"] or "?"
        lines.append(f"[b]WordPress[/b] {escape(wp)}  [b]PHP[/b] {escape(php)}")
        lines.append(f"[b]Policy[/b] {escape(json.dumps(meta.policy))}")
        for mount in meta.mounts:
            lines.append(f"[b]Mount[/b] {escape(mount.source)} → {escape(mount.target)} ({escape(mount.mode)})")
        for flag in self.bundle.review.riskFlags:
            lines.append(f"[b][yellow]Risk[/][/b] {escape(flag)}")
        skipped = self.bundle.skipped
        if skipped:
            lines.append(
                f"[b]Not captured[/b] ({len(skipped)}): content not in the bundle; changes inside "
                "uncaptured folders (.git, node_modules) are listed so they can be checked by hand"
            )
            for entry in skipped[:200]:
                change = f" [yellow]{escape(entry.change)}[/]" if entry.change else ""
                lines.append(f"  {escape(entry.relativePath)}{change} [dim]{escape(entry.reason)}[/]")
            if len(skipped) > 200:
                lines.append(f"  … {len(skipped) - 200} more in {layout.CHANGED_FILES}")
        return "\n".join(lines)


# -- review comments (the panel under the diff) --------------------------------------------------------
def comment_colour(kind: str) -> str:
    """A comment type's colour: the one the diff's line marks use (widgets/diff_styles.py ``MARK_STYLES``)."""
    style = MARK_STYLES.get(kind)
    colour = style.color if style is not None else None
    return colour.name if colour is not None else "white"


def comment_panel_text(
    shown: list[Comment], others: int, from_before: list[Comment], revision_of: dict[int, int]
) -> str:
    """The panel under the diff: ``shown`` (the comments at the cursor and the file's file comments), how many
    ``others`` the file has, and ``from_before`` (earlier revisions' comments here; ``revision_of`` maps a
    bundle key to its revision number)."""
    lines = []
    for c in shown:
        sent = f" [dim](sent with decision #{c.decision_id})[/]" if c.decision_id is not None else ""
        lines.append(
            f"[b {comment_colour(c.kind)}]● {c.kind}[/] [dim]#{c.id} {escape(c.where())} · "
            f"{escape(c.author)}[/]{sent}\n  {escape(c.body)}"
        )
    if others:
        lines.append(f"[dim]{others} more comment(s) on this file: the ● lines[/]")
    for c in from_before:
        state = "[b yellow]outdated[/] " if c.outdated else ""
        lines.append(
            f"[dim]revision {revision_of.get(c.bundle_key, 0)}:[/] {state}[b]{c.kind}[/] "
            f"[dim]#{c.id} {escape(c.where())}[/]\n  {escape(c.body)}"
        )
    return "\n".join(lines)


# -- the Revisions tab -----------------------------------------------------------------------------------
INTERDIFF_SHOWN_LINES = 400  # per file; the rest: codebox review revisions --interdiff
_INTERDIFF_COLOURS = {"unchanged": "dim", "changed": "yellow", "new-in-revision": "green"}
_INTERDIFF_LINE_COLOURS = {"+": "green", "-": "red", "@": "cyan"}


def _tests_summary(tests: dict[str, Any]) -> str:
    if "total" not in tests:
        return "no tests"
    return f"{tests.get('passed', 0)}/{tests.get('total', 0)} passed, {tests.get('failed', 0)} failed"


def revisions_text(view: RevisionView) -> str:
    """The Revisions tab: each revision's decision and tests (and their change from the one before), the
    comments carried over from earlier revisions, and what changed since the revision the interdiff starts
    from."""
    lines = [f"[b]Revision {view.number} of {len(view.revisions)}[/b]"]
    previous: dict[str, Any] = {}
    for r in view.revisions:
        here = "  [b]◀ this bundle[/]" if r.number == view.number else ""
        decision = r.decision.action if r.decision else "undecided"
        tests = r.tests
        delta = ""
        if "total" in tests and "total" in previous:
            change = [
                f"{key} {tests.get(key, 0) - previous.get(key, 0):+d}"
                for key in ("passed", "failed")
                if tests.get(key, 0) != previous.get(key, 0)
            ]
            delta = f" [dim]({', '.join(change) or 'same as before'})[/]"
        verdict = f" · verdict {escape(r.verdict)}" if r.verdict else ""
        linked = f" [dim]linked by {r.how}[/]" if r.how else ""
        lines.append(
            f"  {r.number}. {r.bundle.ref} [dim]{r.bundle.content_digest[:12]}[/] {escape(decision)} · "
            f"{escape(_tests_summary(tests))}{delta}{verdict}{linked}{here}"
        )
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
    lines += [
        "",
        f"[b]What changed since revision {view.base.number}[/b]{' (the one reviewed)' if view.base.decision else ''}",
    ]
    for f in view.interdiff:
        lines.append(f"[{_INTERDIFF_COLOURS.get(f.change, 'red')}]{f.change:<20}[/] {escape(f.path)}")
        for line in f.lines[:INTERDIFF_SHOWN_LINES]:
            style = _INTERDIFF_LINE_COLOURS.get(line[:1], "")
            shown = escape(safe_text(line, tab_size=4))
            lines.append(f"    [{style}]{shown}[/]" if style else f"    {shown}")
        if len(f.lines) > INTERDIFF_SHOWN_LINES:
            more = len(f.lines) - INTERDIFF_SHOWN_LINES
            lines.append(f"    … {more} more lines (codebox review revisions --interdiff)")
    return "\n".join(lines)

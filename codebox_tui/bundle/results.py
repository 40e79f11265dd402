"""What a bundle says about its checks, for every bundle kind: test totals (per side when a suite ran
before and after a patch), probe results, and a recipe run's verdict with its warnings.

Read by ``codebox artifacts show`` and the Review screen (through ``codebox_tui.screens.data``), so the
CLI and the TUI show the same thing. Sources, each optional (a plain ``codebox run`` bundle or an
imported reference bundle may have none but ``files/test-results.json``):

- ``files/test-results.json`` (already loaded by the bundle reader): suites with ``phase`` "before" /
  "after" are totalled per side, never summed across sides;
- ``files/evaluate-patch.json``: its own per-side totals (these win: they are what the verdict was
  computed from) and its front-end probe;
- ``files/probes.json`` (recipe probes), else the probes in ``files/run-attestation.json``;
- ``files/run-attestation.json``: the recipe verdict, recomputed with :func:`bundle.checks.recipe_verdict`.

Every file is sandbox-influenced: read as a regular file with size and depth limits
(``bundle/safe_read.py``), every shown value shortened and terminal-safe (``bundle/checks.py``). A
file that cannot be read is reported in ``problems``, never raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.checks import Verdict, error_message, probe_message, recipe_verdict, short_json
from codebox_tui.bundle.safe_read import load_json_file
from codebox_tui.contracts.bundle import TestResults
from codebox_tui.errors import CodeboxError
from codebox_tui.textsafe import safe_text

MAX_PROBES_SHOWN = 200
SIDES = ("before", "after")


@dataclass(frozen=True)
class SideTotals:
    """Test totals of one side: ``all`` (no patch), or ``before`` / ``after`` a patch."""

    side: str
    status: str
    total: int
    passed: int
    failed: int
    skipped: int

    def line(self) -> str:
        head = f"{self.side:<6} " if self.side != "all" else ""
        if not self.total:
            return f"{head}no tests ran"
        parts = [f"{self.passed} passed", f"{self.failed} failed"] + (
            [f"{self.skipped} skipped"] if self.skipped else []
        )
        return f"{head}{self.status} — {', '.join(parts)} of {self.total}"


@dataclass(frozen=True)
class ProbeRow:
    name: str
    status: str  # "passed" | "failed" (or whatever the bundle said, made safe)
    message: str = ""
    expected: str | None = None
    actual: str | None = None
    allow_failure: bool = False
    plugin_state: str | None = None  # evaluate-patch's front end: "plugin still active", "must-use plugin …"

    def line(self) -> str:
        mark = "✔" if self.status == "passed" else ("!" if self.allow_failure else "✘")
        soft = " (allowFailure)" if self.allow_failure and self.status != "passed" else ""
        state = f" · {self.plugin_state}" if self.plugin_state else ""
        return f"{mark} {self.name}: {self.status}{soft}{state}" + (f" — {self.message}" if self.message else "")


@dataclass
class BundleChecks:
    kind: str  # "evaluate-patch" | "recipe-run" | "run"
    tests: list[SideTotals] = field(default_factory=list)
    probes: list[ProbeRow] = field(default_factory=list)
    verdict: Verdict | None = None  # a recipe run's
    patch_verdict: str | None = None  # evaluate-patch's: improvement, regression, neutral, …
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tests": [vars(t) for t in self.tests],
            "probes": [{k: v for k, v in vars(p).items() if v is not None} for p in self.probes],
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "patchVerdict": self.patch_verdict,
            "problems": self.problems,
        }

    def lines(self, tests_status: str = "unknown") -> list[tuple[str, str]]:
        """(label, text) rows for a plain-text summary (``tests_status``: test-results.json's, shown when
        no tests ran)."""
        rows: list[tuple[str, str]] = []
        if self.patch_verdict is not None:
            rows.append(("verdict", f"{self.patch_verdict} (evaluate-patch: tests before and after the patch)"))
        if not self.tests:
            rows.append(("tests", f"{safe_text(tests_status)} (no test-aware command ran)"))
        rows += [("tests", t.line()) for t in self.tests]
        if not self.probes:
            rows.append(("probes", "none"))
        rows += [("probe", p.line()) for p in self.probes]
        if self.verdict is not None:
            rows.append(
                (
                    "verdict",
                    f"{self.verdict.status} ({len(self.verdict.failures)} failure(s), "
                    f"{len(self.verdict.warnings)} warning(s))",
                )
            )
            rows += [("FAILED", f"{f['what']}: {f['message']}") for f in self.verdict.failures]
            rows += [("warning", f"{w['what']}: {w['message']}") for w in self.verdict.warnings]
        rows += [("problem", p) for p in self.problems]
        return rows


def _read(root: Path, rel: str, problems: list[str]) -> dict[str, Any] | None:
    path = root / rel
    if not os.path.lexists(path):
        return None
    try:
        data = load_json_file(path, rel)
    except CodeboxError as error:
        problems.append(safe_text(error.message))
        return None
    if not isinstance(data, dict):
        problems.append(f"{rel} is not a JSON object")
        return None
    return data


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _side(side: str, counts: dict[str, Any], total_key: str = "tests") -> SideTotals:
    return SideTotals(
        side,
        safe_text(counts.get("status") or "unknown"),
        _int(counts.get(total_key)),
        _int(counts.get("passed")),
        _int(counts.get("failed")),
        _int(counts.get("skipped")),
    )


def side_totals(test_results: dict[str, Any], evaluation: dict[str, Any] | None = None) -> list[SideTotals]:
    """Test totals: per side for a patch evaluation, else one ``all`` side; empty when no tests ran."""
    tests = (evaluation or {}).get("tests")
    if isinstance(tests, dict) and any(isinstance(tests.get(s), dict) for s in SIDES):
        return [
            _side(s, tests[s]) if isinstance(tests.get(s), dict) else SideTotals(s, "not run", 0, 0, 0, 0)
            for s in SIDES
        ]
    suites = [s for s in test_results.get("suites") or [] if isinstance(s, dict)]
    if any(s.get("phase") in SIDES for s in suites):
        sides = []
        for side in SIDES:
            mine = [s for s in suites if s.get("phase") == side]
            failed = sum(_int(s.get("failed")) for s in mine)
            status = (
                "not run"
                if not mine
                else (
                    "failed" if failed else ("unknown" if any(s.get("status") == "unknown" for s in mine) else "passed")
                )
            )
            sides.append(
                SideTotals(
                    side,
                    status,
                    sum(_int(s.get("tests")) for s in mine),
                    sum(_int(s.get("passed")) for s in mine),
                    failed,
                    sum(_int(s.get("skipped")) for s in mine),
                )
            )
        return sides
    summary = test_results.get("summary")
    if isinstance(summary, dict) and _int(summary.get("total")):
        return [_side("all", {**summary, "status": test_results.get("status")}, "total")]
    return []


def _probe_row(probe: dict[str, Any]) -> ProbeRow:
    status = safe_text(probe.get("status") or "unknown")
    failed = status != "passed"
    return ProbeRow(
        name=safe_text(probe.get("name") or "?"),
        status=status,
        message=probe_message(probe) if failed else "",
        expected=short_json(probe["expectJson"]) if probe.get("expectJson") is not None else None,
        actual=short_json(probe["actualJson"]) if "actualJson" in probe else None,
        allow_failure=bool(probe.get("allowFailure")),
    )


def _front_end_row(evaluation: dict[str, Any]) -> ProbeRow | None:
    probe = evaluation.get("probe")
    if not isinstance(probe, dict):
        return None
    inner = probe.get("frontEnd")
    front: dict[str, Any] = inner if isinstance(inner, dict) else probe
    listed = front.get("problems")
    problems: list[Any] = listed if isinstance(listed, list) else []
    status = safe_text(front.get("status") or probe.get("status") or "unknown")
    message = "; ".join(error_message(p) for p in problems[:5]) if status != "passed" else ""
    return ProbeRow(
        name=f"front end {safe_text(front.get('url') or '/')}",
        status=status,
        message=message,
        plugin_state=_plugin_state(front),
    )


# What the front-end probe found of the plugin after the request (docs/evaluate-patch.md): a plugin folder is
# still active, a single-file must-use plugin still loaded. Only a JSON boolean counts; anything else is unsaid.
PLUGIN_STATES = (
    ("pluginActive", "plugin still active", "plugin NOT active after the request"),
    ("pluginLoaded", "must-use plugin still loaded", "must-use plugin NOT loaded after the request"),
)


def _plugin_state(front: dict[str, Any]) -> str | None:
    for key, yes, no in PLUGIN_STATES:
        value = front.get(key)
        if isinstance(value, bool):
            return yes if value else no
    return None


def bundle_checks(bundle_dir: Path | str, test_results: TestResults | dict[str, Any]) -> BundleChecks:
    """Tests, probes and (for a recipe run) the verdict of the bundle at ``bundle_dir``."""
    if isinstance(test_results, TestResults):
        test_results = test_results.model_dump(mode="json", by_alias=True)
    root = Path(bundle_dir)
    problems: list[str] = []
    evaluation = _read(root, layout.EVALUATE_PATCH, problems)
    attestation = _read(root, layout.RUN_ATTESTATION, problems)
    probes_doc = _read(root, layout.PROBES, problems)
    kind = "evaluate-patch" if evaluation is not None else ("recipe-run" if attestation is not None else "run")
    checks = BundleChecks(kind=kind, tests=side_totals(test_results, evaluation), problems=problems)
    raw = (probes_doc or {}).get("probes")
    if not isinstance(raw, list):
        raw = (attestation or {}).get("probes")
    probes = [p for p in raw if isinstance(p, dict)] if isinstance(raw, list) else []
    checks.probes = [_probe_row(p) for p in probes[:MAX_PROBES_SHOWN]]
    if len(probes) > MAX_PROBES_SHOWN:
        problems.append(f"{len(probes) - MAX_PROBES_SHOWN} more probes not shown (files/probes.json)")
    if evaluation is not None:
        tests = evaluation.get("tests")
        checks.patch_verdict = safe_text(tests.get("verdict") or "unknown") if isinstance(tests, dict) else "unknown"
        row = _front_end_row(evaluation)
        if row is not None:
            checks.probes.append(row)
    if attestation is not None:

        def records(key: str) -> list[dict[str, Any]]:
            value = attestation.get(key)
            return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []

        checks.verdict = recipe_verdict(
            records("stepFailures"),
            records("advisoryFailures"),
            probes,
            records("executions"),
            reproduction=attestation.get("kind") == "reproduction",
        )
    return checks

"""``wp-codebox/patch-evaluation/v1``: what ``codebox evaluate-patch`` concluded about a contributor's patch
(docs/contracts.md, "Patch evaluation"). The bundle keeps it as ``files/evaluate-patch.json``; the command's
``--json`` output is the same document plus ``success``, ``runDir``, ``bundleDir`` and ``bundleId``.

The verdict never claims more than was checked (README, "Recipes, tests and browser evidence"):
``improvement`` / ``regression`` / ``neutral`` only when tests ran on both sides, ``untested`` or
``plugin-broken`` otherwise.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from codebox_tui.contracts.bench import BenchRegressionCheck
from codebox_tui.contracts.common import Contract, OpenContract

PATCH_EVALUATION_SCHEMA: Final = "wp-codebox/patch-evaluation/v1"

Verdict = Literal["improvement", "regression", "neutral", "untested", "plugin-broken"]
VERDICTS: Final[tuple[str, ...]] = ("improvement", "regression", "neutral", "untested", "plugin-broken")


class SideCounts(Contract):
    """One side's PHPUnit totals (all of that side's test runs merged)."""

    status: str
    tests: int
    passed: int
    failed: int
    skipped: int


class TestDelta(Contract):
    """Per-case comparison of the suites before and after the patch; names are ``Class::method``."""

    __test__ = False  # not a pytest test class

    verdict: Verdict
    reason: str | None = Field(
        None,
        description="Why the verdict is untested, plugin-broken or a regression "
        "without a broken test, or why a patch with tests is only "
        "neutral; absent otherwise.",
    )
    fixed: list[str] = Field(description="Failed or errored before, passed after.")
    broken: list[str] = Field(description="Passed before, failed or errored after.")
    stillFailing: list[str]
    added: list[str] = Field(description="Only after the patch (a failing one makes a regression).")
    removed: list[str] = Field(description="Only before the patch.")
    provedBy: list[str] | None = Field(
        None,
        description="Present when the patch brought tests and the verdict is "
        "improvement: the tests that failed on the old code (with "
        "the patch's test files applied) and pass after the patch.",
    )
    before: SideCounts | None = Field(description="None when no test ran before the patch.")
    after: SideCounts | None = Field(description="None when no test ran after the patch.")


class TestFailure(Contract):
    __test__ = False  # not a pytest test class

    test: str
    status: Literal["failed", "error"]
    message: str = ""


class Failures(Contract):
    before: list[TestFailure]
    after: list[TestFailure]


class PluginLoad(Contract):
    """None when the plugin loaded and activated on that side, else the error shown."""

    before: str | None
    after: str | None


class EvaluationStep(Contract):
    """One step of the evaluation, in order: a sandbox command (with its exit code, or the error that stopped
    it) or ``git apply`` of the patch (with the end of its stderr)."""

    phase: Literal["before", "apply", "after", "probe"]
    command: str = Field(
        description="A catalog command, or `git apply` (`git apply (the patch's tests)` and "
        "`git apply (the patch's code)` when the patch brought tests), or "
        '`front-end probe (load check)`: the front-end request settled the "after" '
        "load check (exit 0: the plugin loads, 1: it fails to load)."
    )
    exitCode: int | None = None
    error: dict[str, Any] | None = Field(None, description="The command's error, as `--json` prints errors.")
    stderr: str | None = None


class FrontEndProbe(Contract):
    """A GET of the probed page through the sandbox with PHP errors recorded by a must-use plugin."""

    url: str
    status: Literal["passed", "failed"]
    problems: list[str]
    httpStatus: int | None = None
    pluginActive: bool | None = None
    pluginLoaded: bool | None = Field(
        None,
        description="A single-file must-use plugin (instead of `pluginActive`): "
        "WordPress still loads its file after the request.",
    )
    fatal: str | None = Field(
        None, description="Present when the page broke: a fatal error, HTTP 5xx, or the plugin no longer active."
    )


class EvaluationProbe(OpenContract):
    """The browser probe's summary (``files/browser/summary.json``: status, url, httpStatus, counts,
    pageErrors, consoleErrors; absent when it did not run) and the front-end probe."""

    frontEnd: FrontEndProbe


class PatchSplit(Contract):
    """The patch cut into test files and code files (docs/evaluate-patch.md, "Which files are tests")."""

    rule: Literal["default", "--tests-path"] = Field(description="The default rule or the --tests-path globs.")
    testFiles: list[str] = Field(description="Plugin-relative paths the patch changes that are tests.")
    codeFiles: list[str] = Field(description="Every other path the patch changes.")
    testsRunBefore: bool = Field(description="Whether the before side ran the patch's test files on the old code.")


class PatchSource(Contract):
    """Where the plugin and the patch came from with ``--git``: the plugin's repository at ``base`` and the
    ``git diff --binary base head`` of the range."""

    repository: str
    range: str = Field(description="The range as given (BASE..HEAD, or a commit).")
    base: str = Field(description="The full commit id of the before side.")
    head: str = Field(description="The full commit id of the after side.")


class PatchEvaluation(Contract):
    schema_: Literal["wp-codebox/patch-evaluation/v1"] = Field(PATCH_EVALUATION_SCHEMA, alias="schema")
    plugin: str = Field(description="The plugin's folder name (its slug).")
    patch: str = Field(description="The patch file's name (with --git: BASE..HEAD.patch, short ids).")
    source: PatchSource | None = Field(None, description="Present with --git.")
    applied: bool = Field(description="Whether `git apply` of the patch succeeded in the sandbox.")
    tests: TestDelta
    split: PatchSplit | None = Field(None, description="Absent in documents written before the split existed.")
    failures: Failures
    pluginLoad: PluginLoad
    steps: list[EvaluationStep]
    probe: EvaluationProbe
    bench: BenchRegressionCheck | None = Field(
        None, description="Present with --bench: each path timed before and after the patch (advisory; docs/bench.md)."
    )

    def to_json(self) -> dict[str, Any]:
        """The document as written: keys the writer set, including explicit nulls (``before: null``)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

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
    reason: str | None = Field(None, description="Why the verdict is untested, plugin-broken or a regression "
                                                 "without a broken test; absent otherwise.")
    fixed: list[str] = Field(description="Failed or errored before, passed after.")
    broken: list[str] = Field(description="Passed before, failed or errored after.")
    stillFailing: list[str]
    added: list[str] = Field(description="Only after the patch (a failing one makes a regression).")
    removed: list[str] = Field(description="Only before the patch.")
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
    command: str
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
    fatal: str | None = Field(None, description="Present when the page broke: a fatal error, HTTP 5xx, or the "
                                                "plugin no longer active.")


class EvaluationProbe(OpenContract):
    """The browser probe's summary (``files/browser/summary.json``: status, url, httpStatus, counts,
    pageErrors, consoleErrors; absent when it did not run) and the front-end probe."""

    frontEnd: FrontEndProbe


class PatchEvaluation(Contract):
    schema_: Literal["wp-codebox/patch-evaluation/v1"] = Field(PATCH_EVALUATION_SCHEMA, alias="schema")
    plugin: str = Field(description="The plugin's folder name (its slug).")
    patch: str = Field(description="The patch file's name.")
    applied: bool = Field(description="Whether `git apply` of the patch succeeded in the sandbox.")
    tests: TestDelta
    failures: Failures
    pluginLoad: PluginLoad
    steps: list[EvaluationStep]
    probe: EvaluationProbe

    def to_json(self) -> dict[str, Any]:
        """The document as written: keys the writer set, including explicit nulls (``before: null``)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

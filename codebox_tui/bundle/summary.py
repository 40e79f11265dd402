"""A bundle at a glance: what ``codebox artifacts show --json`` prints and the MCP server's
``artifacts_show`` tool returns (docs/mcp.md). One model, one builder, for both.

Everything comes from :func:`codebox_tui.bundle.reader.load_bundle`, so a bundle that fails verification
is still summarized, with its violations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from codebox_tui.bundle.digests import content_digest_b
from codebox_tui.bundle.provenance import runtime_versions
from codebox_tui.bundle.reader import LoadedBundle
from codebox_tui.bundle.results import BundleChecks, bundle_checks
from codebox_tui.bundle.site_state_view import site_state_counts
from codebox_tui.contracts.bundle_read import MetadataView


class ChangedFileSummary(BaseModel):
    """One changed file: its status, mount-relative path and line counts."""

    status: str
    path: str = Field(description="The mount-relative path (changed-files.json relativePath).")
    binary: bool
    additions: int
    deletions: int


class TestsSummary(BaseModel):
    """``files/test-results.json``: the overall status and its counts."""

    __test__ = False  # not a pytest test class

    status: str = "unknown"
    summary: dict[str, int] = Field(default_factory=dict)


class ArtifactSummary(BaseModel):
    """A bundle's identity, verification, changed files, tests, checks, risk flags and evidence."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(description="The bundle id (manifest.json).")
    path: str = Field(description="The bundle folder.")
    # what the bundle's own JSON says (manifest, review.json, metadata.json), read with the tolerant views
    # (contracts/bundle_read.py): the keys as written, less any of the wrong type (listed in readProblems)
    createdAt: str | None = None
    valid: bool = Field(description="Whether every hash, digest and reference verified.")
    violations: list[dict[str, Any]] = Field(default_factory=list)
    summary: str | None = None
    stats: dict[str, JsonValue] = Field(default_factory=dict)
    changedFiles: list[ChangedFileSummary] = Field(default_factory=list)
    tests: TestsSummary
    riskFlags: list[str] = Field(default_factory=list)
    skipped: list[dict[str, JsonValue]] = Field(default_factory=list)
    runtime: dict[str, JsonValue] = Field(default_factory=dict)
    contentDigestB: str | None = Field(default=None, description="The Mode B content digest decisions bind to.")
    baselines: list[dict[str, JsonValue]] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    checks: dict[str, Any] = Field(default_factory=dict)
    siteState: dict[str, Any] | None = None
    readProblems: list[str] = Field(
        default_factory=list,
        exclude_if=lambda problems: not problems,
        description="Fields of manifest.json, review.json or metadata.json of the wrong type, read as their "
        "default (left out when there are none).",
    )


def artifact_summary(loaded: LoadedBundle) -> ArtifactSummary:
    """The summary of one loaded bundle."""
    return ArtifactSummary(
        id=loaded.id,
        path=str(loaded.path),
        createdAt=loaded.manifest.createdAt,
        valid=loaded.valid,
        violations=[v.model_dump(mode="json", exclude_none=True) for v in loaded.verification.violations],
        summary=loaded.review.summary,
        stats=loaded.review.stats.written(),
        changedFiles=[
            ChangedFileSummary(
                status=f.status, path=f.relativePath, binary=f.binary, additions=f.additions, deletions=f.deletions
            )
            for f in loaded.changed_files
        ],
        tests=TestsSummary(status=loaded.test_results.status, summary=loaded.test_results.summary.model_dump()),
        riskFlags=loaded.risk_flags,
        skipped=[entry.written() for entry in loaded.skipped],
        runtime=runtime_summary(loaded.metadata),
        contentDigestB=digest_b(loaded.path),
        baselines=[base.written() for base in loaded.metadata.baselines],
        evidence=[e.path for e in loaded.evidence],
        checks=checks_of(loaded).to_dict(),
        siteState=site_state_summary(loaded),
        readProblems=loaded.read_problems,
    )


def site_state_summary(loaded: LoadedBundle) -> dict[str, Any] | None:
    """Counts per category, the risk flags and the whole diff (None when the bundle has no
    files/site-state-diff.json)."""
    diff = loaded.site_state
    if diff is None:
        return {"error": loaded.site_state_problem} if loaded.site_state_problem else None
    return {
        "counts": site_state_counts(diff),
        "empty": diff.empty,
        "risks": [r.model_dump(mode="json") for r in diff.risks],
        "diff": diff.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def runtime_summary(metadata: MetadataView) -> dict[str, JsonValue]:
    """``provenance.runtime`` with the versions filled in from wherever the writer put them (the reference
    keeps the PHP version under ``context.phpWasmRuntimeAssetPreflight``)."""
    written = metadata.provenance.runtime.written()
    found = {k: v for k, v in runtime_versions(metadata).items() if v}
    return {**written, **{k: v for k, v in found.items() if not written.get(k)}}


def digest_b(path: Path) -> str | None:
    try:
        return content_digest_b(path)
    except OSError:
        return None


def checks_of(loaded: LoadedBundle) -> BundleChecks:
    """Tests (per side for evaluate-patch), probes and a recipe run's verdict: bundle/results.py."""
    return bundle_checks(loaded.path, loaded.test_results)

"""The ``wp-codebox/run/v1`` document of a finished run: what ``codebox run --json`` prints and the MCP
``run`` tool returns (docs/mcp.md). One builder for both."""

from __future__ import annotations

from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.contracts.runtime import RUN_DOCUMENT_OUTPUT_REF, CommandError, RunOutput
from codebox_tui.lifecycle.service import RunOutcome


def run_artifacts(outcome: RunOutcome) -> dict[str, Any]:
    """The document's ``artifacts``: the run folder, its event streams and the bundle's identity."""
    out: dict[str, Any] = {
        "directory": str(outcome.run_dir),
        "events": str(outcome.run_dir / layout.EVENTS),
        "commands": str(outcome.run_dir / layout.COMMANDS),
    }
    if outcome.bundle is not None:
        for key in ("id", "content_digest", "content_digest_b"):
            value = getattr(outcome.bundle, key, None)
            if value is not None:
                out[{"content_digest": "contentDigest", "content_digest_b": "contentDigestB"}.get(key, key)] = value
        # where a caller finds the bundle's main files without knowing its layout (docs/contracts.md, "Run and
        # boot outputs"); only files the sealed bundle has
        bundle_dir = outcome.bundle_dir or outcome.run_dir
        for key, rel in (
            ("manifest", layout.MANIFEST),
            ("changedFiles", layout.CHANGED_FILES),
            ("patch", layout.PATCH),
        ):
            if (bundle_dir / rel).is_file():
                out[key] = str(bundle_dir / rel)
    return out


def run_document(outcome: RunOutcome) -> dict[str, Any]:
    """The run's document as JSON, passed through the run's redactor as a whole (docs/security-secrets.md)."""
    error = outcome.error
    output = RunOutput(
        success=outcome.success,
        runtime=outcome.runtime,
        executions=outcome.executions,
        execution=outcome.execution,
        artifacts=run_artifacts(outcome),
        timings=outcome.timings,
        error=CommandError(code=error.code, message=error.message, data=error.details or None) if error else None,
    )
    output.preview = outcome.preview
    if outcome.site_state_risks:
        output.siteStateRisks = sorted({r.code for r in outcome.site_state_risks})
        output.siteStateRiskDetails = [
            {"code": r.code, "subject": r.subject, "message": r.message} for r in outcome.site_state_risks
        ]
    document = output.model_dump(mode="json", by_alias=True, exclude_none=True)
    _output_once(document)
    redacted = outcome.redact.value(document)
    return dict(redacted)


def _output_once(document: dict[str, Any]) -> None:
    """``execution`` is the last of ``executions``: its output stays there, and the ``executions`` entry
    says where it is (``diagnostics.outputRef``) instead of carrying a second copy (docs/contracts.md,
    "Run and boot outputs"). A capped 10 MiB output is then in the document once, not twice."""
    last, executions = document.get("execution"), document.get("executions") or []
    if not isinstance(last, dict) or not executions or executions[-1].get("id") != last.get("id"):
        return
    entry = executions[-1]
    if not (entry.get("stdout") or entry.get("stderr")):
        return
    entry["stdout"], entry["stderr"] = "", ""
    entry["diagnostics"] = {**(entry.get("diagnostics") or {}), "outputRef": dict(RUN_DOCUMENT_OUTPUT_REF)}

"""The ``wp-codebox/run/v1`` document of a finished run: what ``codebox run --json`` prints and the MCP
``run`` tool returns (docs/mcp.md). One builder for both."""

from __future__ import annotations

from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.contracts.runtime import CommandError, RunOutput
from codebox_tui.lifecycle.service import RunOutcome


def run_artifacts(outcome: RunOutcome) -> dict[str, Any]:
    """The document's ``artifacts``: the run folder, its event streams and the bundle's identity."""
    out: dict[str, Any] = {"directory": str(outcome.run_dir), "events": str(outcome.run_dir / layout.EVENTS),
                           "commands": str(outcome.run_dir / layout.COMMANDS)}
    if outcome.bundle is not None:
        for key in ("id", "content_digest", "content_digest_b"):
            value = getattr(outcome.bundle, key, None)
            if value is not None:
                out[{"content_digest": "contentDigest", "content_digest_b": "contentDigestB"}.get(key, key)] = value
    return out


def run_document(outcome: RunOutcome) -> dict[str, Any]:
    """The run's document as JSON, passed through the run's redactor as a whole (docs/security-secrets.md)."""
    error = outcome.error
    output = RunOutput(
        success=outcome.success, runtime=outcome.runtime, executions=outcome.executions, execution=outcome.execution,
        artifacts=run_artifacts(outcome), timings=outcome.timings,
        error=CommandError(code=error.code, message=error.message, data=error.details or None) if error else None,
    )
    redacted = outcome.redact.value(output.model_dump(mode="json", by_alias=True, exclude_none=True))
    return dict(redacted)

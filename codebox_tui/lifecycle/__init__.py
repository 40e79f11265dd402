"""The run lifecycle service: one way to boot a sandbox, run commands, capture, seal and register a run,
shared by the CLI, the TUI, recipes and evaluate-patch (docs/architecture.md, "Runtime API")."""

from codebox_tui.lifecycle.output import run_artifacts, run_document
from codebox_tui.lifecycle.request import (
    CommandStep,
    RunControl,
    RunRequest,
    Toolchain,
    check_request,
    env_from_pairs,
    metadata_from_json,
    mounts_from_text,
    policy_from_text,
    preview_bind_address,
    public_url_from_text,
    settle_runtime,
)
from codebox_tui.lifecycle.service import OpenRun, ProgressListener, RunOutcome, RunService
from codebox_tui.lifecycle.tools import tool_mounts

__all__ = [
    "CommandStep",
    "OpenRun",
    "ProgressListener",
    "RunControl",
    "RunOutcome",
    "RunRequest",
    "RunService",
    "Toolchain",
    "check_request",
    "env_from_pairs",
    "metadata_from_json",
    "mounts_from_text",
    "policy_from_text",
    "preview_bind_address",
    "public_url_from_text",
    "run_artifacts",
    "run_document",
    "settle_runtime",
    "tool_mounts",
]

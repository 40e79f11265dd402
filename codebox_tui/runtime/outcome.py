"""What a command handler returns to the run that called it (the run records it as an ExecutionResult).

Its own module so the handlers (:mod:`codebox_tui.runtime.commands`, :mod:`codebox_tui.runtime.phpunit`,
:mod:`codebox_tui.runtime.browser_commands`, …) need nothing from :mod:`codebox_tui.runtime.session`: the
session imports the catalog, the catalog imports the handlers, and no import, not even one for types, goes back
up (the handlers take the run as a :class:`~codebox_tui.runtime.context.CommandContext`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CommandOutcome:
    """What a command handler returns."""

    stdout: str
    stderr: str = ""
    exit_code: int = 0
    json: Any = None
    artifact_refs: list[dict[str, Any]] = field(default_factory=list)
    truncated: dict[str, Any] | None = None  # what the output cap cut, per stream (PhpResult.truncated)

"""What a command handler may use of the run that calls it: :class:`CommandContext`.

The run session (:mod:`codebox_tui.runtime.session`) dispatches each command through the catalog
(:mod:`codebox_tui.runtime.catalog`) to a handler (:mod:`codebox_tui.runtime.commands`, ``phpunit``,
``browser_commands``, ``bench``, ``observations``). The handlers take this protocol, never the session
class, and the session satisfies it structurally: nothing here imports the session, the catalog or a
handler, so no import, not even one for types, goes back up (docs/architecture.md, "Command handlers";
import-linter's "Command handlers see the run only as a CommandContext" contract in ``pyproject.toml``).

Members are exactly what the handlers use; a new one is added here when a handler needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from codebox_tui.bundle.redact import Redactor
from codebox_tui.contracts.bundle import TestSuite
from codebox_tui.contracts.runtime import ExecutionResult, RuntimeInfo
from codebox_tui.runtime.backend import Sandbox, SandboxSpec


class CommandContext(Protocol):
    """The run as a command handler sees it."""

    @property
    def spec(self) -> SandboxSpec:
        """The run's settings: mounts, tool mounts, policy, runtime environment and allow-listed secrets."""
        ...

    @property
    def sandbox(self) -> Sandbox:
        """The booted sandbox (the run boots it before a handler is called)."""
        ...

    @property
    def runtime_id(self) -> str: ...

    @property
    def run_dir(self) -> Path:
        """The run's folder; evidence goes under its ``files/`` through :meth:`add_evidence`."""
        ...

    @property
    def redact(self) -> Redactor:
        """The run's redactor: everything a handler writes as evidence passes through it first."""
        ...

    @property
    def executions(self) -> list[ExecutionResult]:
        """The commands run so far, in order (the ``command-result`` observation reads them)."""
        ...

    @property
    def test_suites(self) -> list[TestSuite]:
        """The test suites recorded so far; ``wordpress.phpunit`` appends its own."""
        ...

    @property
    def test_sites(self) -> dict[str, bytes]:
        """Installed WordPress test sites kept per sandbox by ``wordpress.phpunit`` (runtime/phpunit.py)."""
        ...

    def runtime_info(self) -> RuntimeInfo: ...

    def emit(self, type: str, data: dict[str, Any] | None = None, level: str = "info") -> object:
        """Append an event to the run's stream (its return value is not for handlers)."""
        ...

    def add_evidence(self, path: str, kind: str, content_type: str) -> Path:
        """Register a bundle file (a ``files/…`` path) and return where to write it."""
        ...

    def execute(self, command: str, args: list[str] | None = None, timeout_s: float | None = None) -> ExecutionResult:
        """Run another catalog command under the run's policy (the ``browser-result`` observation)."""
        ...

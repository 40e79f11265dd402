"""Every `--help` renders as text a person reads: no reStructuredText double backticks, no traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from codebox_tui.cli import app

COMMANDS = [
    "run",
    "boot",
    "commands",
    "exec",
    "agent-task",
    "evaluate-patch",
    "recipe-run",
    "recipe validate",
    "schema",
    "validate-blueprint",
    "apply",
    "apply-recover",
    "tui",
    "review list",
    "review show",
    "review approve",
    "review import",
    "review comment add",
    "review compare",
    "review link",
    "review revisions",
    "review feedback",
    "artifacts show",
    "artifacts verify",
    "artifacts list",
    "artifacts prune",
    "mcp",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_text_reads_cleanly(command: str) -> None:
    result = CliRunner().invoke(app, [*command.split(), "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "``" not in result.output
    assert "Traceback" not in result.output
    assert "Usage:" in result.output

"""Runs for `codebox exec` tests (docs/exec.md): WP-CLI's phar staged at the tools path, a run on the native
backend, and the two calls every exec test makes: a command line through the shell (``run_exec``, the path the
CLI, the TUI console and the MCP ``execute`` tool take) and PHP straight into the sandbox (to plant or check what
the shell must or must not see)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from codebox_tui.contracts.exec import ExecLimits, ExecRequest, ExecResult
from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.runtime.commands import WP_CLI_DIR
from codebox_tui.runtime.exec import run_exec
from tests.factories.toolchains import WP_CLI_PHAR, require


def wp_cli_tools(root: Path) -> MountSpec:
    """WP-CLI's release phar copied to ``root/tools`` (as lifecycle/tools.py stages a user's phar), mounted
    read-only at the tools path where the shell's `wp` finds it."""
    require(WP_CLI_PHAR)
    tools = root / "tools"
    tools.mkdir()
    shutil.copy2(WP_CLI_PHAR, tools / "wp-cli.phar")
    return MountSpec(source=str(tools), target=WP_CLI_DIR, mode="readonly")


def ex(run: Any, command: str, caps: tuple[str, ...] = ("read",), cwd: str = "/wordpress", **limits: int) -> ExecResult:
    """``command`` run by the sandbox shell of ``run`` with ``caps`` (and any ExecLimits field given)."""
    return run_exec(
        run,
        ExecRequest(
            command=command,
            cwd=cwd,
            capabilities=list(caps),  # type: ignore[arg-type]
            limits=ExecLimits(**limits),
        ),
    )


def php(run: Any, code: str) -> str:
    """What ``<?php code`` prints, run in ``run``'s sandbox directly (not through the shell)."""
    return str(run.sandbox.run_php("<?php " + code, 60).text)

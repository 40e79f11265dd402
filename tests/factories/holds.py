"""Cheap set-ups for the inbox, sites, held-preview and recipe tests (CI time, docs/performance.md "Test suite").

- :func:`linked_home`: a CODEBOX_HOME of a test's own that links the test session's WordPress builds (the golden
  site, Playground's cache, the native backend's prepared install) without booting anything first, so a native
  run or a CLI that boots Playground never rebuilds them cold.
- :func:`codebox_in_process`: the real ``codebox`` entry point (``codebox_tui.cli.main``, exit codes and error
  documents included) called in the test's own process with its stdout and stderr captured. A new ``codebox``
  process costs over a CPU-second of imports; the queries and decisions a flow makes after its run (``review
  list``, ``approve``, ``apply``…) use this, while every flow still starts its run through a real process.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path

from tests.factories.playground import PlaygroundSession


def linked_home(session_home: Path, parent: Path) -> Path:
    """``parent/home``: its own store, inbox and artifacts, the session's WordPress builds linked (nothing boots)."""
    parent.mkdir(parents=True, exist_ok=True)
    return PlaygroundSession(session_home).private_home(parent)


def codebox_in_process(
    home: Path, *args: str, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``codebox ARGS`` with ``CODEBOX_HOME=home`` and ``env`` (a ``None`` value unsets the variable) through the
    real entry point in this process; the result as :func:`subprocess.run` gives it (exit code, stdout, stderr).
    The process's environment and settings are restored afterwards."""
    from codebox_tui.cli import main
    from codebox_tui.settings import reload_settings

    changed: dict[str, str | None] = {"CODEBOX_HOME": str(home), **(env or {})}
    saved = {name: os.environ.get(name) for name in changed}
    out, err = io.StringIO(), io.StringIO()
    code = 0
    _set_environment(changed)
    reload_settings()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
            except SystemExit as ended:
                code = ended.code if isinstance(ended.code, int) else (0 if ended.code is None else 1)
    finally:
        _set_environment(saved)
        reload_settings()
    return subprocess.CompletedProcess(["codebox", *args], code, out.getvalue(), err.getvalue())


def _set_environment(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value

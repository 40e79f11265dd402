"""Cheap set-ups for the inbox, sites, held-preview and recipe tests (CI time, docs/performance.md "Test suite").

- :func:`linked_home`: a CODEBOX_HOME of a test's own that links the test session's WordPress builds (the golden
  site, Playground's cache, the native backend's prepared install) without booting anything first, so a native
  run or a CLI that boots Playground never rebuilds them cold.
- :func:`codebox_in_process`: the real ``codebox`` entry point (``codebox_tui.cli.main``, exit codes and error
  documents included) called in the test's own process with its stdout and stderr captured. A new ``codebox``
  process costs over a CPU-second of imports; the queries and decisions a flow makes after its run (``review
  list``, ``approve``, ``apply``…) use this, while every flow still starts its run through a real process.
- :func:`recorded_backend`: the backend a bundle says ran it, for tests that must not silently switch backend.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.factories.playground import PlaygroundSession


def linked_home(session_home: Path, parent: Path) -> Path:
    """``parent/home``: its own store, inbox and artifacts, the session's WordPress builds linked (nothing boots)."""
    parent.mkdir(parents=True, exist_ok=True)
    return PlaygroundSession(session_home).private_home(parent)


def codebox_in_process(home: Path, *args: str, env: dict[str, str | None] | None = None
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


def recorded_backend(run_dir: Path) -> Any:
    """``metadata.runtime.backend`` of the bundle in ``run_dir`` (``native`` or ``wordpress-playground``)."""
    return json.loads((run_dir / "metadata.json").read_text())["runtime"]["backend"]


def native_run(artifacts_root: Path, **spec_kwargs: Any) -> Any:
    """A ``RunSession`` on the native backend (the host's PHP in real bubblewrap) for the spec the Playground
    helper builds from ``spec_kwargs``; use it as a context manager, as ``PlaygroundSession.new_run``."""
    from codebox_tui.runtime.native import NativeBackend
    from codebox_tui.runtime.native_site import host_php
    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import get_settings

    spec = PlaygroundSession(get_settings().home).spec(php=host_php().series, **spec_kwargs)
    return RunSession(spec, artifacts_root, backend=NativeBackend())

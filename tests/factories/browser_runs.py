"""A browser command against a page of the code under review, through the real CLI on the native backend: the
page is a must-use plugin in a read-only mount, the steps (browser-actions) a file beside it; the finished process
as :func:`subprocess.run` gives it (the run's JSON on stdout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.factories.paths import REPO

MU_PLUGINS = "/wordpress/wp-content/mu-plugins"


def native_page_run(
    work: Path,
    plugin: tuple[str, str],
    command: str,
    args: Sequence[str],
    *,
    steps: list[dict[str, Any]] | None = None,
    policy: dict[str, Any] | None = None,
    launcher: Sequence[str] = (),
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``codebox run --backend native`` of ``command`` with ``args`` (each ``key=value``) in the folder ``work``,
    the must-use plugin ``plugin`` (file name, PHP) mounted read-only; ``steps`` written to ``steps.json`` and
    passed as ``steps-json``; ``launcher``: what runs the CLI (default ``python -m codebox_tui``)."""
    (work / "mu").mkdir(exist_ok=True)
    name, php = plugin
    (work / "mu" / name).write_text(php)
    if steps is not None:
        (work / "steps.json").write_text(json.dumps(steps))
        args = ["steps-json=@steps.json", *args]
    argv = [*(launcher or (sys.executable, "-m", "codebox_tui")), "run", "--backend", "native"]
    argv += ["--mount", f"{work / 'mu'}:{MU_PLUGINS}:readonly", "--command", command]
    for arg in args:
        argv += ["--arg", arg]
    if policy is not None:
        argv += ["--policy", json.dumps(policy)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [*argv, "--json", "--quiet"], cwd=work, env=env, capture_output=True, text=True, timeout=timeout
    )

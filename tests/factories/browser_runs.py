"""A browser command against a page of the code under review, through the real CLI on the native backend: the
page is a must-use plugin in a read-only mount, the steps (browser-actions) a file beside it; the finished process
as :func:`subprocess.run` gives it (the run's JSON on stdout)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from playwright._impl._driver import compute_driver_executable

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
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``codebox run --backend native`` of ``command`` with ``args`` (each ``key=value``) in the folder ``work``,
    the must-use plugin ``plugin`` (file name, PHP) mounted read-only; ``steps`` written to ``steps.json`` and
    passed as ``steps-json``; ``launcher``: what runs the CLI (default ``python -m codebox_tui``); ``env``: variables
    added to the CLI's environment."""
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
    return subprocess.run(
        [*argv, "--json", "--quiet"],
        cwd=work,
        env={**os.environ, **(env or {}), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# Runs the real CLI and, when it exits, writes the peak of the memory Python allocated in it (bytes, tracemalloc):
# every object the process held, and nothing else (the resident size also counts allocator arenas, SQLite's cache
# and the like, which vary from machine to machine). Use as ``launcher=python_peak_launcher(file)``.
_PYTHON_PEAK = """
import atexit, runpy, sys, tracemalloc
out = sys.argv.pop(1)
tracemalloc.start()
atexit.register(lambda: open(out, "w").write(str(tracemalloc.get_traced_memory()[1])))
sys.argv[0] = "codebox"
runpy.run_module("codebox_tui", run_name="__main__", alter_sys=True)
"""

# Preloaded into Playwright's driver (the Node process that drives Chromium): writes its peak resident size
# (VmHWM, KiB) when it exits.
_NODE_PEAK = """
const fs = require("fs");
process.on("exit", () => {
  const status = fs.readFileSync("/proc/self/status", "utf8");
  fs.writeFileSync(process.env.CODEBOX_TEST_DRIVER_PEAK, /VmHWM:\\s*(\\d+)/.exec(status)[1]);
});
"""


def python_peak_launcher(out: Path) -> list[str]:
    """A ``launcher`` for :func:`native_page_run` that writes the CLI's peak of Python allocations (bytes) to
    ``out`` when it exits."""
    return [sys.executable, "-c", _PYTHON_PEAK, str(out)]


def driver_peak_env(work: Path, out: Path) -> dict[str, str]:
    """An ``env`` for :func:`native_page_run` that starts Playwright's driver (its own Node, as always) with a
    preload writing the driver's peak resident size in KiB (``VmHWM``) to ``out`` when it exits."""
    node, _ = compute_driver_executable()
    preload = work / "driver-peak.cjs"
    preload.write_text(_NODE_PEAK)
    wrapper = work / "driver-node"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(node)} --require {shlex.quote(str(preload))} "$@"\n')
    wrapper.chmod(0o755)
    return {"PLAYWRIGHT_NODEJS_PATH": str(wrapper), "CODEBOX_TEST_DRIVER_PEAK": str(out)}

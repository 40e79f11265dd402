"""A child Python process that does one piece of work and is SIGKILLed at a chosen instant.

The child script prepares everything, prints ``ready``, does the work, then prints how long the work took.
``run_child`` waits for ``ready`` (so the kill never lands in interpreter start-up or imports), then either
reads the duration (``kill_after=None``: a complete run, to measure) or SIGKILLs the child after
``kill_after`` seconds. Used by the apply and journal SIGKILL tests (tests/e2e, tests/integration).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def child_script(work: str) -> str:
    """The child's source: ``work`` (dedented) runs between the ``ready`` line and the duration line.
    Everything before the marker line ``# -- work --`` in ``work`` is set-up, run before ``ready``."""
    setup, _, body = textwrap.dedent(work).partition("# -- work --\n")
    return (
        "import sys, time\n"
        + setup
        + 'sys.stdout.write("ready\\n"); sys.stdout.flush()\n'
        + "start = time.perf_counter()\n"
        + body
        + 'sys.stdout.write(f"{time.perf_counter() - start}\\n"); sys.stdout.flush()\n'
    )


def run_child(script: str, args: list[str], kill_after: float | None) -> float | None:
    """Run ``script`` (from :func:`child_script`) with ``args``; the duration of a complete run, or None
    when it was SIGKILLed after ``kill_after`` seconds."""
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    if kill_after is None:
        elapsed = float(proc.stdout.readline())
        assert proc.wait(timeout=60) == 0
        return elapsed
    time.sleep(kill_after)  # the kill instant itself (random), not a wait for anything
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    return None


def ended_pid() -> int:
    """The pid of a process that has ended: what a folder abandoned by a killed Codebox records as its owner."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    return int(child.stdout)

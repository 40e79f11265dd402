"""A sandbox never outlives the Codebox process that started it (docs/security.md, "Layers").

When `codebox` dies without cleaning up (SIGKILL, OOM killer, a crashed terminal), the Node sidecar sees
its stdin close. It must then end even while sandboxed PHP is busy: an orphaned sidecar keeps a
WordPress, its preview port and its copies of the mounted folders alive with nobody to stop them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.factories.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _started_commands(artifacts: Path) -> list[dict[str, object]]:
    events = list(artifacts.glob("*/events.jsonl"))
    if not events:
        return []
    return [
        json.loads(line) for line in events[0].read_text().splitlines() if line.strip() and '"command.started"' in line
    ]


def test_sidecar_busy_in_php_ends_when_its_codebox_is_killed(tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    sidecar: set[int] = set()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "run",
            "--command",
            "wordpress.run-php",
            "--arg",
            "code=<?php while (true) { usleep(1000); }",
            "--timeout",
            "10m",
            "--artifacts",
            str(artifacts),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        wait_until(lambda: bool(_started_commands(artifacts)) or proc.poll() is not None, timeout=120)
        assert proc.poll() is None, "codebox run ended before its command started"
        assert _started_commands(artifacts), "the PHP command never started"
        sidecar = _descendants(proc.pid)
        assert sidecar, "no sidecar process below codebox run"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        wait_until(lambda: not any(_alive(pid) for pid in sidecar), timeout=20, interval=0.1)
        assert not [pid for pid in sidecar if _alive(pid)], "the sidecar outlived its killed codebox"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for pid in sidecar:  # leave no orphan behind when the assertion failed
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)

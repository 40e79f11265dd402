"""The directory journal under real SIGKILLs at random instants: a child process applies a plan and is
killed mid-apply; recovery must leave the target unchanged or fully applied."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from store.journal import recover
from tests.factories.journal_trees import make_tree, snapshot

pytestmark = [pytest.mark.integration, pytest.mark.sigkill]


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tests.factories.journal_trees import plan
    from store.journal import recover, target_lock, transactional_write
    root = Path(sys.argv[1])
    files = int(sys.argv[2])
    writes = plan(root, files)
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    start = time.perf_counter()
    with target_lock(root):
        recover(root)
        transactional_write(root, writes)
    sys.stdout.write(f"{time.perf_counter() - start}\\n"); sys.stdout.flush()
    """
)


def run_child(root: Path, files: int, kill_after: float | None) -> float | None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), str(files)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
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


def test_sigkill_at_random_points_leaves_target_unchanged_or_fully_applied(tmp_path: Path) -> None:
    files = 12
    reference = tmp_path / "reference"
    make_tree(reference, files)
    original = snapshot(reference)
    duration = run_child(reference, files, None)
    assert duration is not None
    applied = snapshot(reference)
    assert applied != original
    rng = random.Random(int(os.environ.get("CODEBOX_KILL_SEED", "4")))
    outcomes = {"unchanged": 0, "applied": 0}
    recoveries: dict[str, int] = {}
    iterations = int(os.environ.get("CODEBOX_KILL_ITERATIONS", "16"))  # more for a soak run
    for i in range(iterations):
        root = tmp_path / f"t{i}"
        make_tree(root, files)
        run_child(root, files, rng.uniform(0, duration * 1.2))
        done = recover(root)
        recoveries[str(done)] = recoveries.get(str(done), 0) + 1
        snap = snapshot(root)
        assert snap in (original, applied), f"iteration {i}: partial state after recovery ({done})"
        outcomes["unchanged" if snap == original else "applied"] += 1
    print(json.dumps({"duration": duration, "outcomes": outcomes, "recoveries": recoveries}))
    # the kills really landed mid-apply: some runs were rolled back or finished by recovery
    assert sum(v for k, v in recoveries.items() if k != "None") > 0

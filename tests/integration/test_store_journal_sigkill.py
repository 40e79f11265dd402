"""The directory journal under real SIGKILLs at random instants: a child process applies a plan and is
killed mid-apply; recovery must leave the target unchanged or fully applied."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from store.journal import recover
from tests.factories.journal_trees import make_tree, snapshot
from tests.factories.sigkill import child_script
from tests.factories.sigkill import run_child as run_sigkill_child

pytestmark = [pytest.mark.integration, pytest.mark.sigkill]


_CHILD = child_script(
    """
    from pathlib import Path
    from tests.factories.journal_trees import plan
    from store.journal import recover, target_lock, transactional_write
    root = Path(sys.argv[1])
    files = int(sys.argv[2])
    writes = plan(root, files)
    # -- work --
    with target_lock(root):
        recover(root)
        transactional_write(root, writes)
    """
)


def run_child(root: Path, files: int, kill_after: float | None) -> float | None:
    return run_sigkill_child(_CHILD, [str(root), str(files)], kill_after)


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

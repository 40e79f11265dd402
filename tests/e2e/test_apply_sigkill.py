"""SIGKILL a real ``directory`` apply at random instants, many times: after recovery the target is
always either exactly the baseline or exactly the fully applied tree. The instants are stratified (one at random
in each equal slice of the apply's duration and a little past it), so eight kills cover the whole apply as evenly
as sixteen unstratified ones did, with half the child processes (CI time); ``CODEBOX_KILL_ITERATIONS`` raises the
count for a soak run."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from store.db import Store
from store.decisions import decide
from store.journal import recover
from tests.factories.apply_back import BASELINE, CHANGES, capture, tree
from tests.factories.sigkill import child_script
from tests.factories.sigkill import run_child as run_sigkill_child

pytestmark = pytest.mark.sigkill

EXTRA = {f"gen/part-{i:02d}/file.php": b"<?php\n// generated %d\n" % i + b"x" * 2000 + b"\n" for i in range(24)}
ALL_CHANGES: dict[str, bytes | None] = {**CHANGES, **EXTRA}

_CHILD = child_script(
    """
    from pathlib import Path
    from store.db import Store
    from store.apply import load_adapter, prepare_plan
    store = Store.open(Path(sys.argv[1]))
    plan = prepare_plan(store, store.get_decision(int(sys.argv[2])))
    adapter = load_adapter("directory")
    # -- work --
    adapter.apply(plan, sys.argv[3])
    """
)


def run_child(db: Path, decision: int, target: Path, kill_after: float | None) -> float | None:
    return run_sigkill_child(_CHILD, [str(db), str(decision), str(target)], kill_after)


def test_sigkill_during_directory_apply_leaves_target_unchanged_or_fully_applied(tmp_path: Path) -> None:
    cap = capture(tmp_path, ALL_CHANGES)
    store = Store.open(tmp_path / "home" / "codebox.sqlite3")
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    store.close()
    db = tmp_path / "home" / "codebox.sqlite3"
    original = tree(cap.baseline)
    assert original == BASELINE

    reference = tmp_path / "reference"
    shutil.copytree(cap.baseline, reference)
    duration = run_child(db, decision.id, reference, None)
    assert duration is not None
    applied = tree(reference)
    assert applied != original and len(applied) == len(original) + len(EXTRA)

    rng = random.Random(int(os.environ.get("CODEBOX_KILL_SEED", "7")))
    recoveries: dict[str, int] = {}
    iterations = int(os.environ.get("CODEBOX_KILL_ITERATIONS", "8"))  # more for a soak run
    window = duration * 1.3  # the apply, and a little past its end
    for i in range(iterations):
        target = tmp_path / f"target-{i}"
        shutil.copytree(cap.baseline, target)
        run_child(db, decision.id, target, rng.uniform(i, i + 1) * window / iterations)  # in slice i of the window
        done = str(recover(target))
        recoveries[done] = recoveries.get(done, 0) + 1
        state = tree(target)
        assert state in (original, applied), f"iteration {i}: partial tree after recovery ({done})"
        assert not (target / ".codebox-apply").exists()
        if state == original:  # an interrupted apply can simply be run again
            run_child(db, decision.id, target, None)
            assert tree(target) == applied
    print(json.dumps({"duration_s": duration, "recoveries": recoveries}))
    assert sum(n for k, n in recoveries.items() if k != "None") > 0, recoveries

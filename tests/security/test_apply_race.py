"""Attack: swap a folder of the apply target for a symlink to a folder outside while `codebox apply` runs.

A racer process renames ``includes/`` away and puts a symlink to an outside folder (a copy of the same
files, so every hash check passes through the link) in its place, then swaps back, continuously. Apply
must never write, delete or create anything outside the target: each apply either lands in the real
folder or fails with a ConflictError (exit 5). Recovery of an interrupted apply must not follow a
swapped folder either (docs/security-host.md, "Apply-back"). Outcomes only, no timing: without the
descriptor-relative writes (store/fdtree.py) the racer reliably wins at least once over the iterations.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.errors import ConflictError
from store.apply import apply_decision
from store.db import Store
from store.decisions import decide
from store.journal import JOURNAL_VERSION, STAGING_DIR, journal_path, recover
from tests.factories.apply_back import BASELINE, CHANGES, capture, tree, write_tree

ITERATIONS = 200
CLI_ITERATIONS = 4
SWAPPED = "includes"
HOLD_SYSCALLS = 300


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry below ``folder`` (files by content, folders and links by kind), links not followed."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = path.read_bytes()
    return out


def _swap_forever(queue: Any, running: Event, idle: Event, outside: str) -> None:
    """The racer: while ``running``, swap ``<target>/includes`` with a symlink to ``outside`` and back."""
    target: Path | None = None
    while True:
        if not running.is_set():
            if target is not None:
                _settle(target)
            idle.set()
            item = queue.get()
            if item is None:
                return
            target = Path(item)
            idle.clear()
            running.set()
        assert target is not None
        real, link, spare = target / SWAPPED, target / (SWAPPED + ".real"), target / (SWAPPED + ".link")
        try:
            os.symlink(outside, spare)
            os.rename(real, link)  # the real folder moves aside (still inside the target)
            os.rename(spare, real)  # and the link takes its name
        except OSError:
            pass
        _hold(real)  # each state lasts a while (counted in system calls, not in time)
        try:
            os.unlink(real) if real.is_symlink() else None
            os.rename(link, real)
        except OSError:
            pass
        _hold(real)


def _hold(path: Path) -> None:
    for _ in range(HOLD_SYSCALLS):
        os.path.lexists(path)


def _settle(target: Path) -> None:
    """Leave the target with its real folder back in place (or aside, if apply made a new one meanwhile)."""
    real, link, spare = target / SWAPPED, target / (SWAPPED + ".real"), target / (SWAPPED + ".link")
    for candidate in (spare, real):
        if candidate.is_symlink():
            candidate.unlink()
    if link.is_dir() and not real.exists():
        link.rename(real)


@pytest.fixture()
def racer(tmp_path: Path) -> Iterator[tuple[Any, Event, Event, Path]]:
    outside = tmp_path / "outside"
    write_tree(outside, {rel.split("/", 1)[1]: data for rel, data in BASELINE.items() if rel.startswith(SWAPPED + "/")})
    context = multiprocessing.get_context("fork")
    queue, running, idle = context.Queue(), context.Event(), context.Event()
    process = context.Process(target=_swap_forever, args=(queue, running, idle, str(outside)), daemon=True)
    process.start()
    try:
        yield queue, running, idle, outside
    finally:
        running.clear()
        queue.put(None)
        process.join(timeout=30)
        if process.is_alive():
            process.kill()


def _race(racer: tuple[Any, Event, Event, Path], target: Path) -> None:
    queue, running, idle, _ = racer
    idle.clear()
    queue.put(str(target))
    running.wait()


def _stop(racer: tuple[Any, Event, Event, Path]) -> None:
    _, running, idle, _ = racer
    running.clear()
    assert idle.wait(timeout=60), "the racer did not stop"


def _fresh_target(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    write_tree(target, BASELINE)
    return target


def _approved_landed_inside(target: Path) -> bool:
    """Every approved addition/modification is somewhere inside the target (in the real folder, wherever
    the racer had moved it at that instant) and nothing of it reached the outside."""
    contents = {p.read_bytes() for p in target.rglob("*") if p.is_file() and not p.is_symlink()}
    return all(data in contents for data in CHANGES.values() if data is not None)


def test_a_folder_swapped_for_a_symlink_during_apply_never_sends_writes_outside(
    tmp_path: Path, racer: tuple[Any, Event, Event, Path]
) -> None:
    outside = racer[3]
    before_outside = snapshot(outside)
    cap = capture(tmp_path)
    store = Store.open(tmp_path / "home" / "codebox.sqlite3")
    decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
    outcomes = {"applied": 0, "conflict": 0}
    try:
        for index in range(ITERATIONS):
            target = _fresh_target(tmp_path, f"target-{index:03d}")
            _race(racer, target)
            try:
                result = apply_decision(store, decision.id, "directory", target)
            except ConflictError as error:
                _stop(racer)
                assert error.exit_code == 5
                assert SWAPPED in str(error) or "changed" in str(error), str(error)
                outcomes["conflict"] += 1
            else:
                _stop(racer)
                assert result.status == "applied"
                assert _approved_landed_inside(target), tree(target)
                outcomes["applied"] += 1
            assert snapshot(outside) == before_outside, f"iteration {index} wrote outside the target"
            shutil.rmtree(target)
    finally:
        store.close()
    assert sum(outcomes.values()) == ITERATIONS


def test_the_real_cli_under_the_same_race_exits_5_or_applies_inside(
    tmp_path: Path, racer: tuple[Any, Event, Event, Path]
) -> None:
    outside = racer[3]
    before_outside = snapshot(outside)
    cap = capture(tmp_path)
    home = tmp_path / "cli-home"
    env = {**os.environ, "CODEBOX_HOME": str(home)}

    def codebox(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codebox_tui", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )

    approved = codebox("review", "approve", str(cap.bundle_dir), "--approver", "ana", "--json")
    assert approved.returncode == 0, approved.stderr
    decision = json.loads(approved.stdout)["id"]
    for index in range(CLI_ITERATIONS):
        target = _fresh_target(tmp_path, f"cli-target-{index}")
        _race(racer, target)
        done = codebox("apply", str(decision), "--adapter", "directory", "--target", str(target), "--json")
        _stop(racer)
        assert done.returncode in (0, 5), done.stdout + done.stderr
        if done.returncode == 0:
            assert _approved_landed_inside(target)
        else:
            assert json.loads(done.stdout)["error"]["code"] in ("target-conflict", "apply-journal-invalid")
        assert snapshot(outside) == before_outside, f"CLI iteration {index} wrote outside the target"


def test_recovery_of_a_prepared_apply_does_not_follow_a_swapped_folder(tmp_path: Path) -> None:
    """A journal in ``prepared`` state says: put ``includes/old.php`` back from its backup and remove the
    added ``includes/new/extra.php`` and the folder ``includes/new``. With ``includes`` now a symlink to an
    outside folder holding the same names, recovery must refuse rather than act there."""
    root = _fresh_target(tmp_path, "target")
    outside = tmp_path / "outside"
    write_tree(outside, {"old.php": b"outside, must survive\n", "new/extra.php": b"outside, must survive\n"})
    before_outside = snapshot(outside)
    journals = tmp_path / "journals"
    staging = root / STAGING_DIR
    (staging / "new").mkdir(parents=True)
    (staging / "old").mkdir()
    (staging / "old" / "0").write_bytes(b"the original old.php\n")
    (root / SWAPPED).rename(root / (SWAPPED + ".real"))
    (root / SWAPPED).symlink_to(outside)
    info = staging.lstat()
    doc = {
        "version": JOURNAL_VERSION,
        "state": "prepared",
        "target": str(root.resolve()),
        "entries": [
            {"path": "includes/old.php", "backup": "old/0"},
            {"path": "includes/new/extra.php", "staged": "new/1"},
        ],
        "created_dirs": ["includes/new"],
        "staging_ident": [info.st_dev, info.st_ino],
    }
    path = journal_path(root, journals)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    with pytest.raises(ConflictError, match="includes is a symlink") as caught:
        recover(root, journals=journals)
    assert caught.value.exit_code == 5
    assert snapshot(outside) == before_outside
    assert (staging / "old" / "0").read_bytes() == b"the original old.php\n"  # kept for a retry by hand


def _prepared_journal(root: Path, journals: Path) -> None:
    """An apply into ``root`` interrupted after ``prepared``: recovery must put ``includes/old.php`` back
    from its backup and remove the added ``includes/extra.php``."""
    staging = root / STAGING_DIR
    (staging / "new").mkdir(parents=True)
    (staging / "old").mkdir()
    (staging / "old" / "0").write_bytes(b"the original old.php\n")
    (root / SWAPPED / "old.php").unlink()
    (root / SWAPPED / "extra.php").write_bytes(b"added\n")
    info = staging.lstat()
    doc = {
        "version": JOURNAL_VERSION,
        "state": "prepared",
        "target": str(root.resolve()),
        "entries": [{"path": "includes/old.php", "backup": "old/0"}, {"path": "includes/extra.php", "staged": "new/1"}],
        "created_dirs": [],
        "staging_ident": [info.st_dev, info.st_ino],
    }
    journal_path(root, journals).write_text(json.dumps(doc))


def test_recovery_under_the_same_race_never_acts_outside(tmp_path: Path, racer: tuple[Any, Event, Event, Path]) -> None:
    outside = racer[3]
    (outside / "extra.php").write_bytes(b"outside, must survive\n")
    before_outside = snapshot(outside)
    journals = tmp_path / "journals"
    journals.mkdir()
    for index in range(ITERATIONS):
        root = _fresh_target(tmp_path, f"target-{index:03d}")
        _prepared_journal(root, journals)
        _race(racer, root)
        try:
            outcome = recover(root, journals=journals)
        except ConflictError as error:
            _stop(racer)
            assert error.exit_code == 5
        else:
            _stop(racer)
            assert outcome == "rolled-back"
        assert snapshot(outside) == before_outside, f"recovery {index} acted outside the target"
        shutil.rmtree(root)

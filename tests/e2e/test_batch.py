"""`codebox batch` end to end: a real local Ray instance with 2 workers, real sandboxes, real PHPUnit, real
Chromium, real bundles shipped back, verified and recorded in a real store — and a Ray worker killed for real in
the middle of an item (docs/scale-out.md). Every item runs on the native backend (real PHP in real bubblewrap,
docs/backends.md), the evaluate-patch items and the agent fan-out's candidates alike: what is tested is Ray, the
store and the shipped bundles, the same on both backends; each bundle checks the backend it records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.batch import ItemState, parse_batch_file, run_batch, start_local_ray, stop_ray
from codebox_tui.bundle.verify import verify_bundle
from store.batches import batch_items, get_batch
from store.db import Store
from store.inbox import batch_groups, inbox_rows

pytestmark = [pytest.mark.native, pytest.mark.chromium]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples" / "plugins-for-recipes" / "buggy-counter"
PATCH = ROOT / "examples" / "patches" / "buggy-counter-fix.patch"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[str]:
    """One private local Ray instance with 2 CPUs (2 workers at one sandbox each) for the module. This pytest
    process already runs threads, so it cannot enter a loopback-only network (batch/loopback.py): the
    instance here listens as Ray does by default; tests/security/test_ray_loopback.py checks the
    confined start ``codebox batch`` uses."""
    address = start_local_ray(num_cpus=2, loopback_only=False)
    yield address
    stop_ray()


def _worker_command(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


@pytest.mark.timeout(1800)  # 2 sandboxes on 2 workers, one item twice, on a shared CI machine
def test_two_patches_on_two_workers_one_worker_killed_mid_item(local_ray: str, tmp_path: Path) -> None:
    lines = [
        {
            "kind": "evaluate-patch",
            "id": name,
            "plugin": str(PLUGIN),
            "patch": str(PATCH),
            "sandbox_session_id": f"session-{name}",
            "backend": "native",
        }
        for name in ("a", "c")
    ]
    batch_file = tmp_path / "batch.jsonl"
    batch_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    items = parse_batch_file(batch_file)
    victim = "c"
    mid_item = threading.Event()
    seen: dict[str, Any] = {}

    def on_update(state: ItemState) -> None:
        print(f"{state.item.id} {state.state} attempt {state.attempts} {state.phase}", file=sys.stderr)
        # "step 2" is the first PHPUnit run: the sandbox is up and the item is half done
        if state.item.id == victim and state.attempts == 1 and state.pid and state.phase.startswith("step 2"):
            seen["pid"] = state.pid
            mid_item.set()

    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["outcome"] = run_batch(
                items, retries=1, artifacts_root=tmp_path / "artifacts", on_update=on_update, source=str(batch_file)
            )
        except BaseException as error:  # surfaced by the assertion below
            result["error"] = error
            mid_item.set()

    thread = threading.Thread(target=run, name="batch")
    thread.start()
    assert mid_item.wait(900), "item c never reached its first PHPUnit run"
    assert "error" not in result, result.get("error")
    pid = seen["pid"]
    assert "ray::" in _worker_command(pid)  # a Ray worker process, not the caller
    os.kill(pid, signal.SIGKILL)
    thread.join(1800)
    assert not thread.is_alive()
    assert "error" not in result, result.get("error")
    outcome = result["outcome"]

    by_id = {s.item.id: s for s in outcome.items}
    assert {i: s.attempts for i, s in by_id.items()} == {"a": 1, "c": 2}
    assert by_id["c"].retried and "the worker died" in by_id["c"].retried[0]
    for state in outcome.items:
        assert state.state == "completed", (state.item.id, state.error)
        assert state.verdict == "improvement" and state.success
        bundle = Path(state.bundle_dir or "")
        assert bundle.parent == (tmp_path / "artifacts").resolve()
        assert verify_bundle(bundle).valid
        assert json.loads((bundle / "metadata.json").read_text())["runtime"]["backend"] == "native"
        assert json.loads((bundle / "files" / "evaluate-patch.json").read_text())["tests"]["fixed"] == [
            "CountTest::test_repeated_spaces"
        ]
    assert len({s.bundle_dir for s in outcome.items}) == 2

    with Store.open() as store:
        batch = get_batch(store, outcome.batch_id)
        assert batch.status == "completed" and batch.source == str(batch_file)
        recorded = {i.item_id: i for i in batch_items(store, outcome.batch_id)}
        assert {i: (r.state, r.attempts) for i, r in recorded.items()} == {"a": ("completed", 1), "c": ("completed", 2)}
        group = batch_groups(inbox_rows(store))[outcome.batch_id]
        assert sorted(r.batch_item for r in group) == ["a", "c"]
        assert {r.key for r in group} == {s.bundle_key for s in outcome.items}
        assert all(r.verdict == "improvement" and r.source == "evaluate-patch" for r in group)
        runs = {r.run_id: r for r in store.list_runs()}
        for state in outcome.items:
            run = runs[state.run_id or ""]
            assert run.sandbox_session_id == f"session-{state.item.id}"
            assert run.metadata["batch"] == outcome.batch_id and run.metadata["attempt"] == state.attempts


def _items(tmp_path: Path, *names: str) -> list[Any]:
    batch_file = tmp_path / "batch.jsonl"
    batch_file.write_text(
        "".join(
            json.dumps(
                {"kind": "evaluate-patch", "id": name, "plugin": str(PLUGIN), "patch": str(PATCH), "backend": "native"}
            )
            + "\n"
            for name in names
        )
    )
    return parse_batch_file(batch_file)


# An agent that never finishes by itself: it waits until its parent (the Ray worker that runs the item) is gone, so
# the item can only end by the batch's timeout (the agent's own is 600 s) and leaves no process behind.
HUNG_AGENT = "import os, time\nparent = os.getppid()\nwhile os.getppid() == parent:\n    time.sleep(0.1)\n"


def test_an_item_over_its_timeout_is_stopped_and_not_retried(local_ray: str, tmp_path: Path) -> None:
    """An item that cannot finish by itself (not an evaluation that should merely take longer than the timeout, which
    depends on the machine) is stopped at the batch's timeout, never retried, and ships nothing back."""
    import shutil

    from codebox_tui.agents import AgentSpec, AgentTaskRequest
    from codebox_tui.batch import agent_fan_out
    from codebox_tui.contracts.agent import TaskInput

    workspace = tmp_path / "simple-plugin"
    shutil.copytree(ROOT / "examples" / "simple-plugin", workspace)
    request = AgentTaskRequest(
        task=TaskInput(goal="never finish"),
        workspaces=[{"source": workspace, "target": "/workspace/simple-plugin"}],
        agent=AgentSpec(kind="command", argv=[sys.executable, "-c", HUNG_AGENT]),
        artifacts_root=tmp_path / "artifacts",
        backend="native",
    )
    outcome = run_batch(agent_fan_out(request, 1), timeout_s=2.0, retries=2, artifacts_root=tmp_path / "artifacts")
    state = outcome.items[0]
    assert (state.state, state.attempts, state.bundle_key) == ("timed-out", 1, None)
    assert state.error is not None and state.error["code"] == "item-timeout"
    assert not outcome.success
    assert not (tmp_path / "artifacts").exists() or not any((tmp_path / "artifacts").iterdir())
    with Store.open() as store:
        assert get_batch(store, outcome.batch_id).status == "failed"
        assert [(i.state, i.attempts) for i in batch_items(store, outcome.batch_id)] == [("timed-out", 1)]


def test_cancelling_a_batch_stops_the_running_item_and_the_queued_ones(local_ray: str, tmp_path: Path) -> None:
    from codebox_tui.lifecycle import RunControl

    control = RunControl()

    def on_update(state: ItemState) -> None:
        if state.item.id == "first" and state.pid and state.state == "running":
            control.cancel("the user pressed Ctrl-C")

    outcome = run_batch(
        _items(tmp_path, "first", "second"),
        concurrency=1,
        control=control,
        on_update=on_update,
        artifacts_root=tmp_path / "artifacts",
    )
    assert outcome.interrupted and not outcome.success
    assert [(s.item.id, s.state) for s in outcome.items] == [("first", "cancelled"), ("second", "cancelled")]
    assert [s.attempts for s in outcome.items] == [1, 0]
    with Store.open() as store:
        assert get_batch(store, outcome.batch_id).status == "cancelled"


def test_a_malformed_batch_file_is_refused_before_anything_runs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"kind": "evaluate-patch", "plugin": str(PLUGIN), "patch": str(PATCH)})
        + "\n"
        + json.dumps({"kind": "evaluate-patch", "plugin": str(PLUGIN)})
        + "\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "batch", str(bad), "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["message"] == "bad.jsonl line 2, field 'patch': Field required"
    assert error["code"] == "invalid-batch-item"
    human = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "batch", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert human.returncode == 2
    assert "bad.jsonl line 2, field 'patch': Field required" in human.stderr
    assert "Traceback" not in human.stderr


@pytest.mark.timeout(1200)
def test_an_agent_fan_out_lands_in_the_store_and_compares_in_the_tui(local_ray: str, tmp_path: Path) -> None:
    """``codebox agent-task --fan-out 2`` as its CLI runs it: the example agent on two candidates, one on each worker
    of the module's Ray instance; every bundle verified and recorded as one fan-out; Home compares the two. (Two, not
    three: an item queued behind busy workers is test_cancelling_a_batch_stops_the_running_item_and_the_queued_ones's
    and the retry of the killed item's; a third candidate only ran the same agent once more.)"""
    import asyncio
    import shutil

    from textual.widgets import DataTable

    from codebox_tui.agents import AgentSpec, AgentTaskRequest
    from codebox_tui.app import CodeboxApp
    from codebox_tui.batch import agent_fan_out
    from codebox_tui.contracts.agent import TaskInput
    from codebox_tui.screens.batch import BatchScreen
    from codebox_tui.screens.compare import CompareScreen
    from codebox_tui.screens.home import HomeScreen

    workspace = tmp_path / "simple-plugin"
    shutil.copytree(ROOT / "examples" / "simple-plugin", workspace)
    request = AgentTaskRequest(
        task=TaskInput(goal='replace "Hello" with "Howdy"'),
        workspaces=[{"source": workspace, "target": "/workspace/simple-plugin"}],
        agent=AgentSpec(kind="command", argv=[sys.executable, str(ROOT / "examples" / "agents" / "example_agent.py")]),
        sandbox_session_id="fan-out-session",
        artifacts_root=tmp_path / "artifacts",
        backend="native",
    )
    outcome = run_batch(
        agent_fan_out(request, 2), kind="fan-out", artifacts_root=tmp_path / "artifacts", source=request.task.goal
    )

    assert outcome.success, [(s.item.id, s.state, s.error) for s in outcome.items]
    assert sorted(s.item.id for s in outcome.items) == ["candidate-1", "candidate-2"]
    assert len({s.pid for s in outcome.items}) == 2  # both Ray workers ran one
    for state in outcome.items:
        bundle = Path(state.bundle_dir or "")
        assert bundle.parent == (tmp_path / "artifacts").resolve() and verify_bundle(bundle).valid
        assert json.loads((bundle / "metadata.json").read_text())["runtime"]["backend"] == "native"
        completion = json.loads((bundle / "files" / "completion-outcome.json").read_text())
        assert (completion["status"], completion["nextAction"]) == ("succeeded", "promote")
        assert "Howdy, %s!" in (bundle / "files" / "patch.diff").read_text()
    assert "Hello, %s!" in (workspace / "simple-plugin.php").read_text()  # the caller's folder is untouched
    with Store.open() as store:
        assert get_batch(store, outcome.batch_id).kind == "fan-out"
        group = batch_groups(inbox_rows(store))[outcome.batch_id]
        assert {r.key for r in group} == {s.bundle_key for s in outcome.items}
        runs = {r.run_id: r for r in store.list_runs()}
        assert all(runs[s.run_id or ""].sandbox_session_id == "fan-out-session" for s in outcome.items)

    async def compare_two() -> tuple[int, int]:
        app = CodeboxApp()
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            table = app.screen.query_one(DataTable)
            keys = [int(str(row.key.value)) for row in table.ordered_rows]
            table.move_cursor(row=keys.index(outcome.items[0].bundle_key or -1))
            await pilot.press("m")
            await pilot.pause()
            screen: Any = app.screen
            assert isinstance(screen, CompareScreen)
            assert [f.path for f in screen.comparison.files] == ["simple-plugin.php"]
            pair = screen.comparison.a.bundle.key, screen.comparison.b.bundle.key
            # the batch's progress table (Home `b`) from what the runner recorded in the store
            await pilot.press("escape")
            await pilot.pause()
            await pilot.press("b")
            for _ in range(100):
                await pilot.pause(0.05)
                if isinstance(app.screen, BatchScreen) and len(app.screen.items) == 2:
                    break
            items = app.screen.query_one(DataTable)
            rows = [[str(c) for c in items.get_row(r.key)] for r in items.ordered_rows]
            assert [r[2] for r in rows] == ["✔ completed"] * 2
            assert sorted(r[5] for r in rows) == sorted(f"@{s.bundle_key}" for s in outcome.items)
            return pair

    a, b = asyncio.run(compare_two())
    assert a != b and {a, b} == {s.bundle_key for s in outcome.items}

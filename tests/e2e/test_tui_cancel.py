"""Pilot, end to end: cancelling a real Playground run from the Live run screen (`x`, confirm). The
sandbox's processes are gone, the run is recorded as cancelled in the real store, and the evidence
captured so far is kept as a bundle. On Playground: the sidecar is one long-lived process group to watch; a native
sandbox runs each command and each of Codebox's probes in a process of its own, so the running command's is not
known to the test without a race."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import ConfirmDialog
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.settings import get_settings
from store.db import Store
from tests.factories.tui import submit_launch_form
from tests.factories.waiting import wait_for_reaper

pytestmark = pytest.mark.playground


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_cancel_a_running_command_stops_the_sandbox_and_records_cancelled(  # type: ignore[no-untyped-def]
    playground_session, plugin_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = "echo 'started'; sleep(120); echo 'not reached';"
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        live = await submit_launch_form(
            app,
            pilot,
            mounts=f"{plugin_copy}:/wordpress/wp-content/plugins/simple-plugin:readwrite",
            args=shlex.quote(f"code={code}"),
        )
        assert isinstance(live, LiveRunScreen)
        for _ in range(1800):  # boot, then the command starts (its sleep keeps it running)
            if live.progress.step.startswith("running wordpress.run-php"):
                break
            await asyncio.sleep(0.1)
        assert live.progress.step.startswith("running"), live.progress.line()
        sandbox = live.session._sandbox
        assert sandbox is not None
        sidecar_pid = sandbox.sidecar.pid
        work_dir = Path(sandbox.work_dir)
        assert _group_alive(sidecar_pid)  # the sidecar leads its own process group

        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is live
        for _ in range(600):
            if live.state not in ("starting", "cancelling"):
                break
            await asyncio.sleep(0.1)
        assert live.state == "cancelled", live.query_one("#progress").render()
        assert "cancelled" in str(live.query_one("#progress").render())
        run_dir = live.session.run_dir
        run_id = live.session.runtime_id

    # No leaked processes: the sidecar's whole process group is gone; the sandbox's files are removed.
    assert not _group_alive(sidecar_pid)
    assert wait_for_reaper(live.session.reaper_pid), "the reaper did not finish"  # runtime/reaper.py
    assert not work_dir.exists()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    kinds = [e["type"] for e in events]
    assert "runtime.disposed" in kinds
    outcome = [e for e in events if e["type"] in ("command.finished", "command.failed")]
    assert all(e["type"] == "command.failed" or e["data"].get("exitCode") != 0 for e in outcome)  # never succeeded
    store = Store.open(get_settings().db_path)
    try:
        run = next(r for r in store.list_runs() if r.run_id == run_id)
    finally:
        store.close()
    assert run.status == "cancelled"
    assert run.bundle_id  # the evidence so far was captured as a bundle
    assert (live.bundle_dir / "manifest.json").exists()

"""Pilot, end to end: cancelling a real Playground run from the Live run screen (`x`, confirm). The
sandbox's processes are gone, the run is recorded as cancelled in the real store, and the evidence
captured so far is kept as a bundle. On Playground: the sidecar is one long-lived process group to watch; a native
sandbox runs each command and each of Codebox's probes in a process of its own, so the running command's is not
known to the test without a race."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import ConfirmDialog
from codebox_tui.settings import get_settings
from store.db import Store
from tests.factories.tui import command_running
from tests.factories.waiting import process_group_alive, wait_for_reaper

pytestmark = pytest.mark.playground


async def test_cancel_a_running_command_stops_the_sandbox_and_records_cancelled(  # type: ignore[no-untyped-def]
    playground_session, plugin_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = "echo 'started'; sleep(120); echo 'not reached';"
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        live = await command_running(app, pilot, plugin_copy, code)
        sandbox = live.session._sandbox
        assert sandbox is not None
        sidecar_pid = sandbox.sidecar.pid
        work_dir = Path(sandbox.work_dir)
        assert process_group_alive(sidecar_pid)  # the sidecar leads its own process group

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
    assert not process_group_alive(sidecar_pid)
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

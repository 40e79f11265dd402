"""Pilot, end to end: quitting the app (`q`) while a real Playground run is running does not wait for the
command (it sleeps 120 s, and never gets to print its last line), and the sandbox is still disposed: its sidecar's
process group is gone afterwards (no leaked Node process). No wall-clock bound: what is checked is what happened.
On Playground, as the cancel test (test_tui_cancel.py says why)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from codebox_tui.app import CodeboxApp
from tests.factories.tui import command_running
from tests.factories.waiting import process_group_alive

pytestmark = pytest.mark.playground


async def test_quit_during_a_run_returns_at_once_and_disposes_the_sandbox(  # type: ignore[no-untyped-def]
    playground_session, plugin_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = "echo 'started'; sleep(120); echo 'not ' . 'reached';"  # the output's words are not in the code
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        live = await command_running(app, pilot, plugin_copy, code)
        sandbox = live.session._sandbox
        assert sandbox is not None
        sidecar_pid = sandbox.sidecar.pid
        run_dir = live.session.run_dir
        assert process_group_alive(sidecar_pid)
        await pilot.press("q")
    assert not app.is_running

    # Disposal goes on in the background: the sidecar's process group is gone soon after (not 120 s later).
    deadline = time.monotonic() + 30
    while process_group_alive(sidecar_pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert not process_group_alive(sidecar_pid), "the sandbox's Node process outlived the app"

    # ... and the run says so in its events: disposing, then disposed (what the progress line shows meanwhile)
    events = run_dir / "events.jsonl"
    deadline = time.monotonic() + 30
    while '"runtime.disposed"' not in events.read_text() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    types = [json.loads(line)["type"] for line in events.read_text().splitlines()]
    assert types.index("runtime.disposing") < types.index("runtime.disposed"), types
    # the command was stopped, not waited for: its last line is nowhere in what the run recorded
    recorded = [p for p in run_dir.rglob("*") if p.is_file()]
    assert recorded and not any(b"not reached" in p.read_bytes() for p in recorded)

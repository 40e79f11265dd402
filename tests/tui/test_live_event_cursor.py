"""Live run: a visible cursor selects an event, `enter` opens it, `o` shows its command's stdout and stderr
(sandbox-written text: control characters arrive as visible escapes)."""

from __future__ import annotations

import json
from pathlib import Path

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import TextDialog
from codebox_tui.screens.live_run import LiveRunScreen
from tests.factories.widget_hosts import wait_for
from widgets.event_tail import EventTail


def _write_run(run_dir: Path) -> None:
    events, commands = [], []
    for n, (cid, out) in enumerate((("command-a", "first output"), ("command-b", "second \x1b[2Joutput"))):
        events.append(
            {
                "id": f"e{n}s",
                "type": "command.started",
                "level": "info",
                "data": {"id": cid, "command": "wordpress.run-php"},
                "timestamp": f"2026-11-24T12:00:0{n}.000Z",
            }
        )
        events.append(
            {
                "id": f"e{n}f",
                "type": "command.finished",
                "level": "info",
                "data": {"id": cid, "command": "wordpress.run-php", "exitCode": n},
                "timestamp": f"2026-11-24T12:00:0{n}.500Z",
            }
        )
        commands.append(
            {
                "id": cid,
                "command": "wordpress.run-php",
                "args": [],
                "exitCode": n,
                "stdout": out,
                "stderr": f"warning {n}",
                "durationMs": 5,
            }
        )
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (run_dir / "commands.jsonl").write_text("".join(json.dumps(c) + "\n" for c in commands))


async def test_cursor_selects_an_event_and_o_shows_its_commands_output(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _write_run(run_dir)
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = LiveRunScreen(run_dir=run_dir)
        app.push_screen(screen)
        await wait_for(pilot, lambda: bool(screen.query(EventTail)))
        tail = screen.query_one(EventTail)
        await wait_for(pilot, lambda: tail.total == 4)
        tail.focus()
        await pilot.pause()
        assert tail.cursor_row == 3  # following: the newest event
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog))
        dialog = app.screen
        assert isinstance(dialog, TextDialog)
        assert "exit 1" in dialog.title_text and "second" in dialog.text and "warning 1" in dialog.text
        assert "\x1b" not in dialog.text and "\\x1b" in dialog.text  # shown, never sent to the terminal
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("up", "up")  # to the first command's "finished" event
        await pilot.pause()
        assert tail.cursor_row == 1 and not tail.following
        selected = tail.selected_event()
        assert isinstance(selected, dict) and selected["data"]["id"] == "command-a"
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog))
        assert "first output" in app.screen.text and "exit 0" in app.screen.title_text  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog))
        assert '"command-a"' in app.screen.text  # type: ignore[attr-defined]

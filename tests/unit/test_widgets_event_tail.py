"""EventTail in a host app with a real events.jsonl appended while it runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.factories.widget_hosts import Recorder, wait_for
from widgets.event_tail import EventTail, pretty_event

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")


def _event(i: int, level: str = "info", kind: str = "command.started") -> str:
    return (
        json.dumps(
            {
                "id": f"e{i}",
                "type": kind,
                "timestamp": "2026-11-23T00:00:00.000Z",
                "level": level,
                "data": {"command": f"cmd{i}"},
            }
        )
        + "\n"
    )


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def _screen_text(tail: EventTail) -> str:
    return "\n".join("".join(seg.text for seg in tail.render_line(y)) for y in range(tail.size.height))


async def test_follow_pending_and_refollow(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(_event(i) for i in range(50)))
    tail = EventTail(path, poll_interval=0.02)
    app = Recorder(tail)
    async with app.run_test(size=(100, 10)) as pilot:
        tail.focus()
        await wait_for(pilot, lambda: "cmd49" in _screen_text(tail))
        assert tail.total == 50 and tail.following
        _append(path, _event(50))
        await wait_for(pilot, lambda: "cmd50" in _screen_text(tail))
        assert tail.total == 51
        await pilot.press("pageup")
        await pilot.pause()
        assert not tail.following
        _append(path, _event(51) + _event(52))
        await wait_for(pilot, lambda: tail.pending == 2)
        await pilot.pause()
        assert tail.pending == 2 and "2 new" in str(tail.border_subtitle)
        assert "cmd52" not in _screen_text(tail)
        updates = app.of(EventTail.Updated)
        assert updates[-1].pending == 2 and not updates[-1].following
        await pilot.press("end")
        await wait_for(pilot, lambda: "cmd52" in _screen_text(tail))
        assert tail.following and tail.pending == 0 and "cmd52" in _screen_text(tail)


async def test_level_and_type_filters(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(_event(0, "debug") + _event(1, "info", "phase") + _event(2, "error") + _event(3, "warning"))
    tail = EventTail(path, poll_interval=0.02)
    app = Recorder(tail)
    async with app.run_test(size=(100, 10)) as pilot:
        tail.focus()
        await wait_for(pilot, lambda: tail.total == 4)
        await pilot.press("l", "l")  # debug → info → warning
        await pilot.pause()
        assert tail.min_level == "warning" and tail.total == 2
        await pilot.press("l", "l")  # error → debug
        tail.set_type_filter({"phase"})
        await pilot.pause()
        assert tail.total == 1 and "cmd1" in _screen_text(tail)


async def test_enter_posts_the_event_and_truncation_resets(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(_event(0) + "not json\n")
    tail = EventTail(path, poll_interval=0.02)
    app = Recorder(tail)
    async with app.run_test(size=(100, 10)) as pilot:
        tail.focus()
        await wait_for(pilot, lambda: tail.total == 2)
        await pilot.press("enter")  # the cursor follows the newest line: the one that is not JSON
        await pilot.pause()
        assert app.of(EventTail.Inspect)[-1].event == "not json"
        await pilot.press("up", "enter")  # the cursor moves to the first event
        await pilot.pause()
        inspected = app.of(EventTail.Inspect)
        assert isinstance(inspected[-1].event, dict) and inspected[-1].event["id"] == "e0"
        assert '"command": "cmd0"' in pretty_event(inspected[-1].event)
        path.write_text(_event(7))  # truncated and rewritten
        await wait_for(pilot, lambda: "cmd7" in _screen_text(tail))
        assert tail.total == 1

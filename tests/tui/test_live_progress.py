"""The Live run progress line follows the run's events.jsonl as it grows (not the launch callback)."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.live_run import LiveRunScreen
from tests.factories.widget_hosts import wait_for


def _append(path: Path, kind: str, second: int, **data: object) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(
            json.dumps(
                {
                    "id": f"e{second}",
                    "type": kind,
                    "level": "info",
                    "data": data,
                    "timestamp": f"2026-11-22T12:00:{second:02}.000Z",
                }
            )
            + "\n"
        )


async def test_progress_line_follows_the_events(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    events = run_dir / "events.jsonl"
    _append(events, "runtime.boot-started", 0, wp="6.5")
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = LiveRunScreen(run_dir=run_dir)
        app.push_screen(screen)
        await pilot.pause()

        def progress() -> str:
            return str(screen.query_one("#progress", Static).render())

        await wait_for(pilot, lambda: "booting WordPress 6.5" in progress())
        _append(events, "runtime.boot-progress", 2, phase="copying-site")
        await wait_for(pilot, lambda: "booting: copying site" in progress())
        _append(events, "runtime.ready", 4, previewUrl="http://127.0.0.1:9")
        _append(events, "command.started", 4, command="wordpress.run-php")
        await wait_for(pilot, lambda: "running wordpress.run-php" in progress())
        assert "elapsed 4.0 s" in progress() and "preview http://127.0.0.1:9" in progress()
        _append(events, "command.finished", 7, command="wordpress.run-php", exitCode=0)
        await wait_for(pilot, lambda: "wordpress.run-php exited 0" in progress())
        assert "1 command done" in progress()


async def test_tests_are_counted_on_the_live_screen_as_they_finish(tmp_path: Path) -> None:
    """evaluate-patch's `tests.progress` events (PHPUnit's TeamCity log, read while the suite runs) rise on the
    progress line ("tests before: 7/12…") until the side's totals replace them."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    events = run_dir / "events.jsonl"
    _append(events, "evaluate.tests-started", 1, side="before")
    app = CodeboxApp()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        screen = LiveRunScreen(run_dir=run_dir)
        app.push_screen(screen)
        await pilot.pause()

        def progress() -> str:
            return str(screen.query_one("#progress", Static).render())

        await wait_for(pilot, lambda: "tests before: running" in progress())
        for second, done in ((2, 0), (3, 7), (4, 12)):
            _append(events, "tests.progress", second, suite="wordpress.phpunit", done=done, total=12, failed=done // 7)
            await wait_for(pilot, lambda done=done: f"tests before: {done}/12" in progress())  # type: ignore[misc]
        assert "tests before: 12/12, 1 failed…" in progress()
        _append(events, "evaluate.tests-finished", 5, side="before", tests=12, passed=11, failed=1)
        await wait_for(pilot, lambda: "tests before: 11/12 passed, 1 failed" in progress())

"""Pilot tests of following a live events.jsonl and of applying an approval through an adapter,
asserting on the widget state, the store and the files on disk."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import ApplyDialog
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.screens.review import ReviewScreen
from store.db import Store
from tests.factories.widget_hosts import wait_for
from widgets.event_tail import EventTail
from widgets.file_tree import ChangedFileTree


def _event(index: int, kind: str = "command.output", level: str = "info") -> str:
    return (
        json.dumps(
            {
                "data": {"n": index},
                "id": f"event-{index}",
                "level": level,
                "timestamp": "2026-11-22T12:00:00.000Z",
                "type": kind,
            }
        )
        + "\n"
    )


async def test_live_run_follows_then_pauses_with_a_pending_counter(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    log = run_dir / "events.jsonl"
    log.write_text("".join(_event(i) for i in range(5)))
    app = CodeboxApp()
    async with app.run_test(size=(100, 30)) as pilot:
        app.push_screen(LiveRunScreen(run_dir=run_dir))
        await wait_for(pilot, lambda: bool(app.screen.query(EventTail)) and app.screen.query_one(EventTail).total == 5)
        tail = app.screen.query_one(EventTail)
        assert tail.following
        with log.open("a") as handle:  # the file grows, including a torn write completed later
            handle.write("".join(_event(i) for i in range(5, 60)) + _event(60)[:20])
        # followed: the new lines are taken in and the view stays at the end (polled, never a fixed pause)
        await wait_for(pilot, lambda: tail.total == 60 and tail.max_scroll_y > 0 and tail.scroll_y == tail.max_scroll_y)
        assert tail.following
        tail.focus()
        tail.scroll_to(y=0, animate=False)
        await wait_for(pilot, lambda: not tail.following)
        with log.open("a") as handle:
            handle.write(_event(60)[20:] + _event(61))
        await wait_for(pilot, lambda: tail.total == 62)
        assert tail.pending == 2 and not tail.following and tail.scroll_y == 0
        await pilot.press("end")
        await wait_for(pilot, lambda: tail.following and tail.pending == 0)


def _pristine(target: Path) -> None:
    """The plugin as it was before the sandbox changed it (see make_bundle)."""
    target.mkdir()
    (target / "plugin.php").write_text("".join(f"<?php // line {i}\n" for i in range(40)))
    (target / "readme.txt").write_text("read me\n")
    (target / "keep.bin").write_bytes(bytes(range(256)))
    (target / "lib").mkdir()
    (target / "lib" / "util.php").write_text("<?php\nfunction util() { return 1; }\n")


async def test_approve_selected_then_apply_through_the_directory_adapter(
    bundle_dir: Path, store: Store, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    _pristine(target)
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        tree = app.screen.query_one(ChangedFileTree)
        tree.focus()
        for name in ("plugin.php", "added.php"):
            assert tree.highlight_path(name)
            await pilot.press("space")
            await pilot.pause()
        await pilot.press("A")
        await pilot.pause()
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ApplyDialog), timeout=120)  # decided in a worker
        dialog = app.screen
        assert isinstance(dialog, ApplyDialog)
        dialog.query_one("#target", Input).value = str(target)
        dialog.query_one("#target", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        await wait_for(pilot, lambda: not dialog.applying, timeout=120)  # applied in a worker
        shown = str(dialog.query_one("#apply-result", Static).render())
        assert "wp-codebox/apply-result/v1" in shown, shown
    (decision,) = store.list_decisions()
    assert sorted(decision.approved_relative_paths or []) == ["added.php", "plugin.php"]
    assert "LINE twenty" in (target / "plugin.php").read_text()
    assert (target / "added.php").read_text() == "<?php echo 'new';\n"
    # files that were not approved are untouched
    assert (target / "readme.txt").read_text() == "read me\n"
    assert (target / "keep.bin").read_bytes() == bytes(range(256))
    assert not (target / "lib" / "run.sh").exists()

"""The Batches screen (docs/scale-out.md, "In the TUI"): the live progress table follows what a runner records in
the real store — here the test plays the runner with the store's own functions, step by step — and opens the
bundle of a finished item for review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.batch import BatchScreen
from codebox_tui.screens.review import ReviewScreen
from store.batches import create_batch, finish_batch, update_item
from store.db import Store
from store.decisions import register_bundle
from tests.factories.bundles import make_bundle, typical_change
from tests.factories.screenshots import FIXED_NOW
from tests.factories.widget_hosts import wait_for


def _cells(screen: Any) -> list[list[str]]:
    """Rows as item, kind, state, tries, verdict, bundle, now (kind is "" where the screen is too narrow for it)."""
    table = screen.query_one(DataTable)
    names = [str(column.key.value) for column in table.ordered_columns]
    rows = [dict(zip(names, (str(cell) for cell in table.get_row(row.key)), strict=True)) for row in table.ordered_rows]
    return [
        [row.get(name, "") for name in ("item", "kind", "state", "tries", "verdict", "bundle", "now")] for row in rows
    ]


def _title(screen: Any) -> str:
    return str(screen.query_one("#batch-title", Static).render())


async def test_the_table_follows_the_runner_and_opens_a_finished_items_bundle(tmp_path: Path, store: Store) -> None:
    create_batch(store, "batch-old", kind="batch", source="old.jsonl", items=[("only", "evaluate-patch", "x")])
    finish_batch(store, "batch-old", "completed")
    create_batch(
        store,
        "batch-live",
        kind="fan-out",
        source="replace Hello",
        items=[("candidate-1", "agent-task", "t"), ("candidate-2", "agent-task", "t")],
    )
    app = CodeboxApp(now=FIXED_NOW)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, BatchScreen) and len(_cells(app.screen)) == 2)
        screen = app.screen
        assert "batch-live" in _title(screen) and "2 queued" in _title(screen)
        assert [row[2] for row in _cells(screen)] == ["· queued", "· queued"]

        # the runner starts one item and reports its phases: the table shows them without a key press
        update_item(store, "batch-live", "candidate-1", state="running", attempts=1, phase="step 1: wp-codebox.agent")
        await wait_for(pilot, lambda: _cells(screen)[0][6] == "step 1: wp-codebox.agent")
        assert _cells(screen)[0][2] == "▶ running" and "1 running" in _title(screen)

        # it finishes with a bundle; the other one fails
        (tmp_path / "b1").mkdir()
        summary, _ = make_bundle(tmp_path / "b1", typical_change)
        key = register_bundle(store, summary.path).key
        update_item(
            store, "batch-live", "candidate-1", state="completed", attempts=1, verdict="completed", bundle_key=key
        )
        update_item(
            store, "batch-live", "candidate-2", state="failed", attempts=2, verdict="failed", error="the agent exited 1"
        )
        finish_batch(store, "batch-live", "failed")
        await wait_for(pilot, lambda: "· failed ·" in _title(screen) and _cells(screen)[1][2] == "✘ failed")
        assert _cells(screen)[0][5] == f"@{key}" and _cells(screen)[1][6] == "the agent exited 1"
        assert _cells(screen)[1][3] == "2"

        # enter on an item without a bundle says so; on the finished one it opens the review
        screen.query_one(DataTable).move_cursor(row=1)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen
        assert any("has no bundle" in str(n.message) for n in app._notifications)
        screen.query_one(DataTable).move_cursor(row=0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen))
        assert Path(app.screen.bundle.path).resolve() == summary.path.resolve()  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)

        # `[` goes to the older batch, `]` back
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: "batch-old" in _title(screen))
        assert [row[0] for row in _cells(screen)] == ["only"]
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: "batch-live" in _title(screen))


async def test_no_batch_yet_says_how_to_start_one(store: Store) -> None:
    app = CodeboxApp(now=FIXED_NOW)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, BatchScreen) and "No batches yet" in _title(app.screen))
        assert "codebox agent-task --fan-out N" in _title(app.screen)


def test_batch_screen_snapshot(snap_compare: Any, tmp_path: Path, store: Store) -> None:
    create_batch(
        store,
        "batch-demo",
        kind="fan-out",
        source='replace "Hello" with "Howdy"',
        items=[(f"candidate-{n}", "agent-task", "t") for n in range(1, 5)],
    )
    (tmp_path / "b1").mkdir()
    summary, _ = make_bundle(tmp_path / "b1", typical_change)
    key = register_bundle(store, summary.path).key
    update_item(store, "batch-demo", "candidate-1", state="completed", attempts=1, verdict="completed", bundle_key=key)
    update_item(store, "batch-demo", "candidate-2", state="running", attempts=2, phase="step 1: wp-codebox.agent")
    update_item(
        store, "batch-demo", "candidate-3", state="failed", attempts=1, verdict="failed", error="the agent exited 1"
    )

    async def open_batches(pilot: Any) -> None:
        await pilot.pause()
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, BatchScreen) and len(_cells(pilot.app.screen)) == 4)
        await pilot.pause()

    assert snap_compare(CodeboxApp(now=FIXED_NOW), terminal_size=(120, 24), run_before=open_batches)

"""A batch / fan-out in the inbox (docs/scale-out.md, "In the inbox"): real bundles captured from real folders,
recorded in the real store as the candidates of one batch; the Pilot groups them, compares two side by side
and promotes one, and every assertion about the promotion is made on the store."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.compare import CompareScreen
from codebox_tui.screens.home import HomeScreen
from codebox_tui.settings import get_settings
from store.batches import create_batch, get_batch, update_item
from store.db import Store
from store.decisions import register_bundle
from store.inbox import group_batches, inbox_rows
from tests.factories.bundles import make_bundle, second_try, typical_change
from tests.factories.screenshots import FIXED_NOW

FIXED_CREATED = "2026-01-01T00:00:00.000Z"


def _batch(tmp_path: Path, store: Store) -> dict[str, int]:
    """A plain run, then a batch of two candidates (two different patches of one plugin), then another run."""
    keys: dict[str, int] = {}
    for name, change in (("before", typical_change), ("a", typical_change), ("b", second_try), ("after", second_try)):
        (tmp_path / name).mkdir()
        summary, _ = make_bundle(tmp_path / name, change)
        keys[name] = register_bundle(store, summary.path).key
    create_batch(
        store,
        "batch-demo",
        kind="fan-out",
        source="candidates.jsonl",
        items=[("a", "evaluate-patch", "A"), ("b", "evaluate-patch", "B")],
    )
    for name in ("a", "b"):
        update_item(
            store, "batch-demo", name, state="completed", attempts=1, verdict="improvement", bundle_key=keys[name]
        )
    with sqlite3.connect(get_settings().db_path) as conn:  # a fixed age and order for stable pictures
        for i, key in enumerate(keys.values()):
            conn.execute("UPDATE bundles SET created_at = ? WHERE key = ?", (f"2026-01-01T00:00:0{i}.000Z", key))
    return keys


def _titles(app: CodeboxApp) -> list[str]:
    table = app.screen.query_one(DataTable)
    return [str(table.get_row(row.key)[0]) for row in table.ordered_rows]


def test_candidates_of_a_batch_stay_together(tmp_path: Path, store: Store) -> None:
    keys = _batch(tmp_path, store)
    rows = inbox_rows(store)
    # an order that splits the two candidates (a, after, before, b): grouping makes them one block again
    split = sorted(rows, key=lambda r: [keys["a"], keys["after"], keys["before"], keys["b"]].index(r.key))
    assert [r.batch_item for r in split] == ["a", "", "", "b"]
    grouped = group_batches(split)
    positions = [i for i, r in enumerate(grouped) if r.batch == "batch-demo"]
    assert positions == list(range(positions[0], positions[0] + 2))
    assert {r.batch_item for r in grouped if r.batch} == {"a", "b"}
    assert sorted(r.key for r in grouped) == sorted(keys.values())


async def test_home_groups_compares_and_promotes_candidates(tmp_path: Path, store: Store) -> None:
    keys = _batch(tmp_path, store)
    app = CodeboxApp(now=FIXED_NOW)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        titles = _titles(app)
        marked = [i for i, t in enumerate(titles) if t.startswith("┃ ")]
        assert len(marked) == 2 and marked[1] == marked[0] + 1  # one block
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=marked[0])
        await pilot.pause()
        first = int(str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value))
        await pilot.press("m")
        await pilot.pause()
        screen: Any = app.screen
        assert isinstance(screen, CompareScreen)
        assert {screen.comparison.a.bundle.key, screen.comparison.b.bundle.key} == {keys["a"], keys["b"]}
        assert screen.comparison.a.bundle.key == first
        assert any(not f.same for f in screen.comparison.files)  # the two patches differ
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("P")
        await pilot.pause()
        assert get_batch(store, "batch-demo").promoted_key == first
        assert _titles(app)[marked[0]].startswith("★ ")
        # a plain run is no candidate: nothing is promoted or compared
        plain = next(i for i, t in enumerate(_titles(app)) if not t.startswith(("┃", "★")))
        table.move_cursor(row=plain)
        await pilot.press("P", "m")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert get_batch(store, "batch-demo").promoted_key == first


def test_batch_in_the_inbox_snapshot(snap_compare: Any, tmp_path: Path, store: Store) -> None:
    _batch(tmp_path, store)

    async def promote_first(pilot: Any) -> None:
        await pilot.pause()
        titles = _titles(pilot.app)
        table = pilot.app.screen.query_one(DataTable)
        table.move_cursor(row=next(i for i, t in enumerate(titles) if t.startswith("┃ ")))
        await pilot.press("P")
        await pilot.pause()
        for toast in pilot.app.screen.query("Toast"):
            toast.remove()
        await pilot.pause()

    assert snap_compare(CodeboxApp(now=FIXED_NOW), terminal_size=(120, 24), run_before=promote_first)

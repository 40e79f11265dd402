"""The batch progress table (codebox_tui.batch.progress): plain lines on a pipe, a rich table on a terminal."""

from __future__ import annotations

import io

from codebox_tui.batch import BatchItem, ItemState
from codebox_tui.batch.progress import ProgressTable


def _state(item_id: str, **changes: object) -> ItemState:
    state = ItemState(BatchItem(item_id, "evaluate-patch", None, f"plugin + {item_id}"), 0)
    for name, value in changes.items():
        setattr(state, name, value)
    return state


def test_plain_lines_one_per_change_never_repeated() -> None:
    out = io.StringIO()
    table = ProgressTable(stream=out, live=False)
    running = _state("a", state="running", attempts=1, phase="step 2: wordpress.phpunit")
    table.update(running)
    table.update(running)  # nothing changed: no second line
    table.update(_state("a", state="retrying", attempts=1, phase="the worker died (WorkerCrashedError)"))
    table.update(_state("a", state="completed", attempts=2, verdict="improvement", bundle_key=7))
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "a (evaluate-patch) ▶ running attempt 1 · step 2: wordpress.phpunit",
        "a (evaluate-patch) ↻ retrying attempt 1 · the worker died (WorkerCrashedError)",
        "a (evaluate-patch) ✔ completed attempt 2 · improvement · bundle @7",
    ]


def test_failed_items_show_their_error_and_hostile_text_is_made_safe() -> None:
    out = io.StringIO()
    table = ProgressTable(stream=out, live=False)
    table.update(
        _state(
            "b",
            state="failed",
            attempts=1,
            verdict="error\x1b[31m",
            error={"code": "x", "message": "the patch does not apply"},
        )
    )
    text = out.getvalue()
    assert "✘ failed attempt 1" in text and "the patch does not apply" in text
    assert "\x1b" not in text


def test_live_table_renders_every_item() -> None:
    from rich.console import Console

    table = ProgressTable(stream=io.StringIO(), live=False)
    table.update(_state("a", state="running", attempts=1, phase="booting"))
    table.update(_state("b", state="queued"))
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(table.render())
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "▶ running" in shown and "· queued" in shown and "booting" in shown

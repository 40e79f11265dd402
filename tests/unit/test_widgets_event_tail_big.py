"""A big events.jsonl is indexed by a worker thread: the first lines are on screen and the UI answers
keys while the rest of the file is still being indexed.

The index is the real LineIndex over a real ~40 MiB file; the only addition is a gate that holds the
indexer after its first chunks until the test has looked, so "before indexing finishes" is a fact
of the test, not a race. If indexing ran on the UI thread, the gate would stall the UI and the
assertions below would fail (the gate gives up after 30 s, so the test cannot hang)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from tests.factories.widget_hosts import Recorder, wait_for
from widgets.event_tail import EventTail
from widgets.line_index import LineIndex

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

CHUNK = 1 << 20


class GatedIndex(LineIndex):
    """A LineIndex whose third update waits for ``release`` (set by the test)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls = 0
        self.held = threading.Event()
        self.release = threading.Event()
        self.timed_out = False  # nobody released the gate: the test could not run while it was held

    def update(self, chunk_limit: int = 16 << 20) -> int:
        self.calls += 1
        if self.calls == 3:
            self.held.set()
            self.timed_out = not self.release.wait(30)
        return super().update(chunk_limit)


def _write_big(path: Path, target: int) -> int:
    lines = []
    i = 0
    size = 0
    while size < target:
        line = (
            json.dumps(
                {
                    "id": f"e{i}",
                    "type": "command.output",
                    "timestamp": "2026-11-23T00:00:00.000Z",
                    "level": "info",
                    "data": {"command": f"cmd{i}", "message": "x" * 100},
                }
            )
            + "\n"
        )
        lines.append(line)
        size += len(line)
        i += 1
    path.write_text("".join(lines))
    return i


async def test_big_file_shows_lines_and_answers_keys_while_indexing(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    count = _write_big(path, 40 << 20)
    index = GatedIndex(path)
    tail = EventTail(path, poll_interval=0.02, index=index, index_chunk=CHUNK)
    app = Recorder(tail)
    try:
        async with app.run_test(size=(100, 12)) as pilot:
            tail.focus()
            await wait_for(pilot, lambda: index.held.is_set())
            await wait_for(pilot, lambda: tail.total > 0)
            # The indexer is parked mid-file: only part of the file is indexed, yet lines are shown.
            assert tail.indexing and 0 < tail.total < count
            assert index.read_to < path.stat().st_size
            shown = tail.total
            tail.following = False
            await pilot.press("home")
            await pilot.pause()
            assert tail.scroll_offset.y == 0
            text = "".join(seg.text for seg in tail.render_line(0))
            assert "cmd0" in text  # the UI read a visible line from the partial index
            await pilot.press("end")  # a binding answers while indexing is held
            await pilot.pause()
            assert tail.following and tail.pending == 0
            index.release.set()
            await wait_for(pilot, lambda: tail.total == count, timeout=60)
            assert tail.total > shown and not tail.indexing
            assert not index.timed_out
    finally:
        index.release.set()

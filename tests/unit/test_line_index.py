"""LineIndex against a real file appended by another thread: torn writes, truncation, rotation."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from widgets.line_index import LineIndex


def test_torn_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"id": 1}\n{"id": ')
    index = LineIndex(path)
    assert index.update() == 1
    assert index.read_line(0) == '{"id": 1}'
    with open(path, "ab") as handle:
        handle.write(b"2}\n")
    assert index.update() == 1
    assert [index.read_line(i) for i in range(len(index))] == ['{"id": 1}', '{"id": 2}']


def test_concurrent_writer_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.touch()
    count = 2000

    polled = threading.Condition()
    polls = [0]  # the reader's completed update() calls

    def writer() -> None:
        with open(path, "ab", buffering=0) as handle:
            for i in range(count):
                line = json.dumps({"id": i, "type": "t", "level": "info", "data": {}}).encode() + b"\n"
                if i % 10 == 0:  # torn write: a whole update() runs while the line is half written
                    handle.write(line[:7])
                    with polled:
                        seen = polls[0]  # an update in flight may have read before the half line: wait for 2
                        assert polled.wait_for(lambda seen=seen: polls[0] >= seen + 2, timeout=30)
                    handle.write(line[7:])
                else:
                    handle.write(line)

    thread = threading.Thread(target=writer)
    index = LineIndex(path)
    thread.start()
    while thread.is_alive():
        index.update()
        with polled:
            polls[0] += 1
            polled.notify_all()
    thread.join()
    index.update()
    assert len(index) == count
    ids = [json.loads(index.read_line(i))["id"] for i in range(count)]
    assert ids == list(range(count))


def test_truncation_and_rotation_start_over(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("a\nb\nc\n")
    index = LineIndex(path)
    assert index.update() == 3
    path.write_text("x\n")  # truncated in place
    assert index.update() == 1 and index.resets == 1 and index.read_line(0) == "x"
    rotated = tmp_path / "new.jsonl"
    rotated.write_text("p\nq\n")
    os.replace(rotated, path)  # replaced by a new file (new inode)
    index.update()
    assert index.resets == 2 and [index.read_line(i) for i in range(len(index))] == ["p", "q"]


def test_missing_file_is_not_an_error(tmp_path: Path) -> None:
    index = LineIndex(tmp_path / "absent.jsonl")
    assert index.update() == 0 and len(index) == 0


def test_a_line_longer_than_a_chunk_is_indexed_not_stuck(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"big": "' + b"x" * 5000 + b'"}\n{"id": 2}\n')
    index = LineIndex(path)
    added = index.update(chunk_limit=1024)  # the first line alone is 5 chunks long
    assert added == 1 and index.read_line(0).startswith('{"big": "xxx')
    while index.update(chunk_limit=1024):
        pass
    assert len(index) == 2 and index.read_line(1) == '{"id": 2}'
    assert index.pending_bytes == 0

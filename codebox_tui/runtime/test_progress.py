"""Tests counted as they finish: PHPUnit's TeamCity log (``--log-teamcity php://stderr``) read while the suite
runs, for the ``tests.progress`` events the Live screen and the CLI progress lines show.

The lines come from the sandbox, so they are a display hint and nothing more: the verdict and every total in
the bundle come from the JUnit document at the end (runtime/phpunit.py). Only whole lines that start with
``##teamcity[`` and are at most :data:`MAX_LINE_CHARS` long are read; anything else is skipped, and the counts
only ever rise."""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_LINE_CHARS = 16 * 1024  # a longer "line" is not PHPUnit's: skipped whole, never buffered
MAX_COUNT = 10_000_000
MARKER = "##teamcity["
_COUNT = re.compile(r"##teamcity\[testCount count='(\d{1,8})'")
_FINISHED = re.compile(r"##teamcity\[testFinished ")
_FAILED = re.compile(r"##teamcity\[testFailed ")


class TestTally:
    """Counts tests from TeamCity log text fed in chunks of any size; ``on_change`` is called with the tally
    when the counts have moved enough to be worth an event (every test up to 100, then every 1 % of the
    announced total, and always the last one)."""

    __test__ = False  # not a pytest class

    def __init__(self, on_change: Callable[[TestTally], object] | None = None) -> None:
        self.total: int | None = None
        self.done = 0
        self.failed = 0
        self._on_change = on_change
        self._pending = ""
        self._skipping = False  # inside an over-long line: dropped up to its end
        self._reported: tuple[int | None, int] | None = None

    def feed(self, text: str) -> None:
        text = self._pending + text
        self._pending = ""
        lines = text.split("\n")
        self._pending = lines.pop()  # what follows the last newline: the start of the next line
        for line in lines:
            if self._skipping:
                self._skipping = False
                continue
            self._read(line)
        if len(self._pending) > MAX_LINE_CHARS:
            self._pending, self._skipping = "", True
        self._report()

    def finish(self) -> None:
        """The stream ended: a last line without a newline is read too."""
        if self._pending and not self._skipping:
            self._read(self._pending)
        self._pending, self._skipping = "", False
        self._report(final=True)

    def _read(self, line: str) -> None:
        line = line.strip()
        if not line.startswith(MARKER) or len(line) > MAX_LINE_CHARS:
            return
        count = _COUNT.match(line)
        if count is not None:
            if self.total is None:  # PHPUnit announces the whole run's count first; a second one is not its
                self.total = min(int(count.group(1)), MAX_COUNT)
        elif _FINISHED.match(line):
            self.done = min(self.done + 1, MAX_COUNT)
        elif _FAILED.match(line):
            self.failed = min(self.failed + 1, self.done + 1, MAX_COUNT)

    def _report(self, *, final: bool = False) -> None:
        if self._on_change is None:
            return
        now = (self.total, self.done)
        last = self._reported
        if now == last or (self.total is None and self.done == 0):
            return
        step = 1 if not self.total or self.total <= 100 else self.total // 100
        due = (
            last is None
            or last[0] != self.total
            or self.done - last[1] >= step
            or final
            or (self.total is not None and self.done >= self.total)
        )
        if due:
            self._reported = now
            self._on_change(self)

    def summary(self) -> dict[str, int]:
        """The counts as an event's data: ``done``, ``failed`` and (once announced) ``total``."""
        return {"done": self.done, "failed": self.failed, **({"total": self.total} if self.total is not None else {})}


def strip_log_lines(text: str) -> str:
    """``text`` (PHPUnit's stderr) without the TeamCity log lines and the blank line PHPUnit writes before each:
    what is left is what the suite itself wrote there."""
    if MARKER not in text:
        return text
    lines = text.split("\n")
    kept = [
        line
        for i, line in enumerate(lines)
        if not line.startswith(MARKER) and (line.strip() or i + 1 >= len(lines) or not lines[i + 1].startswith(MARKER))
    ]
    return "\n".join(kept)


def counted(data: object) -> str | None:
    """``7/12`` (``, 1 failed``) from a ``tests.progress`` event's data, or None when it does not hold counts;
    the values are the sandbox's, so only small non-negative integers are shown."""
    if not isinstance(data, dict):
        return None

    def number(key: str) -> int | None:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else None

    done, total, failed = number("done"), number("total"), number("failed")
    if done is None:
        return None
    text = f"{done}/{total}" if total is not None else f"{done}"
    return text + (f", {failed} failed" if failed else "")

"""Progress of long commands on stderr: phase, step and elapsed time (README "Usage").

One reporter shared by ``run``, ``recipe-run`` and ``evaluate-patch``. It is fed the run's runtime
events (a ``RunSession``'s ``on_event``) plus the command's own phases, and writes one line each::

    codebox evaluate-patch [   4.1s] boot: golden-copy (812 ms)
    codebox evaluate-patch [  31.7s] step 3: wordpress.phpunit plugin-slug=buggy-counter
    codebox evaluate-patch [  58.0s] step 3: wordpress.phpunit exited 1 in 26.3 s

stdout is never touched (``--json`` keeps it one document); ``--quiet`` silences the reporter.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from codebox_tui.runtime.test_progress import counted
from codebox_tui.textsafe import terminal_text

MAX_ARGS_CHARS = 80


class StderrProgress:
    """Writes progress lines to stderr (or ``stream``); does nothing when ``quiet``."""

    def __init__(
        self,
        label: str,
        *,
        quiet: bool = False,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        steps_total: int | None = None,
    ) -> None:
        self.label = label
        self.quiet = quiet
        self.stream = stream
        self.clock = clock
        self.started = clock()
        self.steps_total = steps_total
        self.step = 0
        self._last_boot_phase: str | None = None  # a repeated boot phase (one per mount) is said once
        self._tests_side: str | None = None  # evaluate-patch: the side whose tests run now
        self._tests_tenth: tuple[object, int] | None = None  # (suite, tenth) of the last count said
        self.lines: list[str] = []  # what was written (kept for tests and summaries)

    def elapsed(self) -> float:
        return self.clock() - self.started

    def line(self, text: str) -> None:
        if self.quiet:
            return
        # events carry sandbox-written text (step names, messages): escaped as cli/output.py's show does
        out = terminal_text(f"codebox {self.label} [{self.elapsed():7.1f}s] {text}")
        self.lines.append(out)
        stream = self.stream or sys.stderr
        stream.write(out + "\n")
        stream.flush()

    def phase(self, name: str, detail: str = "") -> None:
        self.line(f"{name}{': ' + detail if detail else ''}")

    def _step_label(self) -> str:
        # commands beyond the planned steps (a recipe's probes, Codebox's own set-up) are counted without a total,
        # so a line never reads "step 3/2"
        known = self.steps_total is not None and 0 < self.step <= self.steps_total
        return f"step {self.step}" + (f"/{self.steps_total}" if known else "")

    def on_event(self, event: Any) -> None:
        """A ``RuntimeEvent`` (or its dict) from the run: boot phases, commands, capture, dispose."""
        kind = getattr(event, "type", None) or (event.get("type") if isinstance(event, dict) else None)
        raw = getattr(event, "data", None) if not isinstance(event, dict) else event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind == "runtime.boot-started":
            self.phase("boot", f"WordPress {data.get('wp')}, PHP {data.get('php')}")
        elif kind == "runtime.boot-progress":
            text = f"{data.get('phase')}" + (f" ({data['ms']} ms)" if "ms" in data else "")
            if text != self._last_boot_phase:
                self._last_boot_phase = text
                self.phase("boot", text)
        elif kind == "runtime.ready":
            self.phase(
                "ready",
                f"WordPress {data.get('wordpressVersion')}, PHP {data.get('phpVersion')} "
                f"(boot {data.get('bootMs')} ms)",
            )
        elif kind == "command.started":
            self.step += 1
            # one line per step: a multi-line argument (PHP code) shows its line breaks as \n
            args = " ".join(str(a) for a in data.get("args") or []).replace("\r\n", "\\n").replace("\n", "\\n")
            if len(args) > MAX_ARGS_CHARS:
                args = args[: MAX_ARGS_CHARS - 1] + "…"
            self.line(f"{self._step_label()}: {data.get('command')} {args}".rstrip())
        elif kind in ("command.finished", "command.failed"):
            ms = data.get("durationMs")
            took = f" in {ms / 1000:.1f} s" if isinstance(ms, int | float) else ""
            self.line(f"{self._step_label()}: {data.get('command')} exited {data.get('exitCode')}{took}")
        elif kind == "command.denied":
            self.phase("denied", str(data.get("message")))
        elif kind == "patch.applied":
            self.phase("patch applied", f"{data.get('patch')} (git apply exit {data.get('exitCode')})")
        elif kind == "evaluate.tests-started":
            self._tests_side = str(data.get("side"))
            self.phase("tests", f"{data.get('side')} the patch")
        elif kind == "evaluate.tests-finished":
            self._tests_side = None
            self.phase("tests", f"{data.get('side')}: {side_totals(data)}")
        elif kind == "tests.progress":
            self._tests_counted(data)
        elif kind == "artifacts.capturing":
            self.phase("capture", "writing the artifact bundle")
        elif kind == "runtime.disposing":
            self.phase("disposing", "stopping the sandbox")
        elif kind == "runtime.disposed":
            self.phase("disposed", "sandbox stopped")
        elif kind == "runtime.error":
            self.phase("error", str(data.get("message") or data.get("code")))
        elif kind in ("episode.reset", "episode.observation", "episode.snapshot", "episode.restore"):
            self.phase("episode", str(data.get("message")))  # docs/episodes.md
        elif kind == "runtime.snapshot-restored":
            self.phase("restored", f"snapshot {data.get('snapshotId')} ({data.get('ms')} ms)")

    def _tests_counted(self, data: dict[str, Any]) -> None:
        """``tests: before 7/12`` as tests finish, at most once per tenth of the suite (its last test always)."""
        counts = counted(data)
        if counts is None:
            return
        done, total = data.get("done"), data.get("total")
        tenth = done * 10 // total if isinstance(done, int) and isinstance(total, int) and total > 0 else done
        mark = (data.get("suite"), tenth if isinstance(tenth, int) else -1)
        if mark == self._tests_tenth:
            return
        self._tests_tenth = mark
        self.phase("tests", f"{self._tests_side + ' ' if self._tests_side else ''}{counts}")

    def attach(self, session: Any) -> None:
        """Follow a ``RunSession`` that already exists (e.g. from a recipe's ``on_session``)."""
        previous = getattr(session, "on_event", None)

        def both(event: Any) -> None:
            if previous is not None:
                previous(event)
            self.on_event(event)

        session.on_event = both


def side_totals(data: dict[str, Any]) -> str:
    """One side's test totals from an ``evaluate.tests-finished`` event: ``3/4 passed, 1 failed``."""
    total = data.get("tests")
    if not isinstance(total, int) or total <= 0:
        return "no tests ran"
    failed, skipped = data.get("failed") or 0, data.get("skipped") or 0
    return (
        f"{data.get('passed', 0)}/{total} passed"
        + (f", {failed} failed" if failed else "")
        + (f", {skipped} skipped" if skipped else "")
    )

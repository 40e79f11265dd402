"""RunProgress: the live run's progress line, derived from its events (pure; no Textual).

Feed it events (dicts as in events.jsonl) in order; ``line()`` says what the run is doing now
(boot phase, current command, capture), how long the current step and the whole run have taken,
and ``slow`` tells the screen to show a spinner (a step running for more than a second)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from codebox_tui.progress_report import side_totals
from codebox_tui.runtime.test_progress import counted

SLOW_AFTER_S = 1.0
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"  # braille: DejaVu Sans Mono has these


def parse_time(stamp: object) -> datetime | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 60 else f"{int(value // 60)} min {int(value % 60):02} s"


class RunProgress:
    def __init__(self) -> None:
        self.step = "starting…"
        self.started: datetime | None = None  # first event
        self.step_started: datetime | None = None
        self.last: datetime | None = None  # latest event
        self.preview_url: str | None = None
        self.commands_done = 0
        self.failed = 0
        self.finished = False  # the runtime was disposed (capture may follow)
        self.events = 0
        self.hold_until: datetime | None = None  # a held preview stays up until then (or until closed)
        self.test_sides: dict[str, str] = {}  # evaluate-patch: "before"/"after" → "running", "7/12…" or its totals
        self._running_side: str | None = None  # the side whose tests run now (counted as they finish)

    def feed(self, event: dict[str, Any]) -> None:
        self.events += 1
        kind = str(event.get("type", ""))
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        assert isinstance(data, dict)
        when = parse_time(event.get("timestamp"))
        if when is not None:
            self.started = self.started or when
            self.last = when
        step: str | None = None
        if kind == "runtime.created":
            step = "creating the sandbox"
        elif kind == "runtime.boot-started":
            step = f"booting WordPress {data.get('wp', '')}".rstrip()
        elif kind == "runtime.boot-progress":
            phase = str(data.get("phase", "")).replace("-", " ")
            step = "booting: ready" if phase == "ready" else f"booting: {phase}"
        elif kind == "runtime.ready":
            self.preview_url = str(data.get("previewUrl") or "") or None
            step = "ready"
        elif kind == "command.started":
            step = f"running {data.get('command', '?')}"
        elif kind in ("command.finished", "command.failed", "command.denied"):
            self.commands_done += 1
            code = data.get("exitCode")
            if kind != "command.finished" or (code not in (0, None)):
                self.failed += 1
            verb = {"command.failed": "failed", "command.denied": "was denied"}.get(kind, f"exited {code}")
            step = f"{data.get('command', '?')} {verb}"
        elif kind == "runtime.held":
            self.preview_url = str(data.get("previewUrl") or "") or self.preview_url
            hold = data.get("holdSeconds")
            if when is not None and isinstance(hold, int | float):
                self.hold_until = when + timedelta(seconds=float(hold))
            step = "preview held open"
        elif kind == "runtime.hold-ended":
            self.hold_until = None
            step = f"hold ended ({data.get('reason', 'closed')})"
        elif kind == "runtime.disposing":  # still live: the clock and the spinner go on until it is gone
            step = "disposing the sandbox…"
        elif kind == "runtime.disposed":
            self.finished = True
            step = "sandbox disposed"
        elif kind == "artifacts.capturing":
            self.finished = True
            step = "capturing the bundle…"
        elif kind == "runtime.error":
            step = f"error: {data.get('message', '')}"[:120]
        elif kind == "evaluate.tests-started":
            side = str(data.get("side", "?"))
            self.test_sides[side] = "running"
            self._running_side = side
            step = f"tests {side} the patch"
        elif kind == "evaluate.tests-finished":
            self.test_sides[str(data.get("side", "?"))] = side_totals(data)
            self._running_side = None
        elif kind == "tests.progress" and (counts := counted(data)) is not None:
            if self._running_side is not None:  # evaluate-patch: on its side ("tests before: 7/12…")
                self.test_sides[self._running_side] = f"{counts}…"
            else:
                step = f"running {data.get('suite', 'tests')}: {counts} tests done"
        elif kind == "patch.applied":
            code = data.get("exitCode")
            step = "patch applied" if code == 0 else f"the patch failed to apply (exit {code})"
        if step is not None:
            self.step = step
            self.step_started = when or self.step_started

    def step_elapsed(self, now: datetime | None = None) -> float:
        end = now or self.last
        return (end - self.step_started).total_seconds() if end and self.step_started else 0.0

    def total_elapsed(self, now: datetime | None = None) -> float:
        end = now or self.last
        return (end - self.started).total_seconds() if end and self.started else 0.0

    def slow(self, now: datetime | None = None) -> bool:
        """The current step has taken longer than a second (and the run is not over)."""
        return not self.finished and self.hold_until is None and self.step_elapsed(now) > SLOW_AFTER_S

    def line(self, now: datetime | None = None, tick: int = 0) -> str:
        """The progress line; ``now`` is the wall clock for a live run (None: the last event's time),
        ``tick`` advances the spinner shown while a step is slow."""
        mark = SPINNER[tick % len(SPINNER)] + " " if self.slow(now) else ""
        parts = [f"{mark}{self.step}"]
        if self.step_started is not None and self.step_elapsed(now) >= 0.1:
            parts.append(f"step {seconds(self.step_elapsed(now))}")
        if self.started is not None:
            parts.append(f"elapsed {seconds(self.total_elapsed(now))}")
        for side, state in self.test_sides.items():
            parts.append(f"tests {side}: {state}")
        if self.commands_done:
            parts.append(
                f"{self.commands_done} command{'s' if self.commands_done != 1 else ''} done"
                + (f", {self.failed} failed" if self.failed else "")
            )
        if self.preview_url and not self.finished:
            parts.append(f"preview {self.preview_url}")
        if self.hold_until is not None and not self.finished:
            left = max(0.0, (self.hold_until - (now or self.last or self.hold_until)).total_seconds())
            parts.append(f"held {seconds(left)} more (c: close now)")
        return " · ".join(parts)

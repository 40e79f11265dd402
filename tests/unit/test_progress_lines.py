"""The progress lines a run prints (codebox_tui/progress_report.py), fed the events a real run emits: a step
count never exceeds its total, a boot phase repeated per mount is said once, multi-line code stays on one line."""

from __future__ import annotations

import io

from codebox_tui.progress_report import StderrProgress


def _lines(events: list[dict[str, object]], steps_total: int | None = None) -> list[str]:
    out = io.StringIO()
    reporter = StderrProgress("recipe-run", stream=out, clock=lambda: 0.0, steps_total=steps_total)
    for event in events:
        reporter.on_event(event)
    return [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]


def _started(command: str, *args: str) -> dict[str, object]:
    return {"type": "command.started", "data": {"command": command, "args": list(args)}}


def test_steps_beyond_the_planned_total_are_counted_without_it() -> None:
    lines = _lines(
        [_started("wordpress.run-php"), _started("wordpress.phpunit"), _started("wordpress.run-php")], steps_total=2
    )
    assert lines == ["step 1/2: wordpress.run-php", "step 2/2: wordpress.phpunit", "step 3: wordpress.run-php"]


def test_a_boot_phase_repeated_for_each_mount_is_said_once() -> None:
    phase = {"type": "runtime.boot-progress", "data": {"phase": "mounting"}}
    timed = {"type": "runtime.boot-progress", "data": {"phase": "golden-copy", "ms": 812}}
    assert _lines([phase, phase, phase, phase, timed]) == ["boot: mounting", "boot: golden-copy (812 ms)"]


def test_multi_line_code_stays_on_its_step_line() -> None:
    lines = _lines([_started("wordpress.run-php", "code=$a = 1;\necho $a;")])
    assert lines == ["step 1: wordpress.run-php code=$a = 1;\\necho $a;"]


def test_tests_are_counted_on_their_side_as_they_finish() -> None:
    def counted(done: int, total: int = 20, failed: int = 0) -> dict[str, object]:
        return {
            "type": "tests.progress",
            "data": {"suite": "wordpress.phpunit", "done": done, "total": total, "failed": failed},
        }

    lines = _lines(
        [
            {"type": "evaluate.tests-started", "data": {"side": "before"}},
            counted(0),
            counted(1),
            counted(2),
            counted(3),
            counted(7, failed=1),
            counted(20, failed=1),
            {"type": "evaluate.tests-finished", "data": {"side": "before", "tests": 20, "passed": 19, "failed": 1}},
            {"type": "tests.progress", "data": {"suite": "wordpress.phpunit", "done": "7"}},
        ]
    )
    # at most one line per tenth of the suite: 1/20 and 3/20 fall in the tenth already said
    assert lines == [
        "tests: before the patch",
        "tests: before 0/20",
        "tests: before 2/20",
        "tests: before 7/20, 1 failed",
        "tests: before 20/20, 1 failed",
        "tests: before: 19/20 passed, 1 failed",
    ]

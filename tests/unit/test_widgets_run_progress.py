"""RunProgress: the live run's progress line comes from the events (phase, command, elapsed, spinner)."""

from __future__ import annotations

from datetime import UTC, datetime

from widgets.run_progress import SPINNER, RunProgress


def ev(kind: str, second: float, **data: object) -> dict[str, object]:
    whole, frac = int(second), round((second % 1) * 1000)
    return {"type": kind, "level": "info", "timestamp": f"2026-11-22T12:00:{whole:02}.{frac:03}Z", "data": data}


def test_phases_then_command_then_capture() -> None:
    progress = RunProgress()
    assert progress.line() == "starting…"
    progress.feed(ev("runtime.boot-started", 0, wp="6.5"))
    progress.feed(ev("runtime.boot-progress", 0.5, phase="copying-site"))
    assert progress.line().startswith("booting: copying site")
    progress.feed(ev("runtime.ready", 3.0, previewUrl="http://127.0.0.1:4000"))
    progress.feed(ev("command.started", 3.0, command="wordpress.phpunit"))
    line = progress.line()
    assert "running wordpress.phpunit" in line and "elapsed 3.0 s" in line and "preview http://127.0.0.1:4000" in line
    progress.feed(ev("command.finished", 5.5, command="wordpress.phpunit", exitCode=1))
    assert "wordpress.phpunit exited 1" in progress.line()
    assert "1 command done, 1 failed" in progress.line()
    progress.feed(ev("runtime.disposed", 6.0))
    progress.feed(ev("artifacts.capturing", 6.0))
    assert progress.line().startswith("capturing the bundle…") and "preview" not in progress.line()


def test_disposal_is_a_live_step_with_its_own_clock() -> None:
    """While the sandbox is disposed the line says so, and its clock and spinner go on (it does not sit on
    the last command's line)."""
    progress = RunProgress()
    progress.feed(ev("command.started", 1.0, command="wordpress.run-php"))
    progress.feed(ev("command.finished", 2.0, command="wordpress.run-php", exitCode=0))
    progress.feed(ev("runtime.disposing", 2.0))
    at = datetime(2026, 11, 22, 12, 0, 4, tzinfo=UTC)
    assert not progress.finished and progress.slow(at)
    first, second = progress.line(at, 0), progress.line(at, 1)
    assert first[2:].startswith("disposing the sandbox…") and first[0] != second[0]
    assert "step 2.0 s" in first and "elapsed 3.0 s" in first
    later = datetime(2026, 11, 22, 12, 0, 5, tzinfo=UTC)
    assert "step 3.0 s" in progress.line(later)
    progress.feed(ev("runtime.disposed", 5.0))
    assert progress.finished and progress.line().startswith("sandbox disposed")


def test_spinner_only_for_steps_slower_than_a_second() -> None:
    progress = RunProgress()
    progress.feed(ev("command.started", 1.0, command="wordpress.run-php"))
    at = datetime(2026, 11, 22, 12, 0, 1, 500_000, tzinfo=UTC)
    assert not progress.slow(at)
    assert progress.line(at)[0] not in SPINNER
    later = datetime(2026, 11, 22, 12, 0, 3, tzinfo=UTC)
    assert progress.slow(later)
    first, second = progress.line(later, 0), progress.line(later, 1)
    assert first[0] in SPINNER and second[0] in SPINNER and first[0] != second[0]
    assert "step 2.0 s" in first


def test_unparsable_timestamps_and_unknown_events_are_harmless() -> None:
    progress = RunProgress()
    progress.feed({"type": "something.else", "timestamp": "not a time", "data": "oops"})
    progress.feed({"type": "command.denied", "data": {"command": "shell"}})
    assert progress.line() == "shell was denied · 1 command done, 1 failed"


def test_evaluate_patch_sides_are_shown_running_then_counted() -> None:
    progress = RunProgress()
    progress.feed(ev("evaluate.tests-started", 1.0, side="before"))
    assert progress.line().startswith("tests before the patch") and "tests before: running" in progress.line()
    progress.feed(ev("evaluate.tests-finished", 4.0, side="before", tests=2, passed=1, failed=1, skipped=0))
    progress.feed(ev("patch.applied", 4.1, patch="fix.patch", exitCode=0))
    assert progress.line().startswith("patch applied")
    progress.feed(ev("evaluate.tests-started", 4.2, side="after"))
    progress.feed(ev("evaluate.tests-finished", 6.0, side="after", tests=0))
    line = progress.line()
    assert "tests before: 1/2 passed, 1 failed" in line and "tests after: no tests ran" in line
    progress.feed(ev("patch.applied", 7.0, patch="fix.patch", exitCode=1))
    assert progress.line().startswith("the patch failed to apply (exit 1)")


def test_tests_counted_as_they_finish_on_their_side_then_the_totals() -> None:
    progress = RunProgress()
    progress.feed(ev("evaluate.tests-started", 1.0, side="before"))
    progress.feed(ev("tests.progress", 2.0, suite="wordpress.phpunit", done=7, total=12, failed=1))
    assert "tests before: 7/12, 1 failed…" in progress.line()
    progress.feed(ev("evaluate.tests-finished", 3.0, side="before", tests=12, passed=11, failed=1))
    progress.feed(ev("tests.progress", 3.5, suite="wordpress.phpunit:2", done="[red]x"))  # not counts: ignored
    assert "tests before: 11/12 passed, 1 failed" in progress.line() and "[red]" not in progress.line()
    # a suite outside evaluate-patch (a wordpress.phpunit command) is counted on the step
    progress.feed(ev("command.started", 4.0, command="wordpress.phpunit"))
    progress.feed(ev("tests.progress", 4.5, suite="wordpress.phpunit:2", done=3, total=5))
    assert progress.line().startswith("running wordpress.phpunit:2: 3/5 tests done")

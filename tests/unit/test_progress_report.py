"""The shared stderr progress reporter: phases, numbered steps, elapsed time; silent with --quiet."""

from __future__ import annotations

import io

from codebox_tui.contracts.runtime import RuntimeEvent
from codebox_tui.progress_report import StderrProgress


def _event(kind: str, **data: object) -> RuntimeEvent:
    return RuntimeEvent.model_validate(
        {"id": "event-1", "type": kind, "timestamp": "2026-11-24T00:00:00.000Z", "data": data}
    )


def test_lines_carry_phase_step_and_elapsed_time() -> None:
    now = [100.0]
    out = io.StringIO()
    reporter = StderrProgress("evaluate-patch", stream=out, clock=lambda: now[0], steps_total=2)
    reporter.phase("start", "plugin + fix.patch")
    now[0] = 103.25
    reporter.on_event(_event("runtime.boot-progress", phase="golden-copy", ms=812))
    reporter.on_event(_event("command.started", command="wordpress.phpunit", args=["plugin-slug=x", "y" * 200]))
    now[0] = 130.0
    reporter.on_event(_event("command.finished", command="wordpress.phpunit", exitCode=1, durationMs=26300))
    reporter.on_event({"type": "patch.applied", "data": {"patch": "fix.patch", "exitCode": 0}})
    reporter.on_event(_event("artifacts.capturing"))
    reporter.on_event(_event("some.unknown"))
    assert out.getvalue().splitlines() == [
        "codebox evaluate-patch [    0.0s] start: plugin + fix.patch",
        "codebox evaluate-patch [    3.2s] boot: golden-copy (812 ms)",
        "codebox evaluate-patch [    3.2s] step 1/2: wordpress.phpunit plugin-slug=x " + "y" * 65 + "…",
        "codebox evaluate-patch [   30.0s] step 1/2: wordpress.phpunit exited 1 in 26.3 s",
        "codebox evaluate-patch [   30.0s] patch applied: fix.patch (git apply exit 0)",
        "codebox evaluate-patch [   30.0s] capture: writing the artifact bundle",
    ]


def test_quiet_writes_nothing_and_attach_keeps_the_previous_callback() -> None:
    out = io.StringIO()
    seen: list[str] = []

    class Session:
        on_event = staticmethod(lambda event: seen.append(event.type))

    session = Session()
    reporter = StderrProgress("recipe-run", quiet=True, stream=out)
    reporter.attach(session)
    session.on_event(_event("runtime.ready", bootMs=1))
    reporter.phase("done")
    assert out.getvalue() == "" and seen == ["runtime.ready"]

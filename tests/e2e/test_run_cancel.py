"""A cancel takes effect whatever phase the run is in (docs/architecture.md, "Cancelling a run"): before it
boots, while it boots, once it is ready, when its command is announced, while the command's process is being
started, and while it runs. Each run is a real one on the native backend (real PHP in real bubblewrap); the cancel
is injected at the phase itself — on the run's own thread from its progress events, or from inside the start of
the command's process — never by sleeping. The command is ``sleep(300)`` with a far shorter timeout, so a lost
cancel shows as the command's timeout instead of ``sandbox-aborted``."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.lifecycle import CommandStep, RunControl, RunRequest, RunService
from codebox_tui.settings import get_settings
from store.db import Store
from tests.factories.waiting import wait_until

pytestmark = [pytest.mark.native]

# The command's own timeout: a lost cancel ends the command only there (with sandbox-timeout, not sandbox-aborted),
# so only a lost cancel ever waits for it.
COMMAND_TIMEOUT_S = 45.0
SLEEPER = CommandStep("wordpress.run-php", ["code=sleep(300); echo 'not cancelled';"], COMMAND_TIMEOUT_S)
# the phases whose cancel comes with the run's own event (on its thread, before the run goes on)
PHASE_EVENTS = {"runtime.boot-started": "boot-started", "runtime.ready": "ready", "command.started": "command-started"}
PHASES = ("before-boot", "boot-started", "ready", "command-started", "process-starting", "command-running")


@dataclass
class Injector:
    """Cancels ``control`` at the phase ``at`` and counts the sandbox processes started after the cancel."""

    at: str
    control: RunControl = field(default_factory=RunControl)
    sandbox: Any = None  # the run's sandbox, once booted
    announced: bool = False  # the command was announced (command.started)
    started_after_cancel: list[list[str]] = field(default_factory=list)
    waiter: threading.Thread | None = None

    def cancel(self) -> None:
        self.control.cancel(f"was cancelled by the test ({self.at})")

    # the run's progress listener (lifecycle.ProgressListener), called on the run's own thread
    def phase(self, name: str, detail: str = "") -> None:
        pass

    def on_event(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if PHASE_EVENTS.get(kind) == self.at:
            self.cancel()
        if kind == "command.started":
            self.announced = True
            if self.at == "command-running":
                self.waiter = threading.Thread(target=self._cancel_once_running, daemon=True)
                self.waiter.start()

    def _cancel_once_running(self) -> None:
        # the command's confined process is started and registered with its sandbox
        assert wait_until(lambda: self.sandbox is not None and bool(self.sandbox._running), timeout=120)
        self.cancel()

    def popen(self, real: Callable[..., subprocess.Popen[bytes]]) -> Callable[..., subprocess.Popen[bytes]]:
        """``subprocess.Popen`` as the sandbox calls it: the real one; in the phase ``process-starting`` the
        cancel comes right after the command's process has started, before the sandbox has registered it."""

        def start(argv: Any, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
            confined = self.sandbox is not None and isinstance(argv, list) and self.sandbox.bwrap in argv
            if confined and self.control.cancelled:
                self.started_after_cancel.append(list(argv))
            process = real(argv, *args, **kwargs)
            if confined and self.at == "process-starting" and self.announced and not self.control.cancelled:
                self.cancel()
            return process

        return start


@pytest.fixture
def injector(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Injector]:
    made = Injector(request.param)
    monkeypatch.setattr(subprocess, "Popen", made.popen(subprocess.Popen))
    yield made
    if made.waiter is not None:
        made.waiter.join(timeout=120)


def _request(tmp_path: Path) -> RunRequest:
    return RunRequest(commands=[SLEEPER], backend="native", artifacts_root=tmp_path / "artifacts", flow="test")


def _assert_cancelled(outcome: Any, injector: Injector) -> None:
    assert outcome.status == "cancelled", outcome.failure_text()
    with Store.open(get_settings().db_path) as store:
        assert store.get_run(outcome.runtime_id).status == "cancelled"
    # the command never ran to its end (a lost cancel would have it killed only at its timeout)
    for execution in outcome.executions:
        assert execution.exitCode != 0 and "not cancelled" not in execution.stdout
        assert execution.result.error is not None and execution.result.error.code == "sandbox-aborted", execution
    # nothing of the sandbox started once the cancel was in
    assert injector.started_after_cancel == []


@pytest.mark.parametrize("injector", PHASES, indirect=True)
def test_a_cancel_stops_the_run_whatever_phase_it_is_in(injector: Injector, tmp_path: Path) -> None:
    service = RunService()
    if injector.at == "before-boot":
        injector.cancel()

    def opened(run: Any) -> None:
        run.session.after_boot.insert(0, lambda _seconds: setattr(injector, "sandbox", run.session.sandbox))

    outcome = service.run(_request(tmp_path), progress=injector, control=injector.control, on_open=opened)
    _assert_cancelled(outcome, injector)
    if injector.at in ("before-boot", "boot-started", "ready"):
        assert outcome.executions == []  # the command was never started


@pytest.mark.parametrize("injector", ["boot-started", "process-starting"], indirect=True)
def test_a_cancel_stops_a_run_driven_step_by_step(injector: Injector, tmp_path: Path) -> None:
    """The flows that drive an open run themselves (recipes, evaluate-patch, agent tasks) check nothing between
    the boot and their command: the session itself must refuse to run it."""
    from codebox_tui.errors import CodeboxError

    with RunService().open(_request(tmp_path), progress=injector, control=injector.control) as run:
        run.session.after_boot.insert(0, lambda _seconds: setattr(injector, "sandbox", run.session.sandbox))
        with pytest.raises(CodeboxError) as raised:
            run.execute(SLEEPER)
        assert raised.value.code == "sandbox-aborted"
        run.capture()
    assert run.outcome is not None
    _assert_cancelled(run.outcome, injector)


def test_a_page_request_whose_worker_would_start_after_the_abort_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page-request worker starts at the first page request: an abort that lands after the request passed the
    sandbox's own check, just before the worker starts, keeps it from starting (a lost abort would serve the page)."""
    from codebox_tui.errors import SandboxError
    from tests.factories.native import native_sandbox

    with native_sandbox() as sandbox:
        serve = sandbox.worker.serve

        def abort_then_serve(*args: Any, **kwargs: Any) -> Any:
            sandbox.abort("was cancelled by the test")
            return serve(*args, **kwargs)

        monkeypatch.setattr(sandbox.worker, "serve", abort_then_serve)
        with pytest.raises(SandboxError) as raised:
            sandbox.request("/", 60)
        assert raised.value.code == "sandbox-aborted", raised.value
        assert sandbox.worker.pid is None and sandbox.worker.starts == 0

"""The runtime policy has one gate, ``RunSession.admit`` (docs/contracts.md, "Runtime policy"): every entry
point's commands pass it before anything boots — ``codebox run`` and the TUI's Live run
(``RunService.run``), recipes and evaluate-patch (``OpenRun.execute``) and a bare ``RunSession``. A denied
command is checked once, recorded once (one ``command.denied`` event, one failed execution) and boots
nothing. No sandbox boots in these tests: the refusal comes first."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.errors import PolicyDeniedError
from codebox_tui.lifecycle import CommandStep, RunRequest, RunService
from codebox_tui.lifecycle import service as service_module
from codebox_tui.runtime import policy as policy_module
from codebox_tui.runtime import session as session_module

ALLOWED = "wordpress.run-php"
DENIED = "inspect-mounted-inputs"


@pytest.fixture()
def gate_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every command the real policy check is asked about, from any lifecycle or runtime module that
    imports it (the real check still decides)."""
    calls: list[str] = []
    real = policy_module.check_command

    def counted(policy: RuntimePolicy, command: str) -> None:
        calls.append(command)
        real(policy, command)

    for module in (policy_module, session_module, service_module):
        if hasattr(module, "check_command"):
            monkeypatch.setattr(module, "check_command", counted)
    yield calls


def _events(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def _assert_refused_before_boot(run_dir: Path) -> None:
    kinds = [e["type"] for e in _events(run_dir)]
    assert kinds.count("command.denied") == 1, kinds  # recorded once
    assert "runtime.boot-started" not in kinds and "runtime.ready" not in kinds, kinds
    recorded = [json.loads(line) for line in (run_dir / "commands.jsonl").read_text().splitlines()]
    assert [(r["command"], r["exitCode"], r["result"]["error"]["code"]) for r in recorded] == [
        (DENIED, 1, "runtime-command-disallowed")
    ]


def test_run_and_live_run_refuse_a_denied_later_command_before_anything_boots(
    tmp_path: Path, gate_calls: list[str]
) -> None:
    """``codebox run`` and the Live run screen both call ``RunService.run``: the whole list is admitted up
    front, so an allowed first command does not boot a sandbox the denied second one could not use."""
    request = RunRequest(
        commands=[CommandStep(ALLOWED, ["code=echo 1;"]), CommandStep(DENIED, [])],
        policy=RuntimePolicy(commands=[ALLOWED]),
        artifacts_root=tmp_path,
        flow="run",
    )
    outcome = RunService().run(request)
    assert outcome.status == "failed"
    assert outcome.error is not None and outcome.error.code == "runtime-command-disallowed"
    assert gate_calls == [ALLOWED, DENIED]  # each checked once; the first command never ran
    _assert_refused_before_boot(outcome.run_dir)


def test_open_run_execute_checks_once_and_boots_nothing(tmp_path: Path, gate_calls: list[str]) -> None:
    """Recipes and evaluate-patch run their steps through ``OpenRun.execute``."""
    request = RunRequest(policy=RuntimePolicy(commands=[ALLOWED]), artifacts_root=tmp_path, flow="recipe-run")
    with RunService().open(request) as run:
        with pytest.raises(PolicyDeniedError) as caught:
            run.execute(CommandStep(DENIED, []))
        assert caught.value.code == "runtime-command-disallowed"
        assert not run.session.booted
        run_dir = run.session.run_dir
    assert gate_calls == [DENIED]  # one check, not one in the lifecycle and another in the session
    _assert_refused_before_boot(run_dir)

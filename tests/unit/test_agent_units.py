"""The pure parts of agent tasks (docs/agent-tasks.md): the tool dispatcher's checks and results, the tool
bridge's exposure rule, the outcome mapping, and the JSON-lines protocol runner against real child processes
(a small Python agent; the tools here are plain functions, no sandbox)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codebox_tui.agents.host_agent import agent_environment, run_host_agent
from codebox_tui.agents.outcome import TaskFacts, agent_result, completion_outcome
from codebox_tui.agents.registry import HostTool, HostToolRegistry, ToolDispatcher, ToolFailure
from codebox_tui.agents.workspace import parent_only_tools, workspace_tools
from codebox_tui.bundle.redact import Redactor
from codebox_tui.contracts.agent import AgentFailure, SandboxToolEntry, ToolRuntime
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.contracts.schemas import generate_json_schema
from codebox_tui.errors import BadInputError

SECRET = "unit-secret-value-0042"
NUMBER = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}


def _echo(data: dict[str, Any], ctx: Any) -> Any:
    if data["n"] == 13:
        raise ToolFailure("unlucky")
    if data["n"] == 14:
        raise RuntimeError("handler bug")
    if data["n"] == 15:
        return {"n": "fifteen"}
    if data["n"] == 16:
        return {"n": 16, "echo": SECRET}
    return {"n": data["n"] * 2}


def _dispatcher(allowed: list[str] | None = None, commands: list[str] | None = None) -> ToolDispatcher:
    loose = {"type": "object"}
    registry = HostToolRegistry(
        [
            HostTool("t.echo", "doubles n", NUMBER, loose, "read", _echo),
            HostTool("t.other", "unused", loose, loose, "write", _echo),
            *parent_only_tools(),
        ]
    )
    bridge = registry.bridge(registry.tool_policy(allowed if allowed is not None else ["t.echo"]))
    policy = RuntimePolicy(commands=commands or ["wordpress.run-php", "t.echo", "t.other"])
    return ToolDispatcher(registry, bridge, policy, None, Redactor([SECRET]))


def test_a_call_returns_a_host_tool_result_valid_against_its_generated_schema() -> None:
    dispatcher = _dispatcher()
    result = dispatcher.call("t.echo", {"n": 2}, "c1")
    assert result.status == "ok" and result.output == {"n": 4} and result.toolResult.success
    assert result.diagnostics.policyCommand == "t.echo" and result.diagnostics.inputSchema == NUMBER
    jsonschema.validate(
        result.model_dump(mode="json", by_alias=True, exclude_none=True),
        generate_json_schema("wp-codebox/host-tool-result/v1"),
    )
    assert dispatcher.calls[0].id == "c1" and dispatcher.calls[0].status == "ok"


@pytest.mark.parametrize(
    ("tool", "data", "code", "words"),
    [
        ("t.nope", {}, "host-tool-unknown", "unknown tool"),
        ("t.other", {}, "host-tool-denied", "not allowed by runtime policy"),
        ("git.push", {}, "host-tool-denied", "not allowed"),
        ("t.echo", {"n": "x"}, "host-tool-invalid-input", "at n:"),
        ("t.echo", {"n": 1, "m": 2}, "host-tool-invalid-input", "Additional properties"),
        ("t.echo", {"n": 13}, "host-tool-handler-error", "unlucky"),
        ("t.echo", {"n": 14}, "host-tool-handler-error", "RuntimeError: handler bug"),
    ],
)
def test_violations_are_typed_errors_recorded_in_the_transcript(tool: str, data: Any, code: str, words: str) -> None:
    dispatcher = _dispatcher()
    result = dispatcher.call(tool, data)
    assert result.status == "error" and result.error is not None and result.error.code == code
    assert words in result.error.message and result.toolResult.success is False
    assert dispatcher.calls[-1].error is not None and dispatcher.calls[-1].error.code == code


def test_output_is_checked_against_the_tools_output_schema() -> None:
    registry = HostToolRegistry([HostTool("t.echo", "doubles n", NUMBER, NUMBER, "read", _echo)])
    dispatcher = ToolDispatcher(
        registry,
        registry.bridge(registry.tool_policy(["t.echo"])),
        RuntimePolicy(commands=["t.echo"]),
        None,
        Redactor([]),
    )
    bad = dispatcher.call("t.echo", {"n": 15})
    assert bad.error is not None and bad.error.code == "host-tool-invalid-output"
    assert dispatcher.call("t.echo", {"n": 3}).output == {"n": 6}


def test_a_tool_exposed_by_the_bridge_but_missing_from_the_runtime_policy_is_denied() -> None:
    result = _dispatcher(commands=["wordpress.run-php"]).call("t.echo", {"n": 1})
    assert result.error is not None and result.error.code == "host-tool-denied"


def test_secret_values_are_redacted_from_outputs_inputs_and_records() -> None:
    dispatcher = _dispatcher()
    result = dispatcher.call("t.echo", {"n": 16})
    dispatcher.call("t.echo", {"n": SECRET})
    dumped = json.dumps([result.model_dump(mode="json"), [c.model_dump(mode="json") for c in dispatcher.calls]])
    assert SECRET not in dumped and "REDACTED" in dumped


def test_the_bridge_exposes_only_allowed_sandbox_visible_runtime_local_tools_and_keeps_the_rest() -> None:
    registry = HostToolRegistry(workspace_tools() + parent_only_tools())
    bridge = registry.bridge(registry.tool_policy(["workspace.read", "workspace.patch"]))
    assert bridge.allowed_tools == ["workspace.read", "workspace.patch"]
    assert [t.name for t in bridge.host_policy.tools] == bridge.allowed_tools  # type: ignore[union-attr]
    reasons = {e["id"]: e["reason"] for e in bridge.metadata["notExposed"]}  # type: ignore[index]
    assert reasons["workspace.write"] == "denied" and reasons["artifacts.apply"] == "denied"
    assert len(bridge.sandbox_tool_policy.tools) == 11  # seven workspace tools, four parent-only
    jsonschema.validate(
        bridge.model_dump(mode="json", by_alias=True, exclude_none=True),
        generate_json_schema("wp-codebox/tool-bridge/v1"),
    )
    with pytest.raises(BadInputError, match="unknown tool"):
        registry.tool_policy(["workspace.nope"])


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({}, None),
        ({"transport_visibility": "both"}, None),
        ({"allowed": False}, "denied"),
        ({"transport_visibility": "hidden"}, "hidden"),
        ({"transport_visibility": "parent"}, "parent-only"),
        ({"execution_location": "parent"}, "parent-only"),
        ({"runtime": ToolRuntime(capability_scope="control_plane")}, "parent-only"),
    ],
)
def test_the_exposure_rule(fields: dict[str, Any], reason: str | None) -> None:
    entry = SandboxToolEntry(
        **{
            "id": "x",
            "runtime_tool_id": "x",
            "execution_location": "sandbox",
            "transport_visibility": "sandbox",
            "allowed": True,
            **fields,
        }
    )
    assert entry.exposure() == reason


def _facts(**fields: Any) -> TaskFacts:
    base: dict[str, Any] = {
        "agent_status": "completed",
        "agent_summary": None,
        "commands": [("agent:x", 0)],
        "failures": [],
        "changed_files": [],
        "patch_bytes": 0,
        "patch_sha256": None,
        "bundle_dir": "/b",
        "bundle_id": "id",
    }
    return TaskFacts(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"changed_files": [{"relativePath": "a.php", "status": "modified"}], "patch_bytes": 10},
            ("succeeded", "promote", "high", True, None),
        ),
        ({}, ("partial", "review", "medium", False, "no_file_changes")),
        # no final message but changed files: reviewable, never promotable
        (
            {"agent_status": "unknown", "changed_files": [{"relativePath": "a", "status": "added"}], "patch_bytes": 3},
            ("partial", "review", "medium", True, None),
        ),
        (
            {"agent_status": "failed", "failures": [AgentFailure(executionIndex=0, command="x", message="boom")]},
            ("failed", "retry", "low", False, "execution_failed"),
        ),
        (
            {"agent_status": "failed", "tool_diagnostics": [{"tool": "t", "code": "host-tool-denied", "message": "m"}]},
            ("blocked", "fix-blocker", "low", False, "execution_failed"),
        ),
    ],
)
def test_the_outcome_mapping(fields: dict[str, Any], expected: tuple[Any, ...]) -> None:
    facts = _facts(**fields)
    result = agent_result(facts)
    outcome = completion_outcome(facts, result)
    assert (outcome.status, outcome.nextAction, outcome.confidence, result.actionable, result.noOpReason) == expected
    jsonschema.validate(
        outcome.model_dump(mode="json", by_alias=True, exclude_none=True),
        generate_json_schema("wp-codebox/sandbox-completion-outcome/v1"),
    )


# -- the protocol runner, against real child processes ---------------------------------------------------------


def _agent(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "agent.py"
    script.write_text("import json, os, sys, time\nfirst = json.loads(sys.stdin.readline())\n" + textwrap.dedent(body))
    return [sys.executable, str(script)]


def test_the_protocol_round_trip_and_a_scrubbed_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_UNIT_PARENT_ONLY", "parent-value")
    monkeypatch.setenv("CODEBOX_UNIT_PASSED", "passed-value")
    argv = _agent(
        tmp_path,
        """\
        print(json.dumps({"type": "log", "message": "hi"}), flush=True)
        print(json.dumps({"type": "tool_call", "id": "a", "tool": "t.echo", "input": {"n": 21}}), flush=True)
        reply = json.loads(sys.stdin.readline())
        env = sorted(os.environ)
        print(json.dumps({"type": "final", "status": "completed",
                          "summary": json.dumps([reply["id"], reply["result"]["output"]["n"], env, os.getcwd(),
                                                 os.listdir(".")])}), flush=True)
        """,
    )
    dispatcher = _dispatcher()
    done = run_host_agent(
        argv,
        {"type": "task", "goal": "x"},
        dispatcher,
        timeout_s=30,
        env_names=["CODEBOX_UNIT_PASSED"],
        redact=Redactor([]),
    )
    assert done.exit_code == 0 and done.final is not None and done.stopped is None
    call_id, n, env, cwd, listing = json.loads(done.final.summary or "")
    assert (call_id, n, listing) == ("a", 42, [])
    assert "CODEBOX_UNIT_PASSED" in env and "CODEBOX_UNIT_PARENT_ONLY" not in env
    assert set(env) <= {
        "PATH",
        "LANG",
        "HOME",
        "TMPDIR",
        "CODEBOX_AGENT_PROTOCOL",
        "CODEBOX_UNIT_PASSED",
        "LC_CTYPE",
        "PWD",
    }
    assert not Path(cwd).exists()  # the scratch folder is gone
    assert '"tool_result"' in done.stdout and len(dispatcher.calls) == 1


def test_timeouts_bad_lines_and_exits_are_reported(tmp_path: Path) -> None:
    slow = run_host_agent(
        _agent(tmp_path, "time.sleep(60)\n"), {}, _dispatcher(), timeout_s=0.5, env_names=[], redact=Redactor([])
    )
    assert slow.stopped == "timeout" and slow.killed and slow.exit_code == -9
    noisy = run_host_agent(
        _agent(tmp_path, "for i in range(60): print('not json', flush=True)\ntime.sleep(60)\n"),
        {},
        _dispatcher(),
        timeout_s=30,
        env_names=[],
        redact=Redactor([]),
    )
    assert noisy.stopped == "protocol" and noisy.problems[0].startswith("not a JSON line")
    quits = run_host_agent(
        _agent(tmp_path, f"sys.stderr.write({SECRET!r}); sys.exit(7)\n"),
        {},
        _dispatcher(),
        timeout_s=30,
        env_names=[],
        redact=Redactor([SECRET]),
    )
    assert quits.exit_code == 7 and quits.final is None and SECRET not in quits.stderr
    missing = run_host_agent(
        [str(tmp_path / "nope")], {}, _dispatcher(), timeout_s=5, env_names=[], redact=Redactor([])
    )
    assert missing.stopped == "protocol" and "could not start" in missing.problems[0]


def test_agent_environment_keeps_only_path_and_named_variables() -> None:
    env = agent_environment(["WANTED"], "/scratch", {"PATH": "/bin", "WANTED": "1", "SECRET": "x", "HOME": "/root"})
    assert env == {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "HOME": "/scratch",
        "TMPDIR": "/scratch",
        "CODEBOX_AGENT_PROTOCOL": "codebox/agent-message/v1",
        "WANTED": "1",
    }


def test_a_hung_handler_is_abandoned_at_the_call_timeout() -> None:
    import threading

    release = threading.Event()
    loose = {"type": "object"}
    registry = HostToolRegistry(
        [HostTool("t.hang", "never answers", loose, loose, "read", lambda data, ctx: release.wait(30))]
    )
    dispatcher = ToolDispatcher(
        registry,
        registry.bridge(registry.tool_policy(["t.hang"])),
        RuntimePolicy(commands=["t.hang"]),
        None,
        Redactor([]),
        timeout_s=0.2,
    )
    try:
        result = dispatcher.call("t.hang", {})
    finally:
        release.set()
    assert result.error is not None and result.error.code == "host-tool-timeout"


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--orchestrator", '{"type": 5}', "--orchestrator: type: Input should be a valid string"),
        ("--orchestrator", "[1]", "--orchestrator must be a JSON object like"),
        ("--sandbox-session-id", "x" * 300, "--sandbox-session-id: String should have at most 200 characters"),
        ("--fan-out", "0", "--fan-out must be between 1 and 64"),
    ],
)
def test_agent_task_option_errors_name_the_option_and_boot_nothing(
    tmp_path: Path, option: str, value: str, expected: str
) -> None:
    import subprocess

    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "ws").mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "agent-task",
            "--task",
            "x",
            "--workspace",
            str(tmp_path / "ws"),
            "--agent",
            f"{sys.executable} -c pass",
            option,
            value,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=repo,
    )
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr

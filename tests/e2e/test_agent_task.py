"""`codebox agent-task` end to end (docs/agent-tasks.md): the example agent completes a task, a no-op, failing
agents (non-zero exit, crash, timeout), a denied tool, host tool input and output schema violations, a PHP agent
inside the sandbox, and a secret that never appears in any output. Every task boots its own sandbox (one task,
one sandbox: the contract) on the native backend (real PHP in real bubblewrap, docs/backends.md): what is tested
is the agent protocol, the workspace tools, the outcome and the bundle, which are the same on both backends; each
test checks the backend its bundle records. The PHP agent runs on Playground (it does not run natively yet). The
review query after a task goes through the real entry point in-process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.agents import (
    AgentSpec,
    AgentTaskRequest,
    HostTool,
    agent_task_request_from_json,
    default_registry,
    run_agent_task,
)
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.agent import Orchestrator, TaskInput
from codebox_tui.contracts.schemas import generate_json_schema
from store.db import Store
from tests.factories.holds import codebox_in_process
from tests.factories.paths import EXAMPLE_PLUGIN, REPO

pytestmark = pytest.mark.native

EXAMPLE_AGENT = REPO / "examples" / "agents" / "example_agent.py"
TARGET = "/workspace/simple-plugin"


def _plugin(tmp_path: Path) -> Path:
    folder = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, folder)
    return folder


def _agent_script(tmp_path: Path, body: str) -> list[str]:
    """A throw-away agent speaking the protocol, with ``call`` / ``send`` helpers."""
    script = tmp_path / "agent.py"
    script.write_text(
        textwrap.dedent("""\
        import json, os, sys
        def send(m):
            sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
        def call(tool, data, n=[0]):
            n[0] += 1
            send({"type": "tool_call", "id": str(n[0]), "tool": tool, "input": data})
            return json.loads(sys.stdin.readline())["result"]
        first = json.loads(sys.stdin.readline())
        """)
        + textwrap.dedent(body)
    )
    return [sys.executable, str(script)]


def _request(
    tmp_path: Path,
    agent: list[str] | AgentSpec,
    goal: str = 'replace "Hello" with "Howdy"',
    backend: str = "native",
    **fields: Any,
) -> AgentTaskRequest:
    spec = agent if isinstance(agent, AgentSpec) else AgentSpec(kind="command", argv=agent)
    return AgentTaskRequest(
        task=TaskInput(goal=goal),
        workspaces=[{"source": _plugin(tmp_path), "target": TARGET}],
        agent=spec,
        artifacts_root=tmp_path / "artifacts",
        backend=backend,
        **fields,
    )


def _ran_natively(bundle: Path | None) -> Path:
    """The bundle, after checking it records the native backend (so a test cannot silently run on the other)."""
    assert bundle is not None
    assert json.loads((bundle / "metadata.json").read_text())["runtime"]["backend"] == "native"
    return bundle


def _doc(bundle: Path, name: str) -> Any:
    return json.loads((bundle / name).read_text())


def _check_documents(bundle: Path) -> None:
    """Each task document in the bundle is listed in the manifest and valid against its generated schema."""
    import jsonschema

    listed = {f["path"] for f in _doc(bundle, "manifest.json")["files"]}
    for name, schema_id in (
        ("files/completion-outcome.json", "wp-codebox/sandbox-completion-outcome/v1"),
        ("files/agent-result.json", "wp-codebox/agent-result/v1"),
        ("files/transcript.json", "wp-codebox/agent-transcript/v1"),
        ("files/sandbox-session.json", "wp-codebox/sandbox-session/v1"),
        ("files/tool-bridge.json", "wp-codebox/tool-bridge/v1"),
        ("files/task-input.json", "wp-codebox/task-input/v1"),
    ):
        assert name in listed
        jsonschema.Draft202012Validator(generate_json_schema(schema_id)).validate(_doc(bundle, name))


def test_the_example_agent_completes_a_task_with_an_actionable_reviewable_bundle(
    tmp_path: Path, codebox_home: Path
) -> None:
    request = _request(
        tmp_path,
        [sys.executable, str(EXAMPLE_AGENT)],
        sandbox_session_id="caller-session-7",
        session_id="conv-1",
        orchestrator=Orchestrator(type="test-plane", id="orch-1", job_id="job-9"),
    )
    outcome = run_agent_task(request)

    assert outcome.exit_code == 0, outcome.to_json()
    bundle = _ran_natively(outcome.bundle_dir)
    assert verify_bundle(bundle).valid
    _check_documents(bundle)
    completion = _doc(bundle, "files/completion-outcome.json")
    assert (completion["status"], completion["confidence"], completion["nextAction"]) == (
        "succeeded",
        "high",
        "promote",
    )
    assert completion["provenance"]["artifactBundleId"] == outcome.bundle_id
    result = _doc(bundle, "files/agent-result.json")
    assert result["actionable"] is True and result["changedFiles"]["paths"] == ["simple-plugin.php"]
    assert result["patch"]["bytes"] == len((bundle / "files/patch.diff").read_bytes()) > 0
    assert "Howdy, %s!" in (bundle / "files/patch.diff").read_text()
    transcript = _doc(bundle, "files/transcript.json")
    assert [c["tool"] for c in transcript["toolCalls"]] == [
        "workspace.list",
        "workspace.grep",
        "workspace.read",
        "workspace.edit",
        "workspace.diff",
    ]
    assert all(c["status"] == "ok" for c in transcript["toolCalls"])
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]
    assert [e["data"]["tool"] for e in events if e["type"] == "agent.tool-call"] == [
        c["tool"] for c in transcript["toolCalls"]
    ]
    assert transcript["executions"][0]["exitCode"] == 0 and transcript["executions"][0]["parsed"]["type"] == "final"
    # the envelope echoes the caller's ids, in the bundle and in the call's JSON
    session = _doc(bundle, "files/sandbox-session.json")
    assert session["id"] == "caller-session-7" and session["agent_session_id"] == "conv-1"
    assert session["orchestrator"] == {"type": "test-plane", "id": "orch-1", "job_id": "job-9"}
    assert session["artifacts"]["bundle_id"] == outcome.bundle_id and session["status"] == "completed"
    assert outcome.to_json()["session"] == session
    # the host folder is untouched (the sandbox edited its private copy); the store correlates the run
    assert "Hello, %s!" in (Path(request.workspaces[0].source) / "simple-plugin.php").read_text()
    with Store.open() as store:
        (run,) = store.list_runs(sandbox_session_id="caller-session-7")
        assert run.metadata["orchestrator"] == {"type": "test-plane", "id": "orch-1", "job_id": "job-9"}
        assert run.metadata["flow"] == "agent-task" and run.bundle_id == outcome.bundle_id
    # reviewable like any other bundle
    shown = codebox_in_process(codebox_home, "review", "show", f"@{outcome.inbox_key}", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "simple-plugin.php" in shown.stdout


def test_a_task_with_nothing_to_change_is_an_explicit_non_actionable_no_op(tmp_path: Path) -> None:
    outcome = run_agent_task(
        _request(tmp_path, [sys.executable, str(EXAMPLE_AGENT)], goal='replace "no-such-text-anywhere" with "x"')
    )

    assert outcome.exit_code == 0
    result, completion = outcome.agent_result, outcome.completion_outcome
    assert result is not None and completion is not None
    assert (result.actionable, result.noOpReason, result.changedFiles.count, result.patch.bytes) == (
        False,
        "no_file_changes",
        0,
        0,
    )
    assert (completion.status, completion.nextAction, completion.confidence) == ("partial", "review", "medium")
    assert verify_bundle(_ran_natively(outcome.bundle_dir)).valid


@pytest.mark.parametrize(
    ("body", "timeout_s", "expected"),
    [
        ("sys.stderr.write('giving up\\n'); sys.exit(3)\n", 60, "exited with 3"),
        ("import signal; os.kill(os.getpid(), signal.SIGSEGV)\n", 60, "killed by signal 11"),
        ("import time; time.sleep(600)\n", 0.5, "did not finish within 0.5 s"),
    ],
    ids=["non-zero", "crash", "timeout"],
)
def test_a_failing_agent_gets_an_honest_failed_outcome(
    tmp_path: Path, body: str, timeout_s: float, expected: str
) -> None:
    outcome = run_agent_task(_request(tmp_path, _agent_script(tmp_path, body), timeout_s=timeout_s))

    assert outcome.exit_code == 1 and outcome.status == "failed"
    result, completion = outcome.agent_result, outcome.completion_outcome
    assert result is not None and completion is not None
    assert result.status == "failed" and result.noOpReason == "execution_failed" and not result.actionable
    assert expected in result.failures[0].message
    assert (completion.status, completion.nextAction, completion.confidence) == ("failed", "retry", "low")
    assert verify_bundle(_ran_natively(outcome.bundle_dir)).valid
    if "non-zero" in expected or "exited" in expected:
        assert "giving up" in _doc(outcome.bundle_dir, "files/transcript.json")["executions"][0]["stderr"]


def test_denied_tools_and_schema_violations_are_structured_errors_in_the_transcript(tmp_path: Path) -> None:
    registry = default_registry()
    registry.register(
        HostTool(
            "host.bad-echo",
            "Returns output that breaks its own schema.",
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            "read",
            lambda data, ctx: {"n": "not a number"},
        )
    )
    agent = _agent_script(
        tmp_path,
        """\
        results = [call("workspace.write", {"path": "simple-plugin/x.txt", "content": "x"}),
                   call("no.such-tool", {}),
                   call("workspace.read", {"pathh": "simple-plugin/simple-plugin.php"}),
                   call("host.bad-echo", {"n": 1}),
                   call("workspace.read", {"path": "/etc/passwd"}),
                   call("workspace.read", {"path": "simple-plugin/simple-plugin.php"})]
        codes = [r.get("error", {}).get("code", "ok") for r in results]
        send({"type": "final", "status": "failed", "summary": ",".join(codes)})
        """,
    )
    outcome = run_agent_task(_request(tmp_path, agent, tools=["workspace.read", "host.bad-echo"]), registry=registry)

    assert outcome.agent_result is not None and outcome.completion_outcome is not None
    expected = [
        "host-tool-denied",
        "host-tool-unknown",
        "host-tool-invalid-input",
        "host-tool-invalid-output",
        "host-tool-invalid-input",
        "ok",
    ]
    assert outcome.agent_result.agentSummary == ",".join(expected)
    bundle = _ran_natively(outcome.bundle_dir)
    calls = _doc(bundle, "files/transcript.json")["toolCalls"]
    assert [c["error"]["code"] if c["status"] == "error" else "ok" for c in calls] == expected
    assert "Tool is not allowed by runtime policy: workspace.write" in calls[0]["error"]["message"]
    assert "outside /workspace" in calls[4]["error"]["message"]
    # the write never happened; diagnostics make the failed task a blocker to fix, not a retry
    assert outcome.agent_result.changedFiles.count == 0
    assert outcome.agent_result.workspaceTools is not None and len(outcome.agent_result.workspaceTools.diagnostics) == 5
    completion = outcome.completion_outcome
    assert (completion.status, completion.nextAction, completion.confidence) == ("blocked", "fix-blocker", "low")
    bridge = _doc(bundle, "files/tool-bridge.json")
    assert bridge["allowed_tools"] == ["workspace.read", "host.bad-echo"]
    hidden = {e["id"]: e["reason"] for e in bridge["metadata"]["notExposed"]}
    assert hidden["workspace.write"] == "denied" and hidden["git.push"] == "denied"
    assert {t["id"] for t in bridge["sandbox_tool_policy"]["tools"]} >= {
        "workspace.write",
        "git.push",
        "artifacts.apply",
    }


def test_an_edit_replaces_exactly_the_count_it_names_or_writes_nothing(tmp_path: Path) -> None:
    """``workspace.edit``: a count that does not match what the file holds is refused with both numbers and writes
    nothing; the right count replaces every occurrence; an edit outside the workspace is refused."""
    agent = _agent_script(
        tmp_path,
        """\
        target = "simple-plugin/simple-plugin.php"
        results = [call("workspace.edit", {"path": target, "old": "Hello", "new": "Hi", "count": 2}),
                   call("workspace.edit", {"path": target, "old": "no-such-text", "new": "x"}),
                   call("workspace.edit", {"path": "/etc/hostname", "old": "a", "new": "b"}),
                   call("workspace.edit", {"path": target, "old": "Hello", "new": "Hi"})]
        codes = [r["error"]["code"] if "error" in r else "replaced %d" % r["output"]["replaced"] for r in results]
        send({"type": "final", "status": "completed", "summary": ",".join(codes)})
        """,
    )
    outcome = run_agent_task(_request(tmp_path, agent))
    assert outcome.agent_result is not None
    assert outcome.agent_result.agentSummary == ",".join(
        ["host-tool-handler-error", "host-tool-handler-error", "host-tool-invalid-input", "replaced 1"]
    )
    bundle = _ran_natively(outcome.bundle_dir)
    calls = _doc(bundle, "files/transcript.json")["toolCalls"]
    assert (
        "has 1 occurrence(s) of the text to replace, not the 2 expected; nothing was written"
        in (calls[0]["error"]["message"])
    )
    assert "has 0 occurrence(s)" in calls[1]["error"]["message"]
    assert [c["status"] for c in calls] == ["error", "error", "error", "ok"]
    # one line changed, by the last edit only
    lines = (bundle / "files/patch.diff").read_text().splitlines()
    assert [line for line in lines if line.startswith("-") and not line.startswith("---")] == [
        "-\treturn sprintf( 'Hello, %s!', sanitize_text_field( $name ) );"
    ]
    assert [line for line in lines if line.startswith("+") and not line.startswith("+++")] == [
        "+\treturn sprintf( 'Hi, %s!', sanitize_text_field( $name ) );"
    ]


PHP_AGENT = """<?php
$task = json_decode(file_get_contents('/codebox-agent/task.json'), true);
$file = '/workspace/simple-plugin/simple-plugin.php';
file_put_contents($file, str_replace('Hello', 'Bonjour', file_get_contents($file)));
echo json_encode(['type' => 'final', 'status' => 'completed', 'summary' => 'did: ' . $task['task']['goal']]), "\\n";
"""


def _php_agent_task(tmp_path: Path, backend: str) -> Path:
    """A small PHP agent reads its task from ``/codebox-agent/task.json`` and edits the workspace; the outcome
    is checked and its bundle returned."""
    script = tmp_path / "agent.php"
    script.write_text(PHP_AGENT)
    outcome = run_agent_task(
        _request(tmp_path, AgentSpec(kind="php", php_file=script), goal="say bonjour", backend=backend)
    )

    assert outcome.exit_code == 0, outcome.to_json()
    assert outcome.agent_result is not None and outcome.agent_result.actionable
    assert outcome.agent_result.agentSummary == "did: say bonjour"
    assert outcome.bundle_dir is not None and "Bonjour, %s!" in (outcome.bundle_dir / "files/patch.diff").read_text()
    assert outcome.agent_result.changedFiles.paths == ["simple-plugin.php"]  # nothing of /codebox-agent
    return outcome.bundle_dir


def test_a_php_agent_runs_inside_the_native_sandbox(codebox_home: Path, tmp_path: Path) -> None:
    """Its task folder is a read-only mount inside the native sandbox's open_basedir (docs/backends.md)."""
    _ran_natively(_php_agent_task(tmp_path, "native"))


@pytest.mark.playground
def test_a_php_agent_runs_inside_the_sandbox_on_playground(playground_session: Any, tmp_path: Path) -> None:
    bundle = _php_agent_task(tmp_path, "playground")
    assert _doc(bundle, "metadata.json")["runtime"]["backend"] == "wordpress-playground"


def test_a_secret_never_appears_in_any_output(codebox_home: Path, tmp_path: Path) -> None:
    secret = "s3cr3t-agent-value-9d2f71"
    plugin = _plugin(tmp_path)
    (plugin / "config.txt").write_text(f"api_key={secret}\n")  # the user's own file holds the key
    agent = _agent_script(
        tmp_path,
        """\
        read = call("workspace.read", {"path": "simple-plugin/config.txt"})
        found = call("workspace.grep", {"pattern": "api_key", "path": "simple-plugin"})
        content = read["output"]["content"]
        sys.stderr.write("env: " + json.dumps(dict(os.environ)) + "\\n" + content)
        call("workspace.write", {"path": "simple-plugin/echo.txt", "content": content + json.dumps(found)})
        leak = "leaked" if "CODEBOX_AGENT_TEST_SECRET" in os.environ else "clean"
        send({"type": "final", "status": "completed", "summary": leak + " " + content})
        """,
    )
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"goal": "echo the config", "context": {"note": "no secrets here"}}))
    env = {**os.environ, "CODEBOX_AGENT_TEST_SECRET": secret}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "agent-task",
            "--task",
            str(task),
            "--workspace",
            f"{plugin}:{TARGET}",
            "--agent",
            " ".join(agent),
            "--backend",
            "native",
            "--artifacts",
            str(tmp_path / "artifacts"),
            "--json",
            "--sandbox-session-id",
            "secret-test",
            "--policy",
            json.dumps(
                {
                    "commands": ["wordpress.run-php", "workspace.read", "workspace.grep", "workspace.write"],
                    "secrets": ["CODEBOX_AGENT_TEST_SECRET"],
                }
            ),
            "--tools",
            "workspace.read,workspace.grep,workspace.write",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
    )

    assert proc.returncode == 0, proc.stderr + proc.stdout
    doc = json.loads(proc.stdout)
    assert doc["agent_result"]["agentSummary"].startswith("clean ")  # the agent never received the secret
    bundle = _ran_natively(Path(doc["artifacts"]["directory"]))
    assert doc["agent_result"]["actionable"] is True  # it wrote echo.txt (with the redacted text it was given)
    assert secret not in proc.stdout and secret not in proc.stderr
    offenders = [
        str(p.relative_to(bundle)) for p in bundle.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()
    ]
    assert offenders == []
    transcript = (bundle / "files/transcript.json").read_text()
    assert "api_key=" in transcript and "CODEBOX_AGENT_TEST_SECRET" not in transcript


def test_json_items_name_the_path_of_a_bad_field(tmp_path: Path) -> None:
    from codebox_tui.errors import BadInputError

    base = {"task": "do it", "workspaces": [f"{_plugin(tmp_path)}:{TARGET}"], "agent": [sys.executable, "-V"]}
    assert agent_task_request_from_json(base).task.goal == "do it"
    for patch, where in (
        ({"task": {"goal": "x", "code": "<?php"}}, "$.task.code"),
        ({"workspaces": [f"{tmp_path}:/elsewhere"]}, "$.workspaces[0]"),
        ({"timeout": "soon"}, "$.timeout"),
        ({"agent": "no-such-program-xyz"}, "$.agent"),
        ({"orchestrator": {"type": 3}}, "$.orchestrator.type"),
        ({"extra": 1}, "$.extra"),
    ):
        with pytest.raises(BadInputError) as caught:
            agent_task_request_from_json({**base, **patch})
        assert caught.value.field == where, (patch, caught.value)


def test_json_item_paths_are_relative_to_the_batch_folder(tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    (batch / "agents").mkdir(parents=True)
    (batch / "agents" / "a.py").write_text("print('hi')\n")
    _plugin(batch)
    request = agent_task_request_from_json(
        {
            "task": "x",
            "workspaces": ["simple-plugin", {"source": "simple-plugin", "target": "/workspace/two"}],
            "agent": ["python3", "agents/a.py"],
            "artifacts": "out",
        },
        base_dir=batch,
    )
    assert [w.source for w in request.workspaces] == [(batch / "simple-plugin").resolve(), batch / "simple-plugin"]
    assert request.workspaces[0].target == TARGET
    assert request.agent.argv == ["python3", str(batch / "agents" / "a.py")]
    assert request.artifacts_root == batch / "out"


def test_a_cancelled_task_stops_the_agent_and_still_leaves_its_evidence(tmp_path: Path) -> None:
    from codebox_tui.lifecycle import RunControl

    control = RunControl()
    registry = default_registry()
    loose = {"type": "object"}
    registry.register(
        HostTool(
            "test.cancel",
            "Cancels the task (what a user's Ctrl-C or a batch's cancel does).",
            loose,
            loose,
            "read",
            lambda data, ctx: control.cancel("stopped by the test") or {},
        )
    )
    agent = _agent_script(
        tmp_path,
        """\
        call("test.cancel", {})
        import time; time.sleep(600)
        """,
    )
    outcome = run_agent_task(
        _request(tmp_path, agent, tools=["test.cancel"], sandbox_session_id="to-cancel"),
        control=control,
        registry=registry,
    )

    assert outcome.exit_code == 130 and outcome.status == "cancelled"
    assert outcome.agent_result is not None and outcome.agent_result.status == "failed"
    assert "cancelled" in outcome.agent_result.failures[0].message
    assert verify_bundle(_ran_natively(outcome.bundle_dir)).valid
    assert _doc(outcome.bundle_dir, "files/sandbox-session.json")["status"] == "cancelled"
    assert [c["tool"] for c in _doc(outcome.bundle_dir, "files/transcript.json")["toolCalls"]] == ["test.cancel"]

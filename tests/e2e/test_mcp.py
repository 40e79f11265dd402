"""``codebox mcp`` end to end: the MCP SDK's own client spawns ``python -m codebox_tui mcp`` over stdio and
calls every tool — a real run, artifacts show/verify on the bundle it made, a decision and an apply-back onto a
folder, the inbox, a cancelled run, an agent task, and bad input (docs/mcp.md). The servers that boot run with
``CODEBOX_BACKEND=native`` (real PHP in real bubblewrap, docs/backends.md): what is tested is the MCP server,
whose runs are the same on both backends; each run checks the backend it records. Bad input is refused before
anything boots, on the default backend."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.types import CallToolResult

from codebox_tui.errors import BadInputError
from codebox_tui.runtime.native_site import host_php
from codebox_tui.settings import CodeboxSettings
from store.db import Store
from tests.factories.mcp import error_text, structured, with_client
from tests.factories.paths import EXAMPLE_PLUGIN, REPO

pytestmark = [pytest.mark.native]

NATIVE = {"CODEBOX_BACKEND": "native"}  # the server's runs boot native sandboxes

PLUGIN_TARGET = "/wordpress/wp-content/plugins/simple-plugin"
WRITE_CODE = (
    f"code=file_put_contents('{PLUGIN_TARGET}/added.txt', \"made in the sandbox\\n\");"
    f" file_put_contents('{PLUGIN_TARGET}/simple-plugin.php', \"\\n// edited in the sandbox\\n\", FILE_APPEND);"
    " echo 'wrote two files';"
)
TOOLS = {
    "run",
    "artifacts_show",
    "artifacts_verify",
    "review_decide",
    "apply",
    "list_runs",
    "agent_task",
    "execute",
    "evaluate_patch",
    "recipe_run",
    "episode_run",
    "batch",
}


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@dataclass
class Ran:
    home: Path
    log: Path
    plugin: Path
    before: dict[str, str]
    tools: dict[str, Any]
    result: dict[str, Any]
    progress: list[tuple[float, float | None, str | None]]
    calls: dict[str, CallToolResult]  # the later calls of the same session, by name
    target: Path  # a copy of the plugin the approved file is applied to
    target_before: dict[str, str]
    workspace: Path  # the agent task's workspace
    workspace_before: dict[str, str]
    cancelled: tuple[str, str]  # a run whose request the client cancelled: its recorded status and folder


@pytest.fixture(scope="module")
def ran(codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """One server, one client session, the calls of several tests (each server start costs seconds of CPU): a
    real run (a read-write mount of the example plugin, a PHP command that adds one file and edits another; no
    ``php``: the backend's own, the host's on native), then on its bundle artifacts show/verify and the inbox, a
    stale and a real decision and the apply-back; a command the policy denies; the example agent's task; last, a run whose request the client cancels."""
    root = tmp_path_factory.mktemp("mcp")
    plugin = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    before = tree(plugin)
    target = root / "target"
    shutil.copytree(EXAMPLE_PLUGIN, target)
    workspace = root / "workspace" / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, workspace)
    log = root / "server.log"
    progress: list[tuple[float, float | None, str | None]] = []
    task = {
        "task": 'replace "Hello" with "Howdy"',
        "workspaces": [f"{workspace}:/workspace/simple-plugin"],
        "agent": [sys.executable, str(REPO / "examples" / "agents" / "example_agent.py")],
        "sandbox_session_id": "mcp-session-4",
        "orchestrator": {"type": "mcp-test", "id": "o-1", "job_id": "j-2"},
        "artifacts": str(root / "agent-artifacts"),
    }

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def body(
        session: ClientSession,
    ) -> tuple[dict[str, Any], CallToolResult, dict[str, CallToolResult], tuple[str, str]]:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        result = await session.call_tool(
            "run",
            {
                "command": "wordpress.run-php",
                "args": [WRITE_CODE],
                "mounts": [f"{plugin}:{PLUGIN_TARGET}"],
                "artifacts": str(root / "artifacts"),
                "metadata": {"caller": "test_mcp"},
            },
            progress_callback=on_progress,
        )
        made = structured(result, log)
        bundle, digest = made["bundleDir"], made["contentDigestB"]
        calls = {
            "show": await session.call_tool("artifacts_show", {"bundle": bundle}),
            "verify": await session.call_tool("artifacts_verify", {"bundle": bundle}),
            "list": await session.call_tool("list_runs", {"text": "simple-plugin"}),
            "stale": await session.call_tool(
                "review_decide", {"bundle": bundle, "action": "approve", "content_digest": "0" * 64}
            ),
            "decided": await session.call_tool(
                "review_decide",
                {
                    "bundle": bundle,
                    "action": "approve-files",
                    "files": ["added.txt"],
                    "content_digest": digest,
                    "approver": "mcp-test",
                    "reason": "only the new file",
                },
            ),
        }
        decision = structured(calls["decided"], log)
        calls["applied"] = await session.call_tool(
            "apply", {"decision": decision["id"], "adapter": "directory", "target": str(target)}
        )
        calls["denied"] = await session.call_tool(
            "run",
            {
                "command": "wordpress.run-php",
                "args": ["code=echo 1;"],
                "policy": {"commands": ["inspect-mounted-inputs"]},
                "artifacts": str(root / "denied"),
            },
        )
        calls["agent"] = await session.call_tool("agent_task", {"task": task})
        return tools, result, calls, await cancel_a_run(session)

    async def cancel_a_run(session: ClientSession) -> tuple[str, str]:
        running = anyio.Event()
        started: list[str] = []

        async def on_step(value: float, total: float | None, message: str | None) -> None:
            started.append(message or "")
            if (message or "").startswith("step 1:"):
                running.set()

        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: session.call_tool(
                    "run",
                    {
                        "command": "wordpress.run-php",
                        "args": ["code=sleep(300);"],
                        "timeout": "10m",
                        "artifacts": str(root / "cancelled"),
                    },
                    progress_callback=on_step,
                )
            )
            with anyio.fail_after(240):
                await running.wait()
            group.cancel_scope.cancel()
        run_id = next(m for m in started if m.startswith("run: ")).split()[1]
        # the server's own store (its CODEBOX_HOME), whatever this process's settings say; the server finishes
        # the run on its own, in about a second (the bound matters only when the cancel was lost: the command
        # then runs its 300 s)
        with Store.open(server_db) as store:
            try:
                with anyio.fail_after(120):
                    while True:
                        try:
                            record = store.get_run(run_id)
                        except BadInputError:  # not recorded yet
                            record = None
                        if record is not None and record.status in ("completed", "failed", "cancelled"):
                            return str(record.status), record.artifacts_dir
                        await anyio.sleep(0.2)
            except TimeoutError:
                tail = log.read_text(errors="replace")[-4000:]
                raise AssertionError(f"the cancelled run {run_id} did not end\n--- server log ---\n{tail}") from None

    server_db = CodeboxSettings(home=codebox_home).db_path
    target_before, workspace_before = tree(target), tree(workspace)
    tools, result, calls, cancelled = with_client(codebox_home, log, body, env=NATIVE)
    return Ran(
        codebox_home,
        log,
        plugin,
        before,
        tools,
        structured(result, log),
        progress,
        calls,
        target,
        target_before,
        workspace,
        workspace_before,
        cancelled,
    )


def test_lists_every_tool_with_input_and_output_schemas(ran: Ran) -> None:
    assert set(ran.tools) == TOOLS
    run = ran.tools["run"]
    assert run.input_schema["required"] == ["command"]
    assert run.input_schema["additionalProperties"] is False  # a misspelt argument is refused
    assert {"mounts", "args", "policy", "wp", "php", "backend", "timeout"} <= set(run.input_schema["properties"])
    assert run.output_schema["properties"]["run"]["$ref"].endswith("RunOutput")
    assert ran.tools["apply"].output_schema["title"] == "ApplyResult"
    assert ran.tools["artifacts_verify"].annotations.read_only_hint is True
    assert ran.tools["apply"].annotations.read_only_hint is False


def test_run_boots_a_real_sandbox_and_records_the_bundle(ran: Ran) -> None:
    result = ran.result
    assert result["status"] == "completed"
    run = result["run"]
    assert run["schema"] == "wp-codebox/run/v1" and run["success"] is True
    assert run["execution"]["command"] == "wordpress.run-php" and run["execution"]["exitCode"] == 0
    assert "wrote two files" in run["execution"]["stdout"]
    assert run["runtime"]["backend"] == "native" and run["runtime"]["id"]
    assert Path(result["bundleDir"]).is_dir() and len(result["contentDigestB"]) == 64
    # no `php` given: the backend's default, the host's PHP on native (8.2 from scripts/install-system.sh), as
    # `codebox run` picks it; the bundle records the version that ran and the backend
    metadata = json.loads((Path(result["bundleDir"]) / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["provenance"]["runtime"]["phpVersion"] == host_php().version
    assert host_php().version.startswith("8.2.")
    assert metadata["runtime"]["backend"] == metadata["provenance"]["runtime"]["backend"] == "native"
    assert isinstance(result["inboxKey"], int)
    # copy-on-write: the host folder is untouched until an approved apply
    assert tree(ran.plugin) == ran.before
    # the run's phases arrived as MCP progress notifications, in order
    messages = [m or "" for _, _, m in ran.progress]
    assert [v for v, _, _ in ran.progress] == sorted(v for v, _, _ in ran.progress)
    assert any(m.startswith("ready:") for m in messages), messages
    assert any("wordpress.run-php" in m for m in messages), messages
    # lines from the runtime's own threads reached the client too
    assert "progress not sent" not in ran.log.read_text(errors="replace")


def test_artifacts_show_and_verify_the_bundle_the_run_made(ran: Ran) -> None:
    bundle = ran.result["bundleDir"]
    show, verify, listed = ran.calls["show"], ran.calls["verify"], ran.calls["list"]
    shown = structured(show, ran.log)
    assert shown["valid"] is True and shown["path"] == bundle
    assert shown["contentDigestB"] == ran.result["contentDigestB"]
    changed = {f["path"]: f["status"] for f in shown["changedFiles"]}
    assert changed == {"added.txt": "added", "simple-plugin.php": "modified"}
    verified = structured(verify, ran.log)
    assert verified["schema"] == "wp-codebox/artifact-bundle-verification/v1"
    assert verified["valid"] is True and verified["violations"] == []
    rows = structured(listed, ran.log)["rows"]
    row = next(r for r in rows if r["key"] == ran.result["inboxKey"])
    assert row["path"] == bundle and row["status"] == "pending" and row["changed"] == 2


def test_review_decide_and_apply_write_only_the_approved_file(ran: Ran) -> None:
    target, before = ran.target, ran.target_before
    digest = ran.result["contentDigestB"]
    stale, decided, applied = ran.calls["stale"], ran.calls["decided"], ran.calls["applied"]
    assert "content_digest:" in error_text(stale) and "content-digest-mismatch" in error_text(stale)
    decision = structured(decided, ran.log)
    assert decision["action"] == "approve-files" and decision["approver"] == "mcp-test"
    assert decision["content_digest"] == digest
    assert decision["approved_relative_paths"] == ["added.txt"]
    result = structured(applied, ran.log)
    assert result["schema"] == "wp-codebox/apply-result/v1"
    assert result["status"] == "applied" and result["applied_files"] == ["added.txt"]
    after = tree(target)
    assert (target / "added.txt").read_text() == "made in the sandbox\n"
    assert {rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)} == {"added.txt"}
    assert tree(ran.plugin) == ran.before  # the mounted folder itself still untouched


def test_bad_input_is_a_tool_error_naming_the_field(ran: Ran, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> list[CallToolResult]:
        return [
            await session.call_tool(
                "run",
                {
                    "command": "wordpress.run-php",
                    "args": ["code=echo 1;"],
                    "mounts": [f"{tmp_path / 'missing'}:{PLUGIN_TARGET}"],
                },
            ),
            await session.call_tool(
                "run",
                {"command": "wordpress.run-php", "args": ["code=echo 1;"], "mounts": [f"{ran.plugin}:/wordpress"]},
            ),
            await session.call_tool("run", {"command": "wordpress.run-php", "php": "5.6"}),
            await session.call_tool(
                "run", {"command": "wordpress.run-php", "args": ["code=echo 1;"], "policy": {"commands": []}}
            ),
            await session.call_tool("run", {"command": "wordpress.run-php", "mount": []}),
            await session.call_tool("artifacts_verify", {"bundle": str(tmp_path / "nowhere")}),
            await session.call_tool(
                "review_decide",
                {"bundle": ran.result["bundleDir"], "action": "approve-files", "files": ["not-changed.php"]},
            ),
            await session.call_tool("apply", {"decision": "999999", "adapter": "directory", "target": str(tmp_path)}),
            await session.call_tool("agent_task", {"task": {"task": "do nothing"}}),
        ]

    missing, whole_site, php, bad_policy, unknown, no_bundle, not_changed, no_decision, agents = with_client(
        ran.home, ran.log, body
    )
    assert error_text(missing).startswith("Error executing tool run: mounts[0].source:")
    assert "mounts[0]" in error_text(whole_site)
    assert "php:" in error_text(php) and "unknown-php-version" in error_text(php)
    assert "policy" in error_text(bad_policy) and "invalid-policy" in error_text(bad_policy)
    assert "mount" in error_text(unknown) and "Extra inputs are not permitted" in error_text(unknown)
    assert "bundle:" in error_text(no_bundle)
    assert "files:" in error_text(not_changed) and "not-changed.php" in error_text(not_changed)
    assert "decision:" in error_text(no_decision)
    assert "$.workspaces" in error_text(agents) and "invalid-agent-task" in error_text(agents)
    for result in (missing, whole_site, php, bad_policy, unknown, no_bundle, not_changed, no_decision, agents):
        assert "Traceback" not in error_text(result)
    assert "Traceback" not in json.dumps([r.model_dump(mode="json") for r in (missing, php)])


def test_a_command_the_policy_denies_is_a_failed_run_not_a_boot(ran: Ran) -> None:
    result = structured(ran.calls["denied"], ran.log)
    assert result["status"] == "failed" and result["run"]["success"] is False
    assert result["run"]["error"]["code"] == "runtime-command-disallowed", result["run"]["error"]
    assert result["run"]["executions"] == [] or result["run"]["executions"][-1]["exitCode"] != 0


def test_cancelling_the_request_cancels_the_run(ran: Ran) -> None:
    """The client gives up while the command runs: the sandbox is killed, and the run is still captured
    and recorded, as cancelled."""
    status, artifacts_dir = ran.cancelled
    assert status == "cancelled"
    assert json.loads((Path(artifacts_dir) / "metadata.json").read_text())["runtime"]["backend"] == "native"
    # the cancel killed the command (or kept it from starting), not its timeout
    (command,) = [json.loads(line) for line in (Path(artifacts_dir) / "commands.jsonl").read_text().splitlines()]
    assert command["result"]["error"]["code"] == "sandbox-aborted", command["result"]["error"]


def test_agent_task_runs_the_example_agent_and_echoes_the_callers_ids(ran: Ran) -> None:
    """The ``agent_task`` tool through the SDK's client: the example agent edits its private workspace copy, the
    result is the ``codebox/agent-task/v1`` document, the bundle is in the store under the caller's session id."""
    doc = structured(ran.calls["agent"], ran.log)
    assert doc["schema"] == "codebox/agent-task/v1" and doc["success"] is True and doc["exitCode"] == 0
    assert doc["session"]["id"] == "mcp-session-4" and doc["session"]["status"] == "completed"
    assert doc["session"]["orchestrator"] == {"type": "mcp-test", "id": "o-1", "job_id": "j-2"}
    assert (doc["completion_outcome"]["status"], doc["completion_outcome"]["nextAction"]) == ("succeeded", "promote")
    assert doc["agent_result"]["changedFiles"]["paths"] == ["simple-plugin.php"]
    bundle = Path(doc["artifacts"]["directory"])
    assert json.loads((bundle / "metadata.json").read_text())["runtime"]["backend"] == "native"
    assert "Howdy, %s!" in (bundle / "files" / "patch.diff").read_text()
    commands = [json.loads(line) for line in (bundle / "commands.jsonl").read_text().splitlines()]
    assert any(c["command"] == "exec" for c in commands)  # the workspace tools ran in the native sandbox's shell
    assert tree(ran.workspace) == ran.workspace_before  # the agent changed only the sandbox's copy
    with Store.open(CodeboxSettings(home=ran.home).db_path) as store:  # the server's store
        (row,) = store.list_runs(sandbox_session_id="mcp-session-4")
        assert row.bundle_id == doc["artifacts"]["id"] and row.metadata["flow"] == "agent-task"

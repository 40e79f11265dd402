"""``codebox mcp`` end to end: the MCP SDK's own client spawns ``python -m codebox_tui mcp`` over stdio and
calls every tool — a real Playground run, artifacts show/verify on the bundle it made, a decision and an
apply-back onto a folder, the inbox, and bad input (docs/mcp.md)."""

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
from store.db import Store
from tests.factories.mcp import error_text, structured, with_client
from tests.factories.paths import EXAMPLE_PLUGIN, REPO

pytestmark = [pytest.mark.playground]

PLUGIN_TARGET = "/wordpress/wp-content/plugins/simple-plugin"
WRITE_CODE = (
    f"code=file_put_contents('{PLUGIN_TARGET}/added.txt', \"made in the sandbox\\n\");"
    f" file_put_contents('{PLUGIN_TARGET}/simple-plugin.php', \"\\n// edited in the sandbox\\n\", FILE_APPEND);"
    " echo 'wrote two files';"
)
TOOLS = {"run", "artifacts_show", "artifacts_verify", "review_decide", "apply", "list_runs", "agent_task", "execute",
         "evaluate_patch", "recipe_run", "episode_run", "batch"}


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass
class Ran:
    home: Path
    log: Path
    plugin: Path
    before: dict[str, str]
    tools: dict[str, Any]
    result: dict[str, Any]
    progress: list[tuple[float, float | None, str | None]]


@pytest.fixture(scope="module")
def ran(playground_session: Any, codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """One real run through the MCP server: a read-write mount of the example plugin, a PHP command that
    adds one file and edits another."""
    root = tmp_path_factory.mktemp("mcp")
    plugin = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    before = tree(plugin)
    log = root / "server.log"
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def body(session: ClientSession) -> tuple[dict[str, Any], CallToolResult]:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        result = await session.call_tool(
            "run", {"command": "wordpress.run-php", "args": [WRITE_CODE], "mounts": [f"{plugin}:{PLUGIN_TARGET}"],
                    "artifacts": str(root / "artifacts"), "metadata": {"caller": "test_mcp"}},
            progress_callback=on_progress)
        return tools, result

    tools, result = with_client(codebox_home, log, body)
    return Ran(codebox_home, log, plugin, before, tools, structured(result, log), progress)


def test_lists_every_tool_with_input_and_output_schemas(ran: Ran) -> None:
    assert set(ran.tools) == TOOLS
    run = ran.tools["run"]
    assert run.input_schema["required"] == ["command"]
    assert run.input_schema["additionalProperties"] is False  # a misspelt argument is refused
    assert {"mounts", "args", "policy", "wp", "php", "timeout"} <= set(run.input_schema["properties"])
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
    assert run["runtime"]["backend"] == "wordpress-playground" and run["runtime"]["id"]
    assert Path(result["bundleDir"]).is_dir() and len(result["contentDigestB"]) == 64
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

    async def body(session: ClientSession) -> tuple[CallToolResult, CallToolResult, CallToolResult]:
        return (await session.call_tool("artifacts_show", {"bundle": bundle}),
                await session.call_tool("artifacts_verify", {"bundle": bundle}),
                await session.call_tool("list_runs", {"text": "simple-plugin"}))

    show, verify, listed = with_client(ran.home, ran.log, body)
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


def test_review_decide_and_apply_write_only_the_approved_file(ran: Ran, tmp_path: Path) -> None:
    target = tmp_path / "target"
    shutil.copytree(ran.plugin, target)
    before = tree(target)
    bundle, digest = ran.result["bundleDir"], ran.result["contentDigestB"]

    async def body(session: ClientSession) -> tuple[CallToolResult, CallToolResult, CallToolResult]:
        stale = await session.call_tool("review_decide", {"bundle": bundle, "action": "approve",
                                                          "content_digest": "0" * 64})
        decided = await session.call_tool("review_decide", {
            "bundle": bundle, "action": "approve-files", "files": ["added.txt"], "content_digest": digest,
            "approver": "mcp-test", "reason": "only the new file"})
        decision = structured(decided, ran.log)
        applied = await session.call_tool("apply", {"decision": decision["id"], "adapter": "directory",
                                                    "target": str(target)})
        return stale, decided, applied

    stale, decided, applied = with_client(ran.home, ran.log, body)
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
            await session.call_tool("run", {"command": "wordpress.run-php", "args": ["code=echo 1;"],
                                            "mounts": [f"{tmp_path / 'missing'}:{PLUGIN_TARGET}"]}),
            await session.call_tool("run", {"command": "wordpress.run-php", "args": ["code=echo 1;"],
                                            "mounts": [f"{ran.plugin}:/wordpress"]}),
            await session.call_tool("run", {"command": "wordpress.run-php", "php": "5.6"}),
            await session.call_tool("run", {"command": "wordpress.run-php", "args": ["code=echo 1;"],
                                            "policy": {"commands": []}}),
            await session.call_tool("run", {"command": "wordpress.run-php", "mount": []}),
            await session.call_tool("artifacts_verify", {"bundle": str(tmp_path / "nowhere")}),
            await session.call_tool("review_decide", {"bundle": ran.result["bundleDir"], "action": "approve-files",
                                                      "files": ["not-changed.php"]}),
            await session.call_tool("apply", {"decision": "999999", "adapter": "directory", "target": str(tmp_path)}),
            await session.call_tool("agent_task", {"task": {"task": "do nothing"}}),
        ]

    missing, whole_site, php, bad_policy, unknown, no_bundle, not_changed, no_decision, agents = with_client(
        ran.home, ran.log, body)
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


def test_a_command_the_policy_denies_is_a_failed_run_not_a_boot(ran: Ran, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> CallToolResult:
        return await session.call_tool("run", {"command": "wordpress.run-php", "args": ["code=echo 1;"],
                                               "policy": {"commands": ["inspect-mounted-inputs"]},
                                               "artifacts": str(tmp_path / "artifacts")})

    result = structured(with_client(ran.home, ran.log, body), ran.log)
    assert result["status"] == "failed" and result["run"]["success"] is False
    assert result["run"]["error"]["code"] == "runtime-command-disallowed", result["run"]["error"]
    assert result["run"]["executions"] == [] or result["run"]["executions"][-1]["exitCode"] != 0


def test_cancelling_the_request_cancels_the_run(ran: Ran, tmp_path: Path) -> None:
    """The client gives up while the command runs: the sandbox is killed, and the run is still captured
    and recorded, as cancelled."""
    log = tmp_path / "server.log"
    started: list[str] = []

    async def body(session: ClientSession) -> str:
        running = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            started.append(message or "")
            if (message or "").startswith("step 1:"):
                running.set()

        async with anyio.create_task_group() as group:
            group.start_soon(lambda: session.call_tool(
                "run", {"command": "wordpress.run-php", "args": ["code=sleep(300);"], "timeout": "10m",
                        "artifacts": str(tmp_path / "artifacts")}, progress_callback=on_progress))
            with anyio.fail_after(240):
                await running.wait()
            group.cancel_scope.cancel()
        run_id = next(m for m in started if m.startswith("run: ")).split()[1]
        with anyio.fail_after(120), Store.open() as store:  # the server finishes the run on its own
            while True:
                try:
                    status = str(store.get_run(run_id).status)
                except BadInputError:  # not recorded yet
                    status = ""
                if status in ("completed", "failed", "cancelled"):
                    return status
                await anyio.sleep(0.2)

    assert with_client(ran.home, log, body) == "cancelled"


def test_agent_task_runs_the_example_agent_and_echoes_the_callers_ids(ran: Ran, tmp_path: Path) -> None:
    """The ``agent_task`` tool through the SDK's client: the example agent edits its private workspace copy, the
    result is the ``codebox/agent-task/v1`` document, the bundle is in the store under the caller's session id."""
    workspace = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, workspace)
    before = tree(workspace)
    task = {"task": 'replace "Hello" with "Howdy"', "workspaces": [f"{workspace}:/workspace/simple-plugin"],
            "agent": [sys.executable, str(REPO / "examples" / "agents" / "example_agent.py")],
            "sandbox_session_id": "mcp-session-4", "orchestrator": {"type": "mcp-test", "id": "o-1", "job_id": "j-2"},
            "artifacts": str(tmp_path / "artifacts")}

    async def body(session: ClientSession) -> CallToolResult:
        return await session.call_tool("agent_task", {"task": task})

    doc = structured(with_client(ran.home, ran.log, body), ran.log)
    assert doc["schema"] == "codebox/agent-task/v1" and doc["success"] is True and doc["exitCode"] == 0
    assert doc["session"]["id"] == "mcp-session-4" and doc["session"]["status"] == "completed"
    assert doc["session"]["orchestrator"] == {"type": "mcp-test", "id": "o-1", "job_id": "j-2"}
    assert (doc["completion_outcome"]["status"], doc["completion_outcome"]["nextAction"]) == ("succeeded", "promote")
    assert doc["agent_result"]["changedFiles"]["paths"] == ["simple-plugin.php"]
    bundle = Path(doc["artifacts"]["directory"])
    assert "Howdy, %s!" in (bundle / "files" / "patch.diff").read_text()
    assert tree(workspace) == before  # the agent changed only the sandbox's copy
    with Store.open() as store:  # the fixture's home is this process's CODEBOX_HOME too
        (row,) = store.list_runs(sandbox_session_id="mcp-session-4")
        assert row.bundle_id == doc["artifacts"]["id"] and row.metadata["flow"] == "agent-task"

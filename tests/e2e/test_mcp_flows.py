"""The shell and the flows over MCP, end to end: the MCP SDK's own client against one real ``codebox mcp``
server subprocess for the module, through real native sandboxes (real PHP in real bubblewrap,
docs/backends.md) — ``execute`` (a read-only search on a fresh sandbox with a mount) and ``evaluate_patch``
(the buggy-counter fix: verdict improvement) through their own ``backend`` option, ``recipe_run`` and
``episode_run`` on the shipped examples through the server's ``CODEBOX_BACKEND=native`` — and bad input as tool
errors naming the field (docs/mcp.md). What is tested is the MCP tools, the same on both backends; each run
checks the backend its bundle records. A command refused for a capability it lacks is
tests/security/test_mcp_capabilities.py."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.types import CallToolResult

from tests.factories.mcp import error_text, structured, with_client
from tests.factories.native import recorded_backend
from tests.factories.paths import EXAMPLE_PLUGIN, REPO

# the module fixture boots three sandboxes and runs an evaluation on a shared machine
pytestmark = [pytest.mark.native, pytest.mark.timeout(1800)]

EXAMPLES = REPO / "examples"
PLUGIN_TARGET = "/wordpress/wp-content/plugins/simple-plugin"
GREETING = "Hello, recipe!"  # examples/plugins-for-recipes/shortcode-demo, called by the recipe
NEW_TOOLS = ("execute", "evaluate_patch", "recipe_run", "episode_run", "batch")


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@dataclass
class Session:
    """Everything the module's one server session returned, by call."""

    log: Path
    plugin: Path
    before: dict[str, str]
    buggy: Path
    buggy_before: dict[str, str]
    tools: dict[str, Any]
    results: dict[str, CallToolResult]
    progress: list[str]


@pytest.fixture(scope="module")
def served(codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Session:
    """One ``codebox mcp`` subprocess, one client session, every call of the module (three real sandboxes and
    one evaluation)."""
    root = tmp_path_factory.mktemp("mcp-flows")
    plugin = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    buggy = root / "buggy-counter"
    shutil.copytree(EXAMPLES / "plugins-for-recipes" / "buggy-counter", buggy)
    bad_batch = root / "bad.jsonl"
    bad_batch.write_text("not json\n", encoding="utf-8")
    bad_recipe = root / "bad-recipe.json"
    bad_recipe.write_text(
        json.dumps({"schema": "wp-codebox/workspace-recipe/v1", "workflow": {"steps": "no"}}), encoding="utf-8"
    )
    art = str(root / "artifacts")
    log = root / "server.log"
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    calls: dict[str, tuple[str, dict[str, Any]]] = {
        # the shell on the native backend (the same shell code as on Playground, in the sandbox's wall)
        "grep": (
            "execute",
            {
                "command": "on rg -n 'simple_plugin_greeting' --plugins",
                "mounts": [f"{plugin}:{PLUGIN_TARGET}:readonly"],
                "backend": "native",
                "artifacts": art,
            },
        ),
        # the native backend through the tool's own option (its PHP the host's): the verdict is the same on both
        "evaluate": (
            "evaluate_patch",
            {
                "plugin": str(buggy),
                "patch": str(EXAMPLES / "patches" / "buggy-counter-fix.patch"),
                "backend": "native",
                "artifacts": art,
            },
        ),
        # the recipe and the episode plan name no backend: the server's CODEBOX_BACKEND's (native)
        "recipe": ("recipe_run", {"recipe": str(EXAMPLES / "recipes" / "plugin-probe.json"), "artifacts": art}),
        "episode": ("episode_run", {"plan": str(EXAMPLES / "episode" / "plan.json"), "artifacts": art}),
        # bad input: refused before anything boots
        "held_with_mounts": (
            "execute",
            {"command": "ls", "sandbox": "runtime-abc", "mounts": [f"{plugin}:{PLUGIN_TARGET}"]},
        ),
        "no_held": ("execute", {"command": "ls", "sandbox": "runtime-not-held-here"}),
        "bad_capability": ("execute", {"command": "ls", "capabilities": ["read", "root"]}),
        "bad_timeout": ("execute", {"command": "ls", "timeout": "soon"}),
        "missing_mount": ("execute", {"command": "ls", "mounts": [f"{root / 'missing'}:{PLUGIN_TARGET}"]}),
        "no_patch": ("evaluate_patch", {"plugin": str(buggy)}),
        "no_plugin": ("evaluate_patch", {"plugin": str(root / "nowhere"), "patch": str(bad_recipe)}),
        "bad_recipe": ("recipe_run", {"recipe": str(bad_recipe)}),
        "bad_plan": ("episode_run", {"plan": str(bad_recipe)}),
        "bad_batch": ("batch", {"file": str(bad_batch)}),
        "no_batch": ("batch", {"file": str(root / "none.jsonl")}),
    }

    async def body(session: ClientSession) -> tuple[dict[str, Any], dict[str, CallToolResult]]:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        results = {}
        for key, (tool, arguments) in calls.items():
            results[key] = await session.call_tool(
                tool, arguments, progress_callback=on_progress if key == "grep" else None
            )
        return tools, results

    before, buggy_before = tree(plugin), tree(buggy)
    tools, results = with_client(codebox_home, log, body, env={"CODEBOX_BACKEND": "native"})
    return Session(log, plugin, before, buggy, buggy_before, tools, results, progress)


def test_the_new_tools_are_listed_with_input_and_output_schemas(served: Session) -> None:
    for name in NEW_TOOLS:
        tool = served.tools[name]
        assert tool.input_schema["additionalProperties"] is False, name  # a misspelt argument is refused
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        assert tool.annotations.read_only_hint is False, name
    execute = served.tools["execute"]
    assert execute.input_schema["required"] == ["command"]
    capabilities = execute.input_schema["properties"]["capabilities"]
    assert capabilities["items"]["enum"] == ["read", "write", "eval"] and capabilities["default"] == ["read"]
    assert {"sandbox", "cwd", "mounts", "timeout", "max_output"} <= set(execute.input_schema["properties"])
    assert execute.output_schema["title"] == "ExecuteResult"
    result_schema = execute.output_schema["$defs"]["ExecResult"]["properties"]
    assert {"classification", "exitCode", "stdout", "stderr", "capabilities", "sandboxId"} <= set(result_schema)
    assert served.tools["evaluate_patch"].input_schema["required"] == ["plugin"]
    assert {"patch", "git_range"} <= set(served.tools["evaluate_patch"].input_schema["properties"])
    assert served.tools["recipe_run"].input_schema["required"] == ["recipe"]
    assert served.tools["episode_run"].input_schema["required"] == ["plan"]
    assert served.tools["batch"].input_schema["required"] == ["file"]
    assert served.tools["batch"].output_schema["title"] == "FlowResult"


def test_execute_a_read_only_search_on_a_fresh_sandbox(served: Session) -> None:
    out = structured(served.results["grep"], served.log)
    result = out["result"]
    assert result["schema"] == "wp-codebox/exec-result/v1"
    assert result["classification"] == "read_only" and result["capabilities"] == ["read"]
    assert result["exitCode"] == 0 and result.get("error") is None
    assert f"{PLUGIN_TARGET}/simple-plugin.php:12:function simple_plugin_greeting" in result["stdout"]
    assert result["sandboxId"] and result["runtimeId"]
    assert out["status"] == "completed"
    bundle = out["bundle"]
    assert Path(bundle["bundleDir"]).is_dir() and len(bundle["contentDigestB"]) == 64
    assert isinstance(bundle["inboxKey"], int)
    # the exec is in the run's bundle
    commands = (Path(bundle["bundleDir"]) / "commands.jsonl").read_text()
    assert "on rg -n 'simple_plugin_greeting' --plugins" in commands
    assert recorded_backend(Path(bundle["bundleDir"])) == "native"
    assert any(m.startswith("ready:") for m in served.progress), served.progress
    assert tree(served.plugin) == served.before


def test_evaluate_patch_of_the_buggy_counter_fix_is_an_improvement(served: Session) -> None:
    out = structured(served.results["evaluate"], served.log)
    doc = out["document"]
    assert out["success"] is True and doc["applied"] is True
    assert doc["tests"]["verdict"] == "improvement"
    assert doc["tests"]["fixed"] == ["CountTest::test_repeated_spaces"]
    assert out["bundle"]["bundleDir"] == doc["bundleDir"] and len(out["bundle"]["contentDigestB"]) == 64
    assert isinstance(out["bundle"]["inboxKey"], int)
    assert (Path(doc["bundleDir"]) / "files" / "evaluate-patch.json").is_file()
    assert recorded_backend(Path(doc["bundleDir"])) == "native"
    # a clean verdict: Codebox's own front-end error probe, written into mu-plugins and removed, leaves no trace
    # (docs/site-state.md, "Attribution"; the same fix with a plant is tests/security/test_site_state_attribution.py)
    assert "siteStateRisks" not in doc
    site_state = json.loads((Path(doc["bundleDir"]) / "files" / "site-state-diff.json").read_text())
    assert site_state["controlFiles"] == [], site_state
    assert tree(served.buggy) == served.buggy_before  # the plugin folder is never modified


def test_recipe_run_of_an_example_recipe(served: Session) -> None:
    out = structured(served.results["recipe"], served.log)
    doc = out["document"]
    assert out["success"] is True and doc["status"] == "passed", doc.get("failures")
    assert [e["exitCode"] for e in doc["executions"]] == [0, 0], doc["executions"]
    commands = (Path(doc["bundleDir"]) / "commands.jsonl").read_text()
    assert GREETING in commands
    assert out["bundle"]["bundleDir"] == doc["bundleDir"] and isinstance(out["bundle"]["inboxKey"], int)
    assert recorded_backend(Path(doc["bundleDir"])) == "native"


def test_episode_run_of_the_example_plan(served: Session) -> None:
    out = structured(served.results["episode"], served.log)
    doc = out["document"]
    assert doc["schema"] == "codebox/episode-result/v1"
    assert out["success"] is True and doc["status"] == "completed", doc.get("error")
    assert [s["exitCode"] for s in doc["steps"]] == [0, 0, 0]
    assert doc["snapshots"] and doc["trace"] == "files/runtime-episode-trace.json"
    assert (Path(out["bundle"]["bundleDir"]) / doc["trace"]).is_file()
    assert recorded_backend(Path(out["bundle"]["bundleDir"])) == "native"
    # the plan's http-response observation: a page native serves through its own preview (docs/backends.md)
    trace = json.loads((Path(out["bundle"]["bundleDir"]) / doc["trace"]).read_text())
    pages = [
        s["observation"]["data"] for s in trace["steps"] if s.get("observation", {}).get("type") == "http-response"
    ]
    assert [(page["path"], page["status"]) for page in pages] == [("/", 200)], pages


def test_bad_input_is_a_tool_error_naming_the_field(served: Session) -> None:
    r = served.results
    expected = {
        "held_with_mounts": ("mounts:", "invalid-option"),
        "no_held": ("sandbox:", "no-held-sandbox"),
        "bad_capability": ("capabilities", "read"),
        "bad_timeout": ("timeout:", "soon"),
        "missing_mount": ("mounts[0].source:", "missing-mount-source"),
        "no_patch": ("patch:", "git_range"),
        "no_plugin": ("plugin:", "path-missing"),
        "bad_recipe": ("recipe:", "$.workflow.steps"),
        "bad_plan": ("invalid-episode-plan", "$"),
        "bad_batch": ("line 1:", "invalid-batch-item"),
        "no_batch": ("file:", "path-missing"),
    }
    for key, (field, detail) in expected.items():
        text = error_text(r[key])
        assert field in text and detail in text, (key, text)
        assert "Traceback" not in text, key

"""The MCP server's tools in process (the SDK's in-memory client): published schemas, closed arguments and
tool errors that name the argument — all before anything boots. The stdio server with a real Playground
run is tests/e2e/test_mcp.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult

from codebox_tui.errors import BadInputError, ConflictError
from codebox_tui.mcp_server import build_server
from codebox_tui.mcp_server.server import tool_error

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


def call(name: str, arguments: dict[str, Any]) -> CallToolResult:
    async def main() -> CallToolResult:
        async with Client(build_server()) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(main)


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return "".join(getattr(c, "text", "") for c in result.content)


def test_every_tool_publishes_closed_input_and_typed_output_schemas() -> None:
    async def main() -> Any:
        async with Client(build_server()) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(main)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.output_schema is not None and tool.description, tool.name
    assert tools["review_decide"].input_schema["required"] == ["bundle", "action"]
    assert tools["review_decide"].input_schema["properties"]["action"]["enum"] == [
        "approve",
        "approve-files",
        "discard",
    ]
    assert tools["apply"].output_schema["properties"]["schema"]["const"] == "wp-codebox/apply-result/v1"
    assert tools["artifacts_verify"].output_schema["title"] == "BundleVerification"
    assert tools["list_runs"].input_schema["properties"]["limit"]["maximum"] == 1000


@pytest.mark.parametrize(
    "arguments, expected",
    [
        (
            {
                "command": "wordpress.run-php",
                "args": ["code=echo 1;"],
                "mounts": ["/no/such/folder:/wordpress/wp-content/x"],
            },
            "mounts[0].source:",
        ),
        ({"command": "no.such.command"}, "command: Unknown command 'no.such.command'"),
        ({"command": "wordpress.run-php", "args": ["code=echo 1;"], "wp": "1.0"}, "wp:"),
        ({"command": "wordpress.run-php", "args": ["code=echo 1;"], "timeout": "soon"}, "timeout:"),
        ({"command": "wordpress.run-php", "args": ["code=echo 1;"], "env": {"1BAD": "x"}}, "env"),
        ({"command": "wordpress.run-php", "args": ["code=echo 1;"], "policy": "{not json"}, "policy:"),
        ({"command": "wordpress.run-php", "args": ["code=echo 1;"], "wp_cli_phar": "/no/wp-cli.phar"}, "wp_cli_phar:"),
        ({"command": "wordpress.run-php", "mountz": ["x:/y"]}, "mountz"),
    ],
)
def test_run_refuses_bad_input_before_booting(arguments: dict[str, Any], expected: str) -> None:
    text = error_text(call("run", arguments))
    assert text.startswith("Error executing tool run: ") and expected in text, text
    assert "Traceback" not in text


def test_bundle_tools_name_the_bundle_argument(tmp_path: Path) -> None:
    assert "bundle:" in error_text(call("artifacts_show", {"bundle": str(tmp_path / "missing")}))
    assert "bundle:" in error_text(call("artifacts_verify", {"bundle": str(tmp_path)}))  # no manifest.json
    assert "sort:" in error_text(call("list_runs", {"sort": "random"}))
    assert "filter:" in error_text(call("list_runs", {"filter": "everything"}))


def test_list_runs_returns_the_inbox_rows() -> None:
    result = call("list_runs", {"limit": 5})
    assert not result.is_error
    assert isinstance(result.structured_content, dict)
    assert set(result.structured_content) == {"rows", "total"}
    assert len(result.structured_content["rows"]) <= 5


def test_an_agent_task_that_is_not_one_is_refused_naming_the_field() -> None:
    text = error_text(call("agent_task", {"task": {"not": "a task"}}))
    assert "$.not: unknown field" in text and "invalid-agent-task" in text


def test_tool_errors_use_the_tool_argument_names() -> None:
    assert (
        str(tool_error(BadInputError("bad hunk", code="hunk-invalid", field="--hunk")))
        == "hunks: bad hunk [hunk-invalid]"
    )
    assert (
        str(
            tool_error(
                ConflictError("changed", code="digest", field="content_digest", details={"hint": "review it again"})
            )
        )
        == "content_digest: changed [digest] (hint: review it again)"
    )
    assert str(tool_error(BadInputError("no field", code="x"))) == "no field [x]"

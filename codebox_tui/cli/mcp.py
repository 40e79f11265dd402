"""``codebox mcp``: serve Codebox's operations to an MCP host over stdio (docs/mcp.md)."""

from __future__ import annotations

import typer

from codebox_tui.mcp_server import serve_stdio


def mcp_command() -> None:
    """Serve the MCP tools (run, artifacts_show, artifacts_verify, review_decide, apply, list_runs,
    agent_task, execute, evaluate_patch, recipe_run, episode_run, batch) over stdin/stdout until the client
    disconnects; logs go to stderr."""
    # Deferred: the MCP SDK takes a second or more to import, which no other command should pay
    # (docs/architecture.md, "Module map": slow third-party imports stay in the function that needs them).
    serve_stdio()


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)

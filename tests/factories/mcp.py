"""The MCP SDK's own client against the real ``codebox mcp`` server, spawned as a subprocess over stdio
(docs/mcp.md): one session per call of :func:`with_client`, the server's stderr appended to a log."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from tests.factories.paths import REPO


def with_client(
    home: Path, log: Path, body: Callable[[ClientSession], Awaitable[Any]], env: dict[str, str] | None = None
) -> Any:
    """Spawn ``codebox mcp`` (stderr to ``log``; ``env`` added to its environment), open an SDK client session on
    its stdio and run ``body``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "CODEBOX_HOME": str(home),
        "CODEBOX_SPARE_SANDBOXES": "off",
        **(env or {}),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "codebox_tui", "mcp"], env=env, cwd=str(REPO))

    async def main() -> Any:
        with log.open("a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    return anyio.run(main)


def structured(result: CallToolResult, log: Path) -> dict[str, Any]:
    """A successful tool result's structured content (the server's log tail in the failure message)."""
    text = "".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{text}\n--- server log ---\n{log.read_text(errors='replace')[-4000:]}"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    """A tool error's text (it has no structured content)."""
    assert result.is_error, result.structured_content
    assert result.structured_content is None
    return "".join(getattr(c, "text", "") for c in result.content)

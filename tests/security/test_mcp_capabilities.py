"""Attack: an MCP client asks ``execute`` to write through a live mount (one whose writes reach the host
folder) without the write capability. The command is classified before it runs, refused, and the refusal
is a tool error naming ``capabilities`` — the host folder is unchanged (docs/mcp.md, docs/exec.md). The
default capabilities of the tool are read only: a client that names none cannot write. A held-sandbox id
that climbs out of the held folder is refused before any socket is touched. Real SDK client, real server
subprocess, real Playground sandbox."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.types import CallToolResult

from tests.factories.mcp import error_text, with_client
from tests.factories.paths import EXAMPLE_PLUGIN

pytestmark = [pytest.mark.playground, pytest.mark.timeout(900)]

TARGET = "/wordpress/wp-content/plugins/simple-plugin"


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_write_without_the_write_capability_is_refused_and_reaches_nothing(
    playground_session: Any, codebox_home: Path, tmp_path: Path
) -> None:
    plugin = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    before = tree(plugin)
    log = tmp_path / "server.log"
    attack = (
        f"echo '<?php system($_GET[\"c\"]);' > {TARGET}/backdoor.php; sed -i s/Hello/Pwned/ {TARGET}/simple-plugin.php"
    )

    async def body(session: ClientSession) -> tuple[CallToolResult, CallToolResult]:
        write = await session.call_tool(
            "execute",
            {"command": attack, "mounts": [f"{plugin}:{TARGET}:live"], "artifacts": str(tmp_path / "artifacts")},
        )
        climb = await session.call_tool("execute", {"command": "ls", "sandbox": "../../../tmp/evil"})
        return write, climb

    write, climb = with_client(codebox_home, log, body)
    text = error_text(write)
    assert text.startswith("Error executing tool execute: capabilities:"), text
    assert "[capability-denied]" in text and "write" in text
    assert "Traceback" not in text
    assert tree(plugin) == before  # nothing written through the live mount
    assert not (plugin / "backdoor.php").exists()
    # refused before anything booted, as `codebox exec` refuses it: no run, no bundle
    assert not list((tmp_path / "artifacts").glob("*/commands.jsonl"))
    climbed = error_text(climb)
    assert climbed.startswith("Error executing tool execute: sandbox:") and "invalid-sandbox-id" in climbed

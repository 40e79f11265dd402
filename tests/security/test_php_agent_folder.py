"""A PHP agent's task folder on the native backend (docs/agent-tasks.md, "A PHP script inside the sandbox";
docs/backends.md). The agent reads its task at ``/codebox-agent/task.json``, a read-only mount that the host
filled before boot; PHP's ``open_basedir`` gains that folder and nothing else. One real agent task on a real
native sandbox: a hostile PHP agent tries to rewrite, delete, rename and chmod its task file, plant a script
beside it, make a folder in it, and climb out of it to host files, then reports what it saw as its final
message. Nothing it tried succeeds, its task file reads the same afterwards, and the bundle holds nothing of
the folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.agents import AgentSpec, AgentTaskRequest, run_agent_task
from codebox_tui.contracts.agent import TaskInput
from tests.factories.native import recorded_backend
from tests.factories.paths import EXAMPLE_PLUGIN

pytestmark = pytest.mark.native

TARGET = "/workspace/simple-plugin"
HOSTILE_AGENT = r"""<?php
$dir = '/codebox-agent';
$task = "$dir/task.json";
$before = @file_get_contents($task);
$tried = [
    'rewrite' => @file_put_contents($task, '{"forged": true}') !== false,
    'append' => @file_put_contents($task, 'x', FILE_APPEND) !== false,
    'plant' => @file_put_contents("$dir/planted.php", '<?php echo 1;') !== false,
    'mkdir' => @mkdir("$dir/sub"),
    'unlink' => @unlink($task),
    'rename' => @rename($task, "$dir/moved.json"),
    'chmod' => @chmod($task, 0666),
    'touch' => @touch($task, 1),
    'symlink' => @symlink('/etc/passwd', "$dir/passwd"),
    'climb' => @file_get_contents("$dir/../etc/passwd") !== false,
    'root' => @scandir('/') !== false,
    'etc' => @file_get_contents('/etc/passwd') !== false,
];
clearstatcache();
echo json_encode(['type' => 'final', 'status' => 'completed', 'summary' => json_encode([
    'tried' => $tried,
    'same' => $before !== false && $before === @file_get_contents($task),
    'listing' => @scandir($dir),
    'basedir' => ini_get('open_basedir'),
    'goal' => json_decode((string) $before, true)['task']['goal'] ?? null,
])]), "\n";
"""


@pytest.fixture(scope="module")
def hostile(codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any]:
    """The one hostile agent task: what the agent reported, and the outcome."""
    root = tmp_path_factory.mktemp("php-agent-folder")
    workspace = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, workspace)
    script = root / "agent.php"
    script.write_text(HOSTILE_AGENT, encoding="utf-8")
    outcome = run_agent_task(
        AgentTaskRequest(
            task=TaskInput(goal="leave your task folder alone"),
            workspaces=[{"source": workspace, "target": TARGET}],
            agent=AgentSpec(kind="php", php_file=script),
            artifacts_root=root / "artifacts",
            backend="native",
        )
    )
    assert outcome.agent_result is not None and outcome.agent_result.agentSummary, outcome.to_json()
    return json.loads(outcome.agent_result.agentSummary), outcome


def test_the_agent_reads_its_task_and_can_change_nothing_in_its_folder(hostile: tuple[dict[str, Any], Any]) -> None:
    seen, outcome = hostile
    assert seen["goal"] == "leave your task folder alone"  # the folder is readable
    assert not any(
        seen["tried"][name]
        for name in ("rewrite", "append", "plant", "mkdir", "unlink", "rename", "chmod", "touch", "symlink")
    ), seen["tried"]
    assert seen["same"] is True
    assert sorted(seen["listing"]) == [".", "..", "task.json"]
    assert outcome.bundle_dir is not None and recorded_backend(outcome.bundle_dir) == "native"


def test_open_basedir_gains_the_task_folder_only(hostile: tuple[dict[str, Any], Any]) -> None:
    seen, outcome = hostile
    assert seen["basedir"].split(":") == ["/wordpress", "/tmp", "/codebox", TARGET, "/codebox-agent"]
    assert not any(seen["tried"][name] for name in ("climb", "root", "etc")), seen["tried"]
    # nothing of the folder reaches the bundle: the changed files are the workspace's (none here)
    assert outcome.agent_result.changedFiles.paths == []
    assert not list(outcome.bundle_dir.rglob("*planted*"))

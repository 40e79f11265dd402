"""End-to-end through the `codebox` CLI in a child process: `boot --hold` serves a live preview and
disposes when the hold expires; a `run` leaves nothing behind in its temp directory."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_PLUGIN, REPO

pytestmark = pytest.mark.playground


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(tmp: Path) -> dict[str, str]:
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp)}


def test_boot_hold_serves_the_preview_then_disposes(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "boot",
            "--hold",
            "60s",
            "--preview-port",
            str(port),
            "--artifacts",
            str(tmp_path / "artifacts"),
            "--json",
        ],
        cwd=REPO,
        env=_env(tmp_path / "tmp"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []  # one JSON document, printed once the sandbox is ready
        while not lines or lines[-1] not in ("}\n", ""):
            lines.append(proc.stdout.readline())
        doc = json.loads("".join(lines))
        assert doc["success"] is True
        assert doc["previewUrl"] == f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(doc["previewUrl"] + "/?rest_route=/", timeout=60) as response:
            assert response.status == 200
            assert json.loads(response.read())["name"]  # the WordPress REST index
        proc.send_signal(2)  # Ctrl-C ends the hold early
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
    run_dir = Path(doc["artifacts"]["directory"])
    types = [json.loads(x)["type"] for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert types.index("runtime.ready") < types.index("runtime.held") < types.index("runtime.disposed")
    assert json.loads((run_dir / "events.jsonl").read_text().splitlines()[-2])["data"] == {"reason": "interrupted"}


def test_run_leaves_no_temp_directories_or_processes(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "run",
            "--mount",
            f"{EXAMPLE_PLUGIN}:/wordpress/wp-content/plugins/simple-plugin:readonly",
            "--command",
            "wordpress.run-php",
            "--arg",
            f"code-file={EXAMPLE_PLUGIN / 'probe.php'}",
            "--artifacts",
            str(tmp_path / "artifacts"),
            "--json",
        ],
        cwd=REPO,
        env=_env(tmp),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["success"] is True
    time.sleep(0.5)
    assert sorted(os.listdir(tmp)) == []
    assert _processes_using(tmp) == []


def test_hung_command_is_killed_reported_and_leaves_nothing(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    out = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "run", "--command", "wordpress.run-php",
         "--arg", "code=while (true) {}", "--timeout", "5s", "--artifacts", str(tmp_path / "artifacts"), "--json"],
        cwd=REPO, env=_env(tmp), capture_output=True, text=True, timeout=300)
    assert out.returncode == 4, out.stderr  # SandboxError
    doc = json.loads(out.stdout)
    assert doc["success"] is False and doc["error"]["code"] == "sandbox-timeout"
    time.sleep(0.5)
    assert sorted(os.listdir(tmp)) == []  # Playground's site temp dir went with the killed sidecar
    assert _processes_using(tmp) == []


def _processes_using(tmp: Path) -> list[int]:
    """Processes whose environment points TMPDIR at ``tmp`` (the run's sidecar would)."""
    needle = f"TMPDIR={tmp}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                found.append(int(entry))
    return found


def test_runtime_env_reaches_php_getenv_and_the_bundle_metadata(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "run", "--command", "wordpress.run-php",
         "--env", "CODEBOX_MODE=review-mode-42", "--env", "EMPTY_ONE=",
         "--arg", "code=echo getenv('CODEBOX_MODE'), '|', $_ENV['CODEBOX_MODE'], '|', var_export(getenv('EMPTY_ONE'), true);",
         "--artifacts", str(tmp_path / "artifacts"), "--json"],
        cwd=REPO, env=_env(tmp_path / "tmp"), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["execution"]["stdout"] == "review-mode-42|review-mode-42|''"
    metadata = json.loads((Path(doc["artifacts"]["directory"]) / "metadata.json").read_text())
    assert metadata["runtime"]["environment"]["runtimeEnv"] == {"CODEBOX_MODE": "review-mode-42", "EMPTY_ONE": ""}

    bad = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "run", "--command", "wordpress.run-php", "--env", "bad-name=1",
         "--arg", "code=echo 1;", "--artifacts", str(tmp_path / "artifacts"), "--json"],
        cwd=REPO, env=_env(tmp_path / "tmp"), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    error = json.loads(bad.stdout)["error"]
    assert error["field"] == "env.bad-name" and "^[A-Z_][A-Z0-9_]*$" in error["message"]

"""End-to-end through the `codebox` CLI in a child process: `boot --hold` serves a live preview and
disposes when the hold expires; a `run` leaves nothing behind in its temp directory."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from store.db import Store
from tests.factories.paths import EXAMPLE_PLUGIN, REPO
from tests.factories.toolchains import WP_CLI_PHAR, require
from tests.factories.waiting import process_finished, wait_for_reaper, wait_until

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
            "10m",  # ended by Ctrl-C below, long before it expires
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
        # a pytest-xdist worker ignores SIGINT, and an ignored signal stays ignored in its children: give the
        # command the disposition it has when a user starts it from a terminal
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
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
        try:  # then the after-summary, capture and disposal: seconds, more on a loaded CI machine
            _, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
            raise AssertionError(f"codebox boot --hold did not end within 120 s of Ctrl-C; stderr:\n{stderr}") from None
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
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["data"] for e in events if e["type"] == "runtime.hold-ended"] == [{"reason": "interrupted"}]


def test_run_leaves_no_temp_directories_or_processes(tmp_path: Path) -> None:
    from codebox_tui.runtime.playground import OWNER_FILE
    from codebox_tui.settings import get_settings

    tmp = tmp_path / "tmp"
    # a sandbox folder left by a process that was killed before it could dispose it: swept by this run
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    abandoned = get_settings().home / "sandboxes" / "sandbox-abandoned0"
    (abandoned / "wordpress").mkdir(parents=True)
    (abandoned / OWNER_FILE).write_text(str(dead.pid))
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
    wait_until(lambda: not os.listdir(tmp) and not _processes_using(tmp) and not abandoned.exists())
    assert sorted(os.listdir(tmp)) == []
    assert _processes_using(tmp) == []
    assert not abandoned.exists()


def _processes_of(home: Path) -> list[int]:
    """Live processes that name ``home`` in their command line or environment: the run's CLI, its bwrap, Node
    sidecar (HOME under it) and reaper (its folders are under it)."""
    needle = str(home).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or process_finished(int(entry)):
            continue
        try:
            seen = Path(f"/proc/{entry}/cmdline").read_bytes() + Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in seen:
            found.append(int(entry))
    return found


def test_run_prints_and_records_first_then_a_detached_reaper_removes_its_folders(
        tmp_path: Path, codebox_home: Path) -> None:
    """Issue 27: disposal is off the critical path. The sandbox is stopped before capture (nothing writes
    while the bundle is read); the result and the inbox row come next; only then are the sandbox's folders
    handed to a detached reaper, which the CLI does not wait for. Once the reaper has finished, nothing of
    the run is left: no process, no folder."""
    home = tmp_path / "home"
    home.mkdir()
    (codebox_home / "golden").mkdir(exist_ok=True)
    (home / "golden").symlink_to(codebox_home / "golden")  # the shared, read-mostly cache of WordPress sites
    plugin = tmp_path / "plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    tmp = tmp_path / "tmp"
    out = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "run", "--mount", f"{plugin}:/wordpress/wp-content/plugins/p",
         "--command", "wordpress.run-php", "--arg", "code=file_put_contents(__DIR__ . '/x', 1); echo 'ran';",
         "--artifacts", str(tmp_path / "artifacts")],
        cwd=REPO, env={**_env(tmp), "CODEBOX_HOME": str(home)}, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ran\n"
    lines = out.stderr.splitlines()

    def at(phase: str) -> int:
        matches = [i for i, line in enumerate(lines) if f"] {phase}: " in line]
        assert len(matches) == 1, (phase, out.stderr)
        return matches[0]

    # stopped (fast) → captured → recorded in the inbox → the result → only then the removal starts
    assert at("disposed") < at("capture") < at("inbox") < at("done") < at("cleanup"), out.stderr
    reaper = int(re.search(r"background \(pid (\d+)\)", lines[at("cleanup")]).group(1))  # type: ignore[union-attr]
    with Store.open(home / "codebox.sqlite3") as store:
        assert [run.status for run in store.list_runs()] == ["completed"]

    assert wait_for_reaper(reaper), "the reaper did not finish"
    assert wait_until(lambda: not _processes_of(home)), _processes_of(home)
    sandboxes = home / "sandboxes"
    assert sorted(os.listdir(sandboxes)) == [".readonly"] and os.listdir(sandboxes / ".readonly") == []
    assert os.listdir(home / "baselines") == []
    assert os.listdir(tmp) == []  # the sidecar's temp folder and log, the staged tools
    assert sorted(os.listdir(plugin)) == sorted(os.listdir(EXAMPLE_PLUGIN))  # copy-on-write: only the bundle has x


def test_hung_command_is_killed_reported_and_leaves_nothing(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    out = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "run", "--command", "wordpress.run-php",
         "--arg", "code=while (true) {}", "--timeout", "5s", "--artifacts", str(tmp_path / "artifacts"), "--json"],
        cwd=REPO, env=_env(tmp), capture_output=True, text=True, timeout=300)
    assert out.returncode == 4, out.stderr  # SandboxError
    doc = json.loads(out.stdout)
    assert doc["success"] is False and doc["error"]["code"] == "sandbox-timeout"
    wait_until(lambda: not os.listdir(tmp) and not _processes_using(tmp))
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


# WP-CLI's release phar from ../shared/toolchains, given with --wp-cli-phar as a user gives their own: the
# whole wordpress.wp-cli path (the phar mount, PHP-wasm executing a phar with argv, WordPress loading inside
# it, stdout/stderr/exit code capture and the shebang line stripped).


def test_wp_cli_runs_a_phar_inside_the_sandbox(tmp_path: Path) -> None:
    require(WP_CLI_PHAR)
    phar = WP_CLI_PHAR
    assert phar.read_bytes()[:64].startswith(b"#!/usr/bin/env php")

    def wp(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codebox_tui", "run", "--wp-cli-phar", str(phar),
             "--command", "wordpress.wp-cli", "--arg", f"command={command}",
             "--artifacts", str(tmp_path / "artifacts"), "--json"],
            cwd=REPO, env=_env(tmp_path / "tmp"), capture_output=True, text=True, timeout=300)

    out = wp("wp option get siteurl")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["execution"]["exitCode"] == 0
    assert doc["execution"]["stdout"].strip().startswith("http")  # WordPress answered from inside the phar
    assert "#!/usr/bin/env php" not in doc["execution"]["stdout"]

    failed = wp("plugin frobnicate")
    doc = json.loads(failed.stdout)
    assert doc["execution"]["exitCode"] == 1
    assert "'frobnicate' is not a registered subcommand of 'plugin'" in doc["execution"]["stderr"]
    assert failed.returncode != 0

    missing = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "run", "--wp-cli-phar", str(tmp_path / "nope.phar"),
         "--command", "wordpress.wp-cli", "--arg", "command=option get home",
         "--artifacts", str(tmp_path / "artifacts"), "--json"],
        cwd=REPO, env=_env(tmp_path / "tmp"), capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2
    error = json.loads(missing.stdout)["error"]
    assert error["code"] == "wp-cli-phar-missing" and "nope.phar" in error["message"]

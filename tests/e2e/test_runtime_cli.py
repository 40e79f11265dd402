"""End-to-end through the `codebox` CLI in a child process, on Playground (the sidecar's own lifecycle: its
held preview, its temp folders and processes, a hung command killing it, PHP-wasm's environment and a phar):
`boot --hold` serves a live preview and disposes when the hold expires; a `run` leaves nothing behind in its temp
directory. The native backend's counterparts are tests/e2e/test_native_backend.py's and test_native_shell.py's."""

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
from typing import Any

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


def _codebox(*args: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """One `codebox` command to its end, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


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


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory, codebox_home: Path) -> dict[str, Any]:
    """One `codebox run` on Playground checked by the three tests below (one boot instead of three): in a home of
    its own (the session's WordPress sites linked in) holding a sandbox folder left by a process killed before it
    could dispose of it, with TMPDIR pointed at a fresh folder, runtime environment variables, a read-only and a
    copy-on-write mount, and a command that writes into the latter and prints what getenv() saw."""
    from codebox_tui.runtime.playground import OWNER_FILE

    root = tmp_path_factory.mktemp("finished-run")
    home = root / "home"
    home.mkdir()
    (codebox_home / "golden").mkdir(exist_ok=True)
    (home / "golden").symlink_to(codebox_home / "golden")  # the shared, read-mostly cache of WordPress sites
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    abandoned = home / "sandboxes" / "sandbox-abandoned0"
    (abandoned / "wordpress").mkdir(parents=True)
    (abandoned / OWNER_FILE).write_text(str(dead.pid))
    plugin = root / "plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    tmp = root / "tmp"
    code = (
        "file_put_contents(__DIR__ . '/x', 1); echo getenv('CODEBOX_MODE'), '|', $_ENV['CODEBOX_MODE'], '|', "
        "var_export(getenv('EMPTY_ONE'), true);"
    )
    out = _codebox(
        "run",
        "--mount",
        f"{plugin}:/wordpress/wp-content/plugins/p",
        "--mount",
        f"{EXAMPLE_PLUGIN}:/wordpress/wp-content/plugins/simple-plugin:readonly",  # a staged copy
        "--command",
        "wordpress.run-php",
        "--env",
        "CODEBOX_MODE=review-mode-42",
        "--env",
        "EMPTY_ONE=",
        "--arg",
        f"code={code}",
        "--artifacts",
        str(root / "artifacts"),
        env={**_env(tmp), "CODEBOX_HOME": str(home)},
        timeout=300,
    )
    return {
        "out": out,
        "home": home,
        "tmp": tmp,
        "plugin": plugin,
        "abandoned": abandoned,
        "artifacts": root / "artifacts",
    }


def test_run_leaves_no_temp_directories_or_processes(finished_run: dict[str, Any]) -> None:
    """The run's temp folder is left empty with no process using it, and the sandbox folder of the killed
    process is swept."""
    tmp, abandoned = finished_run["tmp"], finished_run["abandoned"]
    assert finished_run["out"].returncode == 0, finished_run["out"].stderr
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


def test_run_prints_and_records_first_then_a_detached_reaper_removes_its_folders(finished_run: dict[str, Any]) -> None:
    """Issue 27: disposal is off the critical path. The sandbox is stopped before capture (nothing writes
    while the bundle is read); the result and the inbox row come next; only then are the sandbox's folders
    handed to a detached reaper, which the CLI does not wait for. Once the reaper has finished, nothing of
    the run is left: no process, no folder."""
    out, home, tmp, plugin = (finished_run[key] for key in ("out", "home", "tmp", "plugin"))
    assert out.returncode == 0, out.stderr
    assert out.stdout == "review-mode-42|review-mode-42|''\n"  # the command's output, printed
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
    out = _codebox(
        "run",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=while (true) {}",
        "--timeout",
        "1s",  # the loop never ends: any limit is hit, and each second of it is a second of the test's CPU
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        env=_env(tmp),
        timeout=300,
    )
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


def test_runtime_env_reaches_php_getenv_and_the_bundle_metadata(finished_run: dict[str, Any], tmp_path: Path) -> None:
    out = finished_run["out"]
    assert out.returncode == 0, out.stderr
    assert out.stdout == "review-mode-42|review-mode-42|''\n"  # getenv() and $_ENV, an empty value kept empty
    [run_dir] = finished_run["artifacts"].iterdir()
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["runtime"]["environment"]["runtimeEnv"] == {"CODEBOX_MODE": "review-mode-42", "EMPTY_ONE": ""}

    bad = _codebox(
        "run",
        "--command",
        "wordpress.run-php",
        "--env",
        "bad-name=1",
        "--arg",
        "code=echo 1;",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        env=_env(tmp_path / "tmp"),
        timeout=120,
    )
    assert bad.returncode == 2
    error = json.loads(bad.stdout)["error"]
    assert error["field"] == "env.bad-name" and "^[A-Z_][A-Z0-9_]*$" in error["message"]


# WP-CLI's release phar from ../shared/toolchains, given with --wp-cli-phar as a user gives their own: a failing
# subcommand's exit code and stderr come back from PHP-wasm running the phar; a phar that is not there is refused
# before anything boots. A succeeding call (the phar run with argv, WordPress loaded inside it, its stdout without
# the shebang line) is test_backend_parity.py's `option get blogname`, on Playground and natively.


def test_wp_cli_runs_a_phar_inside_the_sandbox(tmp_path: Path) -> None:
    require(WP_CLI_PHAR)
    phar = WP_CLI_PHAR
    assert phar.read_bytes()[:64].startswith(b"#!/usr/bin/env php")

    failed = _codebox(
        "run",
        "--wp-cli-phar",
        str(phar),
        "--command",
        "wordpress.wp-cli",
        "--arg",
        "command=plugin frobnicate",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        env=_env(tmp_path / "tmp"),
        timeout=300,
    )
    doc = json.loads(failed.stdout)
    assert doc["runtime"]["backend"] == "wordpress-playground"
    assert doc["execution"]["exitCode"] == 1
    assert "'frobnicate' is not a registered subcommand of 'plugin'" in doc["execution"]["stderr"]
    assert "#!/usr/bin/env php" not in doc["execution"]["stdout"]
    assert failed.returncode != 0

    missing = _codebox(
        "run",
        "--wp-cli-phar",
        str(tmp_path / "nope.phar"),
        "--command",
        "wordpress.wp-cli",
        "--arg",
        "command=option get home",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        env=_env(tmp_path / "tmp"),
        timeout=120,
    )
    assert missing.returncode == 2
    error = json.loads(missing.stdout)["error"]
    assert error["code"] == "wp-cli-phar-missing" and "nope.phar" in error["message"]

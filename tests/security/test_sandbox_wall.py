"""The wall around the Node sidecar (docs/security.md, "Layers"). Every test performs the attack for
real, with PHP inside a real Playground sandbox, and checks the host afterwards. All of it is Playground's own
(the sidecar, its PHP runtimes, its mounts and preview), so nothing here moves to the native backend; the attacks
that need no sandbox of their own (no mount, no other network policy or preview address) share one
(``shared_sandbox``, with the one read-only mount the chmod attack needs), each leaving its marks in its own
paths."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.runtime.sandbox_ids import FIRST_ID
from tests.factories.playground import node_pid
from tests.factories.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.playground


@contextmanager
def booted(playground_session, **spec_kwargs):  # type: ignore[no-untyped-def]
    from codebox_tui.runtime.playground import PlaygroundBackend

    spec = playground_session.spec(**spec_kwargs)
    sandbox = PlaygroundBackend().boot(spec)
    try:
        yield sandbox
    finally:
        sandbox.dispose()


READONLY = "/wordpress/wp-content/uploads/fixtures"


@pytest.fixture(scope="module")
def shared_sandbox(playground_session, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """One sandbox (network denied, preview on its default address, one read-only mount at ``READONLY`` of a host
    folder holding ``data.txt``) for the module's attacks that need nothing else: a boot each would only repeat
    the same one. ``sandbox.readonly_source`` is the mounted host folder."""
    source = tmp_path_factory.mktemp("wall") / "fixtures"
    source.mkdir()
    (source / "data.txt").write_text("original")
    with booted(playground_session, mounts=[f"{source}:{READONLY}:readonly"]) as sandbox:
        sandbox.readonly_source = source
        yield sandbox


def php_string(text: str) -> str:
    return f"base64_decode('{base64.b64encode(text.encode()).decode()}')"


def _listing(root: Path, path: Path) -> list[str]:
    return sorted(p.name for p in (root / str(path).lstrip("/")).iterdir())


def _status(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


# -- 1. no child processes: the symlink-swap escape -------------------------------------------------


def test_mounting_one_host_folder_twice_is_refused(playground_session, plugin_copy: Path) -> None:
    """Two views of one host folder in one sandbox would let PHP swap a folder behind the other view's
    cache (the same escape without a child process): refused before Playground mounts anything."""
    from codebox_tui.errors import SandboxError
    from codebox_tui.runtime.playground import PlaygroundBackend

    spec = playground_session.spec()
    live = {"kind": "cli-mount", "codeboxLive": True}
    spec.mounts = [
        MountSpec(source=str(plugin_copy), target="/wordpress/wp-content/plugins/a", mode="readwrite", metadata=live),
        MountSpec(
            source=str(plugin_copy / "includes"),
            target="/wordpress/wp-content/plugins/b",
            mode="readwrite",
            metadata=live,
        ),
    ]
    (plugin_copy / "includes").mkdir(exist_ok=True)
    with pytest.raises(SandboxError) as caught:
        PlaygroundBackend().boot(spec).dispose()
    assert caught.value.code == "overlapping-mounts"


# -- 2. OS-level confinement ----------------------------------------------------------------------------


def test_confined_sidecar_sees_only_what_it_needs(playground_session, tmp_path: Path) -> None:
    """Checked from outside, through the Node process's own /proc entries."""
    from codebox_tui.settings import get_settings

    settings = get_settings()
    secret_name = "CODEBOX_WALL_TEST_SECRET"
    os.environ[secret_name] = "do-not-leak"
    try:
        with booted(playground_session, network="allow") as sandbox:  # a fresh sidecar started now
            pid = node_pid(sandbox.sidecar)
            status = _status(pid)
            uid_map = Path(f"/proc/{pid}/uid_map").read_text().split()
            root = Path(f"/proc/{pid}/root")
            top = sorted(p.name for p in root.iterdir())
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            visible = {
                # the Node bridge folder lives in the package: its path exists, nothing beside it
                "project": _listing(root, REPO) != ["codebox_tui"]
                or (root / str(REPO).lstrip("/") / "README.md").exists()
                or _listing(root, REPO / "codebox_tui" / "runtime") != ["node"],
                "store": (root / str(settings.db_path).lstrip("/")).exists(),
                "golden": (root / str(settings.golden_dir).lstrip("/")).exists(),
                "root-home": (root / "root").exists(),
                "tmp-test-dir": (root / str(tmp_path).lstrip("/")).exists(),
                "sandboxes": (root / str(settings.home / "sandboxes").lstrip("/")).is_dir(),
                "site": (root / str(sandbox.work_dir / "wordpress").lstrip("/")).is_dir(),
            }
            proc_pids = [p.name for p in (root / "proc").iterdir() if p.name.isdigit()]
            own_cmdlines = [(root / "proc" / p / "cmdline").read_bytes() for p in proc_pids]
    finally:
        del os.environ[secret_name]
    if os.geteuid() == 0:  # no user namespace: the sidecar's own uid on the host (tests/security/test_sandbox_uid.py)
        assert sandbox.sidecar.host_id is not None and sandbox.sidecar.host_id.uid >= FIRST_ID
        assert status["Uid"].split() == [str(sandbox.sidecar.host_id.uid)] * 4, status["Uid"]
        assert uid_map == ["0", "0", "4294967295"], uid_map
    else:
        assert uid_map[0] == "65534" and uid_map[2] == "1"  # uid 65534 inside, one id mapped
    assert status["CapEff"] == "0000000000000000" and status["CapBnd"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"
    assert len(status["NSpid"].split()) == 2  # its own PID namespace
    assert "root" not in top and "home" not in top, top
    assert visible == {
        "project": False,
        "store": False,
        "golden": False,
        "root-home": False,
        "tmp-test-dir": False,
        "sandboxes": True,
        "site": True,
    }, visible
    names = {item.split(b"=", 1)[0].decode() for item in environ if item}
    assert names <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "PWD",
        "CODEBOX_NETWORK_POLICY",
        "CODEBOX_WRITE_BUDGET",
        "CODEBOX_WRITE_BUDGET_ROOTS",
        "NODE_NO_WARNINGS",
    }, names
    assert not any(b"do-not-leak" in item for item in environ)
    assert len(proc_pids) < 10, proc_pids  # its own /proc: bwrap and node only
    assert all(b"pytest" not in cmd for cmd in own_cmdlines)  # no host processes (nor their environ)


def test_bwrap_missing_fails_closed_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codebox_tui.errors import SandboxError
    from codebox_tui.runtime.sidecar import Sidecar

    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without bubblewrap
    with pytest.raises(SandboxError) as caught:
        Sidecar(
            node="/usr/bin/node", home=tmp_path / "home", network_policy="deny", sandboxes_root=tmp_path / "sandboxes"
        )
    assert caught.value.code == "confinement-unavailable"
    assert "bubblewrap" in caught.value.message
    assert "CODEBOX_CONFINEMENT=none" in str(caught.value.details)


# -- 1. (continued) on the shared sandbox, booted only now: while a sandbox is alive in the sidecar, the
# next one boots a new PHP worker, so the tests above that boot their own run first -----------------------


def test_child_process_cannot_swap_a_cached_folder_for_a_host_symlink(shared_sandbox, tmp_path: Path) -> None:
    """The reviewers' escape: a `php` child replaces a folder the parent has cached with a host symlink to
    `/`; the parent then resolves paths through it on the host (read a canary, write a marker)."""
    canary = tmp_path / "host-canary"
    canary.mkdir()
    (canary / "secret.txt").write_text("HOST-CANARY-7f3a")
    rel = str(canary).lstrip("/")
    child = textwrap.dedent("""\
        <?php
        $d = '/wordpress/wp-content/uploads/esc';
        rename($d, $d . '-old');
        echo symlink('/', $d) ? 'swapped' : 'no-swap';
        """)
    parent = textwrap.dedent(f"""\
        <?php
        $d = '/wordpress/wp-content/uploads/esc';
        @mkdir('/wordpress/wp-content/uploads', 0777, true);
        mkdir($d);
        file_put_contents('/wordpress/wp-content/uploads/child.php', {php_string(child)});
        realpath($d); @file_get_contents($d . '/none');  // the parent caches the folder
        $p = proc_open(['php', '/wordpress/wp-content/uploads/child.php'], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        echo 'child-out:', $p ? stream_get_contents($pipes[1]) : '', "\\n";
        echo 'child-exit:', $p ? proc_close($p) : 'no-process', "\\n";
        @shell_exec('php ' . '/wordpress/wp-content/uploads/child.php');
        @exec('php /wordpress/wp-content/uploads/child.php');
        clearstatcache();
        echo 'read:', var_export(@file_get_contents($d . '/{rel}/secret.txt'), true), "\\n";
        echo 'write:', var_export(@file_put_contents($d . '/{rel}/pwned.txt', 'pwned'), true), "\\n";
        echo 'list:', json_encode(@scandir($d)), "\\n";
        """)
    sandbox = shared_sandbox
    result = sandbox.run_php(parent, 120)
    site_uploads = sandbox.work_dir / "wordpress" / "wp-content" / "uploads"
    swapped = (site_uploads / "esc").is_symlink()
    output = result.text + result.errors
    assert "HOST-CANARY-7f3a" not in output
    assert not (canary / "pwned.txt").exists()
    assert "child-exit:127" in result.text, output
    assert "swapped" not in result.text
    assert not swapped
    assert '"etc"' not in result.text and '"proc"' not in result.text  # no listing of the host's /


def test_readonly_mount_cannot_be_made_writable_with_chmod(shared_sandbox) -> None:  # type: ignore[no-untyped-def]
    source = shared_sandbox.readonly_source
    code = textwrap.dedent(f"""\
        <?php
        $d = '{READONLY}';
        echo 'chmod-dir:', var_export(@chmod($d, 0777), true), "\\n";
        echo 'chmod-file:', var_export(@chmod("$d/data.txt", 0666), true), "\\n";
        echo 'write:', var_export(@file_put_contents("$d/data.txt", 'tampered'), true), "\\n";
        echo 'create:', var_export(@file_put_contents("$d/new.txt", 'planted'), true), "\\n";
        echo 'unlink:', var_export(@unlink("$d/data.txt"), true), "\\n";
        echo 'now:', file_get_contents("$d/data.txt"), "\\n";
        """)
    sandbox = shared_sandbox
    result = sandbox.run_php(code, 60)
    staged = [p for p in sandbox.work_dir.parent.rglob("readonly-0") if sandbox.id in str(p)]
    assert staged, "the staged copy is where the sandbox's read-only mounts live"
    staged_modes = {p.name: p.stat().st_mode & 0o777 for p in [staged[0], staged[0] / "data.txt"]}
    staged_text = (staged[0] / "data.txt").read_text()
    assert "write:false" in result.text and "create:false" in result.text and "unlink:false" in result.text, result.text
    assert "now:original" in result.text
    assert staged_text == "original"
    assert staged_modes == {"readonly-0": 0o555, "data.txt": 0o444}
    assert (source / "data.txt").read_text() == "original"
    assert sorted(p.name for p in source.iterdir()) == ["data.txt"]


SPAWN_ATTEMPTS = textwrap.dedent("""\
    <?php
    $r = [];
    $r['exec'] = [@exec('php -r "echo 1;"', $o, $rc), $rc];
    $r['shell_exec'] = @shell_exec('php -r "echo 1;"');
    ob_start(); $last = @system('php -r "echo 1;"', $rc); $r['system'] = [ob_get_clean(), $rc];
    ob_start(); @passthru('php -r "echo 1;"', $rc); $r['passthru'] = [ob_get_clean(), $rc];
    $h = @popen('php -r "echo 1;"', 'r'); $r['popen'] = $h ? [stream_get_contents($h), pclose($h)] : false;
    $p = @proc_open(['php', '-r', 'echo 1;'], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
    $r['proc_open'] = $p ? [stream_get_contents($pipes[1]), proc_close($p)] : false;
    $p = @proc_open('ls /', [1 => ['pipe', 'w']], $pipes);
    $r['ls'] = $p ? [stream_get_contents($pipes[1]), proc_close($p)] : false;
    $r['backtick'] = @`php -r "echo 1;"`;
    echo json_encode($r);
    """)


def _assert_all_refused(text: str) -> None:
    import json

    results = json.loads(text[text.index("{") :])
    assert results["exec"][0] == "" and results["exec"][1] != 0
    assert not results["shell_exec"] and not results["backtick"]
    assert results["system"][0] == "" and results["system"][1] != 0
    assert results["passthru"][0] == "" and results["passthru"][1] != 0
    assert results["popen"] is False or results["popen"][0] == ""
    assert results["proc_open"] is False or results["proc_open"] == ["", 127]
    assert results["ls"] is False or results["ls"] == ["", 127]


def test_every_spawn_function_fails_cleanly_also_after_runtime_rotation(shared_sandbox) -> None:
    """exec/shell_exec/system/passthru/popen/proc_open/backticks start nothing: no output, a failing exit
    code, no PHP fatal; also after Playground rotates the PHP runtime (a `pg.cli` call marks it for
    rotation, the next request gets a fresh runtime) and with many attempts (no unbounded children)."""
    sandbox = shared_sandbox
    first = sandbox.run_php(SPAWN_ATTEMPTS, 60)
    assert first.exit_code == 0, first.errors
    _assert_all_refused(first.text)
    threads_before = int(_status(node_pid(sandbox.sidecar))["Threads"])
    cli = sandbox.run_cli(["php", "-r", "echo 'cli-ran';"], 60)
    assert "cli-ran" in cli.text
    after = sandbox.run_php(SPAWN_ATTEMPTS, 60)  # runs on the rotated runtime
    assert after.exit_code == 0, after.errors
    _assert_all_refused(after.text)
    many = sandbox.run_php(
        textwrap.dedent("""\
        <?php $n = 0;
        for ($i = 0; $i < 40; $i++) {
            $p = @proc_open(['php', '-r', 'sleep(30);'], [1 => ['pipe', 'w']], $pipes);
            if ($p && proc_close($p) !== 127) { $n++; }
        }
        echo "started:$n";
        """),
        120,
    )
    assert "started:0" in many.text, many.text + many.errors
    threads_after = int(_status(node_pid(sandbox.sidecar))["Threads"])
    assert threads_after <= threads_before + 2  # no worker thread per child


# -- 3. the preview listens on loopback only --------------------------------------------------------------


def _listening(pid: int) -> set[tuple[str, int]]:
    """(hex local address, port) of the LISTEN sockets the process holds (from /proc, no traffic)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].split(":")
                found.add((address, int(port, 16)))
    return found


def test_preview_listens_on_loopback_unless_asked(playground_session, shared_sandbox) -> None:
    from urllib.parse import urlparse

    port = urlparse(shared_sandbox.preview_url).port  # booted with the default address
    sockets = {address for address, p in _listening(node_pid(shared_sandbox.sidecar)) if p == port}
    assert sockets == {"0100007F"}, sockets  # 127.0.0.1 only
    with booted(playground_session, preview_bind="0.0.0.0") as sandbox:  # explicit opt-in
        port = urlparse(sandbox.preview_url).port
        sockets = {address for address, p in _listening(node_pid(sandbox.sidecar)) if p == port}
    assert sockets == {"00000000"}, sockets


# -- 4. sidecar leftovers of a SIGKILLed codebox are swept -------------------------------------------------


def test_sidecar_temp_folder_and_log_of_a_killed_process_are_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    # A private temp folder for the killed process and for the sweep below: any other Codebox process on
    # the machine (another pytest worker, a CLI run) sweeps the shared one and could take the leftovers first.
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    script = textwrap.dedent(f"""\
        import os, sys, time
        os.environ["CODEBOX_HOME"] = {str(home)!r}
        from codebox_tui.contracts.runtime import RuntimePolicy
        from codebox_tui.runtime.playground import get_sidecar
        from codebox_tui.settings import reload_settings
        sidecar = get_sidecar(reload_settings(), RuntimePolicy(commands=["wordpress.run-php"]))
        print(sidecar.tmp_dir, sidecar.log_path, sidecar.pid, flush=True)
        time.sleep(600)
        """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp_root)},
    )
    assert proc.stdout is not None
    tmp_dir, log_path, sidecar_pid = proc.stdout.readline().split()
    assert Path(tmp_dir).parent == temp_root and Path(log_path).parent == temp_root
    assert Path(tmp_dir).is_dir() and Path(log_path).is_file()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # its stdin closed with its owner: the sidecar exits on its own
    wait_until(lambda: not Path(f"/proc/{sidecar_pid}").exists(), timeout=30, interval=0.1)
    assert not Path(f"/proc/{sidecar_pid}").exists()
    assert Path(tmp_dir).is_dir() and Path(log_path).is_file()  # left behind by the kill

    from codebox_tui.runtime.sandbox_dirs import abandoned_sidecar_files, sweep_abandoned_once

    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))  # the sweep looks in tempfile.gettempdir()
    assert {str(p) for p in abandoned_sidecar_files()} >= {tmp_dir, log_path}
    sweep_abandoned_once(tmp_path / "another-root")  # what the next codebox process does first
    wait_until(lambda: not Path(tmp_dir).exists() and not Path(log_path).exists(), timeout=30, interval=0.1)
    assert not Path(tmp_dir).exists() and not Path(log_path).exists()


# -- 6. the host reads sandbox-written files only up to a bound ---------------------------------------------


def test_reading_a_sandbox_file_is_bounded(shared_sandbox) -> None:  # type: ignore[no-untyped-def]
    """A hostile site can write a file of any size; the host asks for it with a limit and never receives
    more (Sandbox.read_file: the snapshot document of runtime/site_state.py is read this way)."""
    from codebox_tui.errors import SandboxError

    sandbox = shared_sandbox
    sandbox.run_php("<?php file_put_contents('/tmp/big.bin', str_repeat('A', 3 * 1024 * 1024));", 60)
    with pytest.raises(SandboxError) as caught:
        sandbox.read_file("/tmp/big.bin", 60, max_bytes=1024 * 1024)
    assert caught.value.code == "file-too-large"
    assert sandbox.read_file("/tmp/big.bin", 60, max_bytes=4 * 1024 * 1024) == b"A" * (3 * 1024 * 1024)

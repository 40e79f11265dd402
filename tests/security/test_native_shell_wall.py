"""The native sandbox shell's wall (docs/exec.md, "On the native backend"; docs/backends.md). `codebox exec` on
native runs in a Node process inside the sandbox's own bubblewrap, PHP as its child in the same wall. Each test
performs the attack for real through a real native sandbox and `run_exec`, and checks the host:

- a command naming a host file outside the sandbox reads nothing (the wall binds none of the host);
- a write through links the sandbox's PHP planted in wp-content, pointing at a host file and a host folder,
  changes nothing on the host;
- PHP run by an exec command (a must-use plugin loaded by `wp eval`, and a child process it starts) reaches
  no host listener on 127.0.0.1 (the wall's network namespace is empty).
"""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.contracts.exec import ExecLimits, ExecRequest, ExecResult
from codebox_tui.runtime.backends import make_backend
from codebox_tui.runtime.exec import run_exec
from codebox_tui.runtime.native_site import host_php
from tests.factories.native import php_string, was_reached
from tests.factories.playground import PlaygroundSession

pytestmark = pytest.mark.native

MARKER = "codebox-native-shell-host-secret-5c1d"


@pytest.fixture(scope="module")
def native_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One booted native sandbox for the module, driven as a run (so `run_exec` records every exec)."""
    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import get_settings

    spec = PlaygroundSession(get_settings().home).spec(php=host_php().series)
    with RunSession(spec, tmp_path_factory.mktemp("native-shell-wall"), backend=make_backend("native")) as run:
        run.boot_sandbox()
        yield run


def ex(run: Any, command: str, caps: tuple[str, ...] = ("read",), cwd: str = "/wordpress") -> ExecResult:
    return run_exec(
        run,
        ExecRequest(
            command=command,
            cwd=cwd,
            capabilities=list(caps),  # type: ignore[arg-type]
            limits=ExecLimits(timeoutMs=60_000),
        ),
    )


@pytest.fixture
def host_folder() -> Iterator[Path]:
    """A folder in the host's /tmp (whose name the sandbox's own /tmp could also hold) with a secret file."""
    with tempfile.TemporaryDirectory(prefix="codebox-native-shell-", dir="/tmp") as folder:
        (Path(folder) / "secret.txt").write_text(MARKER)
        yield Path(folder)


def test_an_exec_command_cannot_read_a_host_file_outside_the_sandbox(native_run: Any, host_folder: Path) -> None:
    """`cat`, `ls`, `grep -r` and `on rg --path` on the host folder's absolute path, from the sandbox's /tmp
    as working folder: nothing of the host is there."""
    secret = host_folder / "secret.txt"
    for command in (
        f"cat {secret}",
        f"ls -la {host_folder}",
        f"grep -r {MARKER} {host_folder}",
        f"on rg {MARKER} --path {host_folder}",
        f"cat /tmp/{host_folder.name}/secret.txt",
    ):
        result = ex(native_run, command, cwd="/tmp")
        assert MARKER not in result.stdout + result.stderr, command
        assert result.exitCode != 0, (command, result.stdout)


def test_an_exec_write_through_links_planted_in_wp_content_does_not_reach_the_host(
    native_run: Any, host_folder: Path
) -> None:
    """The sandbox's own PHP plants links in uploads to a host file and a host folder (by their absolute host
    paths); exec commands with the write capability write, append, copy, edit in place and move through them.
    The host file keeps its bytes and no file appears in the host folder."""
    secret = host_folder / "secret.txt"
    uploads = "/wordpress/wp-content/uploads"
    plant = (
        f"<?php @mkdir('{uploads}', 0777, true);"
        f" var_dump(symlink({php_string(str(secret))}, '{uploads}/escape.txt'));"
        f" var_dump(symlink({php_string(str(host_folder))}, '{uploads}/escape-dir'));"
    )
    planted = native_run.sandbox.run_php(plant, 60)
    assert planted.text.count("bool(true)") == 2, planted.text + planted.errors
    for command in (
        f"echo pwned > {uploads}/escape.txt",
        f"echo pwned >> {uploads}/escape.txt",
        f"sed -i s/codebox/pwned/ {uploads}/escape.txt",
        f"echo pwned > {uploads}/escape-dir/new.txt",
        f"cp /wordpress/index.php {uploads}/escape-dir/copied.php",
        f"mkdir {uploads}/escape-dir/made",
        f"echo x > /tmp/a.txt && mv /tmp/a.txt {uploads}/escape-dir/",
        f"tee {uploads}/escape-dir/tee.txt < /wordpress/index.php",
    ):
        ex(native_run, command, caps=("read", "write"))
    assert secret.read_text() == MARKER
    assert sorted(p.name for p in host_folder.iterdir()) == ["secret.txt"]


def test_php_run_by_an_exec_command_reaches_no_host_listener(native_run: Any) -> None:
    """A must-use plugin planted in the sandbox connects to a host listener on 127.0.0.1 whenever WordPress
    loads, directly and from a child `php`; `wp eval` (the eval capability) loads WordPress in the shell's PHP.
    Both attempts fail and the listener is never reached."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        plugin = (
            f"<?php $s = @fsockopen('127.0.0.1', {port}, $errno, $errstr, 5);"
            " echo 'direct:', $s ? 'connected' : 'failed', \"\\n\";"
            " echo 'child:', shell_exec('php -r ' . escapeshellarg('echo @fsockopen(\"127.0.0.1\", "
            f'{port}) ? "connected" : "failed";\')), "\\n";'
        )
        native_run.sandbox.write_file("/wordpress/wp-content/mu-plugins/phone-home.php", plugin.encode())
        try:
            result = ex(native_run, "wp eval 'echo \"loaded\";'", caps=("read", "eval"))
        finally:
            native_run.sandbox.run_php("<?php unlink('/wordpress/wp-content/mu-plugins/phone-home.php');", 60)
        reached = was_reached(server)
    assert "direct:failed" in result.stdout and "child:failed" in result.stdout, result.stdout + result.stderr
    assert "loaded" in result.stdout
    assert not reached


def test_the_shell_sees_only_what_php_may_open(native_run: Any) -> None:
    """Inside the wall the system (`/usr`, PHP's `/etc/php`) and the shell's own code are readable, but the shell
    sees only PHP's open_basedir folders, as on Playground: reading them directly, or through links a child of the
    sandbox's PHP planted in uploads, finds nothing."""
    uploads = "/wordpress/wp-content/uploads"
    ini = next(Path("/etc/php").glob("*/cli/php.ini"))
    # PHP's open_basedir refuses such links, so a child process makes them (children run inside the wall)
    plant = (
        f"<?php @mkdir('{uploads}', 0777, true);"
        f" echo shell_exec('ln -s {ini} {uploads}/ini-link && ln -s /codebox-shell/bridge {uploads}/shell-link"
        " && echo planted');"
    )
    planted = native_run.sandbox.run_php(plant, 60)
    assert "planted" in planted.text, planted.text + planted.errors
    for command in (
        f"cat {ini}",
        f"cat {uploads}/ini-link",
        "ls /codebox-shell/bridge",
        f"ls {uploads}/shell-link",
        f"cat {uploads}/shell-link/exec.mjs",
        "cat /usr/share/php/../../../etc/php/*/cli/php.ini",
    ):
        result = ex(native_run, command)
        assert "[PHP]" not in result.stdout and "runExec" not in result.stdout, (command, result.stdout[:200])
        assert result.exitCode != 0, (command, result.stdout[:200])

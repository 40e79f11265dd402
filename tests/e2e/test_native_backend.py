"""The native backend end to end through the real `codebox` CLI: the host's PHP inside real bubblewrap
runs the example plugin's probe, a change in a copy-on-write mount is captured (the user's folder stays
as it was), the bundle verifies and records the backend and the real versions (docs/backends.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codebox_tui import __version__
from tests.factories.holds import codebox_in_process
from tests.factories.native import codebox_with_tmpdir, host_php_version
from tests.factories.paths import EXAMPLE_PLUGIN, REPO
from tests.factories.toolchains import PHPUNIT_POLYFILLS, WP_CLI_PHAR, WP_TESTS_LIB, require

pytestmark = pytest.mark.native

PLUGIN_TARGET = "/wordpress/wp-content/plugins/simple-plugin"
BUGGY_COUNTER = REPO / "examples" / "plugins-for-recipes" / "buggy-counter"
ISOLATED_TEST = """<?php
use PHPUnit\\Framework\\TestCase;

final class IsolatedTest extends TestCase {
    /**
     * @runInSeparateProcess
     * @preserveGlobalState disabled
     */
    public function test_runs_in_a_child_process(): void {
        $this->assertTrue( function_exists( '__phpunit_run_isolated_test' ) );  // PHPUnit's child template
        $this->assertSame( 3, buggy_counter_count( 'one two three' ) );
    }
}
"""


def test_the_example_probe_runs_natively_and_its_bundle_verifies(tmp_path: Path) -> None:
    plugin = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    before = sorted(p.name for p in plugin.iterdir())
    probe = tmp_path / "probe.php"
    probe.write_text(
        (EXAMPLE_PLUGIN / "probe.php").read_text() + "\nfile_put_contents(WP_PLUGIN_DIR . "
        "'/simple-plugin/native-note.txt', 'written by native PHP');\n"
    )
    out = codebox_with_tmpdir(
        tmp_path,
        "run",
        "--mount",
        f"{plugin}:{PLUGIN_TARGET}",
        "--command",
        "wordpress.run-php",
        "--arg",
        f"code-file={probe}",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        env={"CODEBOX_BACKEND": "native"},
    )  # the setting picks the backend
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["runtime"]["backend"] == "native"
    result = json.loads(doc["execution"]["stdout"])
    assert result["active"] is True and result["greeting"] == "Hello, Codebox!"
    assert result["php"] == host_php_version()

    assert sorted(p.name for p in plugin.iterdir()) == before  # copy-on-write: the user's folder is untouched
    bundle = Path(doc["artifacts"]["directory"])
    changed = json.loads((bundle / "files" / "changed-files.json").read_text())["files"]
    assert [c["path"] for c in changed if c["path"].endswith("native-note.txt")], changed
    metadata = json.loads((bundle / "metadata.json").read_text())
    assert metadata["provenance"]["runtime"] == {
        "backend": "native",
        "phpVersion": host_php_version(),
        "wordpressVersion": result["wordpress"],
    }
    # the package provenance in the contract's shape (docs/contracts.md): no Playground CLI on a native run
    pinned = json.loads((REPO / "codebox_tui" / "runtime" / "node" / "package.json").read_text())["dependencies"]
    builds = "@wp-playground/wordpress-builds"
    assert metadata["provenance"]["packages"] == {
        "schema": "wp-codebox/package-provenance/v1",
        "wpCodebox": {"name": "codebox", "version": __version__},
        "playground": {"wordpressBuilds": {"name": builds, "version": pinned[builds]}},
        "environment": {"wordpressVersion": result["wordpress"], "phpVersion": host_php_version()},
    }
    review = json.loads((bundle / "files" / "review.json").read_text())
    assert review["provenance"]["packages"] == metadata["provenance"]["packages"]
    verified = codebox_with_tmpdir(tmp_path, "artifacts", "verify", str(bundle))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "valid" in verified.stdout


def test_wp_cli_runs_natively_with_the_toolchain_phar(tmp_path: Path) -> None:
    require(WP_CLI_PHAR)
    out = codebox_with_tmpdir(
        tmp_path,
        "run",
        "--backend",
        "native",
        "--wp-cli-phar",
        str(WP_CLI_PHAR),
        "--command",
        "wordpress.wp-cli",
        "--arg",
        "command=plugin list --format=json",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["runtime"]["backend"] == "native"
    plugins = {p["name"]: p["status"] for p in json.loads(doc["execution"]["stdout"])}
    assert plugins.get("hello") == "inactive"


def test_another_php_version_is_refused_naming_the_playground_backend(tmp_path: Path, codebox_home: Path) -> None:
    """Refused before boot, through the real entry point in this process (docs/performance.md "Test suite")."""
    out = codebox_in_process(
        codebox_home,
        "run",
        "--backend",
        "native",
        "--php",
        "7.4",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo 1;",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
    )
    assert out.returncode == 2, out.stdout + out.stderr
    text = out.stdout + out.stderr
    assert "--backend playground" in text and "7.4" in text
    assert not (tmp_path / "artifacts").exists() or not any((tmp_path / "artifacts").iterdir())  # nothing booted


def test_phpunit_runs_natively_with_process_isolation(tmp_path: Path) -> None:
    """The plugin's own suite under the host's PHPUnit: a `@runInSeparateProcess` test starts its child `php`
    inside the wall (Playground cannot start one), and the results reach the bundle."""
    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(BUGGY_COUNTER, plugin)
    (plugin / "tests" / "IsolatedTest.php").write_text(ISOLATED_TEST)
    out = codebox_with_tmpdir(
        tmp_path,
        "run",
        "--backend",
        "native",
        "--mount",
        f"{plugin}:/wordpress/wp-content/plugins/buggy-counter",
        "--command",
        "wordpress.phpunit",
        "--arg",
        "plugin-slug=buggy-counter",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        env={"WP_TESTS_DIR": str(WP_TESTS_LIB), "WP_TESTS_PHPUNIT_POLYFILLS_PATH": str(PHPUNIT_POLYFILLS)},
    )
    doc = json.loads(out.stdout)
    assert doc["runtime"]["backend"] == "native", out.stderr
    results = json.loads((Path(doc["artifacts"]["directory"]) / "files" / "test-results.json").read_text())
    cases = {case["name"]: case["status"] for suite in results["suites"] for case in suite["cases"]}
    assert cases == {
        "test_simple_words": "passed",
        "test_repeated_spaces": "failed",  # the example's known bug
        "test_runs_in_a_child_process": "passed",
    }, doc["execution"]["stdout"]


def test_a_hung_command_is_killed_with_every_process_it_started(tmp_path: Path) -> None:
    """A PHP loop that outlives its timeout, with a background child in a session of its own (out of reach
    of a process-group kill): the run fails with the
    sandbox-timeout exit code, and no process of the sandbox is left on the host."""
    marker = f"native-hang-{os.getpid()}"
    live = tmp_path / "live"
    live.mkdir()
    # start the child, wait (bounded) until it shows in the sandbox's /proc, record that, then hang (a loop
    # that sleeps: the kill does not care whether PHP is busy, and a busy loop would burn a core until the kill)
    code = (
        f"shell_exec('setsid php -r \"sleep(600);\" {marker} > /dev/null 2>&1 &');"
        " $seen = ''; for ($i = 0; $i < 100 && strpos($seen, 'sleep(600);') === false; $i++) {"
        ' usleep(50000); $seen = (string) shell_exec(\'cat /proc/[0-9]*/cmdline | tr "\\\\0" " "\'); }'
        " file_put_contents('/workspace/live/processes.txt', $seen); while (true) { usleep(100000); }"
    )
    out = codebox_with_tmpdir(
        tmp_path,
        "run",
        "--backend",
        "native",
        "--mount",
        f"{live}:/workspace/live:live",
        "--command",
        "wordpress.run-php",
        "--arg",
        f"code={code}",
        "--timeout",
        "8s",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
    )
    assert marker in (live / "processes.txt").read_text()  # the child was running when the loop began
    assert out.returncode == 4, out.stdout + out.stderr  # SANDBOX_FAILURE
    assert json.loads(out.stdout)["error"]["code"] == "sandbox-timeout"
    leftovers = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert leftovers.stdout.strip() == "", leftovers.stdout


def test_mounts_native_cannot_honour_fail_clearly(tmp_path: Path, codebox_home: Path) -> None:
    """A mount over the sandbox's own configuration is refused before anything boots (exit 2); one bubblewrap
    cannot make (a new folder inside read-only core) fails the run closed, with bwrap's reason (exit 4). Through
    the real entry point in this process (docs/performance.md "Test suite"); the module's other runs are `codebox`
    processes of their own."""
    folder = tmp_path / "folder"
    folder.mkdir()
    reserved = codebox_in_process(
        codebox_home,
        "run",
        "--backend",
        "native",
        "--mount",
        f"{folder}:/codebox/config",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo 1;",
        "--artifacts",
        str(tmp_path / "a1"),
        "--json",
    )
    assert reserved.returncode == 2, reserved.stdout + reserved.stderr
    assert json.loads(reserved.stdout)["error"]["code"] == "invalid-mount"
    in_core = codebox_in_process(
        codebox_home,
        "run",
        "--backend",
        "native",
        "--mount",
        f"{folder}:/wordpress/new-folder",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo 1;",
        "--artifacts",
        str(tmp_path / "a2"),
        "--json",
    )
    assert in_core.returncode == 4, in_core.stdout + in_core.stderr
    error = json.loads(in_core.stdout)["error"]
    assert error["code"] == "confinement-failed" and "/wordpress/new-folder" in error["message"]


def test_a_file_over_the_write_budget_stops_php_and_flags_the_run(tmp_path: Path) -> None:
    """Disk fill, one file at a time: PHP writing past CODEBOX_SANDBOX_WRITE_BUDGET into a ``:live`` mount (the
    user's folder, seen through an overlay whose changes are in the sandbox's size-limited file system) is
    stopped at the budget (the file stays within it on the host), the command fails saying why, and the bundle
    carries the write-budget-exceeded risk flag. (Many files: tests/security/test_native_live_budget.py.)"""
    folder = tmp_path / "folder"
    folder.mkdir()
    code = "file_put_contents('/workspace/folder/fill.bin', str_repeat('x', 3 << 20)); echo 'not reached';"
    out = codebox_with_tmpdir(
        tmp_path,
        "run",
        "--backend",
        "native",
        "--mount",
        f"{folder}:/workspace/folder:live",
        "--command",
        "wordpress.run-php",
        "--arg",
        f"code={code}",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        env={"CODEBOX_SANDBOX_WRITE_BUDGET": "1M"},
    )
    doc = json.loads(out.stdout)
    assert out.returncode == 1 and doc["execution"]["exitCode"] != 0, out.stdout + out.stderr
    assert "write budget" in doc["execution"]["stderr"]
    bundle = Path(doc["artifacts"]["directory"])
    assert "write-budget-exceeded" in json.loads((bundle / "files" / "review.json").read_text())["riskFlags"]
    assert (folder / "fill.bin").stat().st_size <= 1 << 20  # what PHP wrote before it was stopped


# A Python process that boots a native sandbox, serves one page (so its worker runs), says where its data file
# system and process group are, then does END: SIGKILLs itself before it can dispose anything, or disposes.
KILLED_HOLDER = """
import json, os, signal
from tests.factories.playground import PlaygroundSession
from codebox_tui.runtime.native import NativeBackend
from codebox_tui.runtime.native_site import host_php
from codebox_tui.settings import get_settings
sandbox = NativeBackend().boot(PlaygroundSession(get_settings().home).spec(php=host_php().series))
assert sandbox.request('/wp-includes/images/blank.gif', 120).status == 200
print(json.dumps({'data': str(sandbox.disk.folder), 'mounted': sandbox.disk.mounted,
                  'group': str(sandbox.process_cap.folder), 'worker': sandbox.worker.pid}), flush=True)
END
"""


def test_a_sandbox_whose_process_was_killed_leaves_no_mount_group_or_worker_behind(tmp_path: Path) -> None:
    """SIGKILL the process holding a native sandbox with a running worker: the worker dies with it at once and
    its mount guard detaches the dead sandbox's data file system; the next boot in the same home removes its
    process group and sweeps its folder."""
    from tests.factories.waiting import process_finished, wait_until

    (tmp_path / "tmp").mkdir()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_HOLDER.replace("END", "os.kill(os.getpid(), signal.SIGKILL)")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    left = json.loads(killed.stdout)
    assert left["mounted"] and Path(left["group"]).is_dir(), left
    assert wait_until(lambda: process_finished(left["worker"])), left  # --die-with-parent
    assert wait_until(lambda: left["data"] not in Path("/proc/self/mounts").read_text()), left  # runtime/mount_guard.py
    booted = subprocess.run(
        [sys.executable, "-c", KILLED_HOLDER.replace("END", "sandbox.dispose()")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
        timeout=300,
    )
    assert booted.returncode == 0, booted.stderr[-2000:]
    assert left["data"] not in Path("/proc/self/mounts").read_text()
    assert not Path(left["group"]).exists()
    assert wait_until(lambda: not Path(left["data"]).parent.exists()), left  # the sweep took the folder

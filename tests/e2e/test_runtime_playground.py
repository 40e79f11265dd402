"""End-to-end: real WordPress Playground sandboxes through RunSession and the `codebox` CLI.

One sandbox (module scope) serves the command tests; policy, network, secret and timeout tests boot
their own because those properties are fixed at boot.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebox_tui.contracts.runtime import MountSpec, RuntimePolicy
from codebox_tui.errors import BadInputError, PolicyDeniedError, SandboxError
from codebox_tui.runtime.backend import SandboxSpec
from codebox_tui.runtime.mounts import parse_mount
from codebox_tui.runtime.session import RunSession
from codebox_tui.settings import get_settings
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION
from tests.factories.holds import codebox_in_process
from tests.factories.native import native_run, recorded_backend
from tests.factories.paths import EXAMPLE_PLUGIN, REPO
from tests.factories.waiting import wait_for_reaper, wait_until

pytestmark = pytest.mark.playground

ALL_COMMANDS = ["inspect-mounted-inputs", "wordpress.run-php", "wordpress.ability", "wordpress.wp-cli"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "rw").mkdir()
    (root / "rw" / "notes.txt").write_text("original\n")
    ro = root / "ro"
    ro.mkdir()
    (ro / "keep.php").write_text("<?php // read-only input\n")
    return root


@pytest.fixture(scope="module")
def session(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunSession]:
    spec = SandboxSpec(
        mounts=[
            parse_mount(f"{workspace / 'ro'}:/wordpress/wp-content/plugins/ro-plugin:readonly"),
            parse_mount(f"{workspace / 'rw'}:/wordpress/wp-content/plugins/rw-plugin:readwrite"),
            parse_mount(f"{EXAMPLE_PLUGIN}:/wordpress/wp-content/plugins/simple-plugin:readonly"),
        ],
        policy=RuntimePolicy(commands=ALL_COMMANDS),
    )
    with RunSession(spec, tmp_path_factory.mktemp("artifacts")) as run:
        yield run


def events(run: RunSession) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]


def test_run_php_loads_wordpress_and_reports_versions(session: RunSession) -> None:
    result = session.execute("wordpress.run-php", ["code=echo get_bloginfo('version'), '|', PHP_VERSION;"])
    assert result.exitCode == 0, result.stderr
    wp, php = result.stdout.split("|")
    assert wp == "6.5.5"
    assert php.startswith("8.3.")
    assert result.durationMs > 0


def test_run_php_bootstrap_none_does_not_load_wordpress(session: RunSession) -> None:
    result = session.execute("wordpress.run-php", ["code=echo defined('ABSPATH') ? 'wp' : 'bare';", "bootstrap=none"])
    assert result.stdout == "bare"


def test_run_php_fatal_error_is_captured_with_nonzero_exit(session: RunSession) -> None:
    result = session.execute("wordpress.run-php", ["code=echo 'before'; nope_not_a_function();"])
    assert result.exitCode != 0
    assert "nope_not_a_function" in result.stdout + result.stderr


def test_run_php_code_file(session: RunSession) -> None:
    probe = EXAMPLE_PLUGIN / "probe.php"
    result = session.execute("wordpress.run-php", [f"code-file={probe}"])
    data = json.loads(result.stdout)
    assert data["active"] is True
    assert data["greeting"] == "Hello, Codebox!"


def test_inspect_mounted_inputs_lists_entries(session: RunSession) -> None:
    result = session.execute("inspect-mounted-inputs", [])
    data = json.loads(result.stdout)
    by_target = {m["target"]: m for m in data["mounts"]}
    assert by_target["/wordpress/wp-content/plugins/ro-plugin"]["entries"] == ["keep.php"]
    assert "simple-plugin.php" in by_target["/wordpress/wp-content/plugins/simple-plugin"]["entries"]


def test_readonly_mount_rejects_writes_and_host_is_unchanged(session: RunSession, workspace: Path) -> None:
    code = (
        "$d = WP_PLUGIN_DIR . '/ro-plugin';"
        "echo json_encode(['write' => @file_put_contents(\"$d/keep.php\", 'x'),"
        " 'create' => @file_put_contents(\"$d/new.php\", 'x'), 'unlink' => @unlink(\"$d/keep.php\"),"
        " 'mkdir' => @mkdir(\"$d/sub\"), 'content' => file_get_contents(\"$d/keep.php\")]);"
    )
    data = json.loads(session.execute("wordpress.run-php", [f"code={code}"]).stdout)
    assert data["write"] is False and data["create"] is False
    assert data["unlink"] is False and data["mkdir"] is False
    assert data["content"] == "<?php // read-only input\n"
    assert (workspace / "ro" / "keep.php").read_text() == "<?php // read-only input\n"
    assert sorted(p.name for p in (workspace / "ro").iterdir()) == ["keep.php"]


def test_readwrite_mount_writes_reach_the_private_copy_not_the_host(session: RunSession, workspace: Path) -> None:
    """Read-write mounts are copy-on-write (README, "Mounts"): the write lands in the mount's private
    copy inside the sandbox's work dir; the host folder changes only through apply-back."""
    code = "file_put_contents(WP_PLUGIN_DIR . '/rw-plugin/from-sandbox.txt', 'written in php'); echo 'ok';"
    session.execute("wordpress.run-php", [f"code={code}"])
    copy = session.mount_dir(1)
    assert copy != workspace / "rw" and copy.is_relative_to(get_settings().home / "sandboxes")
    assert (copy / "from-sandbox.txt").read_text() == "written in php"
    assert (copy / "notes.txt").read_text() == "original\n"
    assert not (workspace / "rw" / "from-sandbox.txt").exists()


def test_ability_without_abilities_api_is_a_structured_error(session: RunSession) -> None:
    result = session.execute("wordpress.ability", ["name=demo/echo", 'input={"x":1}'])
    data = json.loads(result.stdout)
    assert data["schema"] == "wp-codebox/wordpress-ability-result/v1"
    assert data["status"] == "error" and data["error"]["code"] == "abilities-api-missing"
    assert result.exitCode == 1


def test_ability_executes_a_registered_ability(session: RunSession) -> None:
    # A minimal Abilities API surface as a mu-plugin, registering one ability; the handler under
    # test is the real one, run inside the real sandbox.
    api = (
        "<?php class Codebox_Test_Ability { public function __construct(public $cb) {}"
        " public function execute($input) { return call_user_func($this->cb, $input); } }"
        " function wp_get_ability($name) { return $name === 'demo/double'"
        " ? new Codebox_Test_Ability(fn($in) => ['doubled' => $in['n'] * 2]) : null; }"
    )
    session.sandbox.write_file("/wordpress/wp-content/mu-plugins/ability-api.php", api.encode())
    result = session.execute("wordpress.ability", ["name=demo/double", 'input={"n":21}'])
    data = json.loads(result.stdout)
    assert data["status"] == "ok", data
    assert data["result"] == {"doubled": 42}
    missing = json.loads(session.execute("wordpress.ability", ["name=demo/none"]).stdout)
    assert missing["error"]["code"] == "ability-not-found"


def test_wp_cli_without_phar_says_how_to_provide_one(session: RunSession) -> None:
    with pytest.raises(BadInputError) as caught:
        session.execute("wordpress.wp-cli", ["command=option get home"])
    assert caught.value.code == "wp-cli-phar-missing"
    assert "CODEBOX_WP_CLI_PHAR" in str(caught.value.details)


def test_events_record_every_lifecycle_step(session: RunSession) -> None:
    types = [e["type"] for e in events(session)]
    for expected in (
        "runtime.created",
        "runtime.mounted",
        "runtime.boot-started",
        "runtime.boot-progress",
        "runtime.ready",
        "command.started",
        "command.finished",
    ):
        assert expected in types
    commands = [json.loads(line) for line in (session.run_dir / "commands.jsonl").read_text().splitlines()]
    assert commands and all({"id", "command", "exitCode", "startedAt", "finishedAt"} <= set(c) for c in commands)
    assert "exitCode=" in (session.run_dir / "logs" / "commands.log").read_text()


def test_policy_denies_commands_not_allowed(tmp_path: Path) -> None:
    spec = SandboxSpec(mounts=[], policy=RuntimePolicy(commands=["inspect-mounted-inputs"]))
    with RunSession(spec, tmp_path) as run:
        with pytest.raises(PolicyDeniedError) as caught:
            run.execute("wordpress.run-php", ["code=echo 1;"])
        assert caught.value.code == "runtime-command-disallowed"
        assert not run.booted, "a denied command must be refused before anything boots"
        recorded = [json.loads(line) for line in (run.run_dir / "commands.jsonl").read_text().splitlines()]
        assert recorded[0]["exitCode"] == 1
        assert recorded[0]["result"]["error"]["code"] == "runtime-command-disallowed"
        assert "command.denied" in [e["type"] for e in events(run)]


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"reached-the-host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


@pytest.mark.parametrize("network", ["deny", "allow"])
def test_network_policy_controls_outbound_http_from_php(network: str, local_server: int, tmp_path: Path) -> None:
    spec = SandboxSpec(mounts=[], policy=RuntimePolicy(network=network, commands=["wordpress.run-php"]))  # type: ignore[arg-type]
    code = (
        f"$r = @file_get_contents('http://127.0.0.1:{local_server}/');"
        f"$c = function_exists('curl_init') ? curl_init('http://127.0.0.1:{local_server}/') : null;"
        "if ($c) { curl_setopt($c, CURLOPT_RETURNTRANSFER, true); curl_setopt($c, CURLOPT_TIMEOUT, 5); }"
        "echo json_encode(['fopen' => $r, 'curl' => $c ? curl_exec($c) : null]);"
    )
    with RunSession(spec, tmp_path) as run:
        data = json.loads(run.execute("wordpress.run-php", [f"code={code}", "bootstrap=none"]).stdout)
    if network == "deny":
        assert data["fopen"] is False
        assert data["curl"] in (False, None)
    else:
        assert data["fopen"] == "reached-the-host"


def test_secret_values_are_available_to_php_but_redacted_everywhere(tmp_path: Path) -> None:
    secret = "s3cr3t-value-that-must-not-leak"
    spec = SandboxSpec(
        mounts=[],
        policy=RuntimePolicy(commands=["wordpress.run-php"], secrets=["CODEBOX_TEST_TOKEN"]),
        secret_env={"CODEBOX_TEST_TOKEN": secret},
    )
    with RunSession(spec, tmp_path) as run:
        result = run.execute(
            "wordpress.run-php",
            ["code=$t = getenv('CODEBOX_TEST_TOKEN'); echo strlen($t), ':', $t; error_log('token ' . $t);"],
        )
        assert result.stdout.startswith(f"{len(secret)}:")
        assert secret not in result.stdout
        assert "[REDACTED:configured-secret-value]" in result.stdout
        run.capture()
        for path in run.run_dir.rglob("*"):
            if path.is_file():
                assert secret not in path.read_text(errors="replace"), path


def test_hung_php_times_out_and_the_sidecar_is_killed(tmp_path: Path) -> None:
    # A dedicated network key gives this test its own sidecar so the kill does not affect others.
    policy = RuntimePolicy(network={"allowHosts": ["timeout.invalid"]}, commands=["wordpress.run-php"])
    with RunSession(SandboxSpec(mounts=[], policy=policy), tmp_path) as run:
        run.boot_sandbox()
        sidecar = run.sandbox.sidecar  # type: ignore[attr-defined]
        pid = sidecar.pid
        with pytest.raises(SandboxError) as caught:
            run.execute("wordpress.run-php", ["code=while (true) {}", "bootstrap=none"], timeout_s=3)
        assert caught.value.code == "sandbox-timeout"
        assert not sidecar.alive
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        types = [e["type"] for e in events(run)]
        assert "command.failed" in types


def _codebox(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ},
        timeout=300,
    )


@pytest.mark.native
def test_cli_run_json_is_clean_and_complete(tmp_path: Path) -> None:
    """`codebox run --json` in a process of its own, progress lines on: stdout is exactly the run document. On the
    native backend, as the document and the progress lines are the CLI's, not the backend's (a Playground child
    process's stdout is parsed whole as JSON by tests/e2e/test_run_parity.py's Playground case)."""
    out = _codebox(
        "run",
        "--backend",
        "native",
        "--mount",
        f"{EXAMPLE_PLUGIN}:/wordpress/wp-content/plugins/simple-plugin:readonly",
        "--command",
        "wordpress.run-php",
        "--arg",
        f"code-file={EXAMPLE_PLUGIN / 'probe.php'}",
        "--artifacts",
        str(tmp_path),
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == "wp-codebox/run/v1" and doc["success"] is True
    assert json.loads(doc["execution"]["stdout"])["shortcode"].startswith('<p class="simple-greeting">')
    run_dir = Path(doc["artifacts"]["directory"])
    assert (run_dir / "events.jsonl").is_file()
    assert recorded_backend(run_dir) == "native"  # a moved test cannot silently run on the other backend


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--mount", "/definitely/not/here:/wordpress/x"], 2, "does not exist"),
        (["--mount", f"{EXAMPLE_PLUGIN}:relative/target"], 2, "must be absolute"),
        (["--mount", f"{EXAMPLE_PLUGIN}:/wordpress/../etc"], 2, "'..'"),
        (["--mount", f"{EXAMPLE_PLUGIN}:/wordpress/x", "--wp", "9.9"], 2, "available"),
        (["--arg", "nokeyvalue"], 2, "key=value"),
        (["--policy", '{"commands": []}'], 2, "policy"),
        (["--policy", '{"commands": ["inspect-mounted-inputs"]}'], 3, "not allowed"),
    ],
)
def test_cli_bad_input_is_a_clear_error_before_boot(
    args: list[str], code: int, needle: str, tmp_path: Path, codebox_home: Path
) -> None:
    """Refused before anything boots (the real entry point, in-process: a refusal starts nothing to run in a
    process of its own)."""
    out = codebox_in_process(
        codebox_home,
        "run",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo 1;",
        *args,
        "--artifacts",
        str(tmp_path),
    )
    assert out.returncode == code, (out.stdout, out.stderr)
    assert needle in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_command_is_rejected(codebox_home: Path) -> None:
    out = codebox_in_process(codebox_home, "run", "--command", "wordpress.nope", "--artifacts", "/tmp")
    assert out.returncode == 2 and "known commands" in out.stderr


def test_mount_spec_metadata_is_opaque() -> None:
    mount = MountSpec(source=str(EXAMPLE_PLUGIN), target="/wordpress/x", metadata={"anything": {"goes": [1]}})
    assert mount.metadata["anything"] == {"goes": [1]}


@pytest.mark.native
def test_bundle_captures_php_changes_to_a_readwrite_git_plugin(plugin_copy: Path, tmp_path: Path) -> None:
    """PHP modifies, adds and deletes files in a read-write mounted plugin; the bundle verifies and its
    patch reproduces the sandbox's output on the baseline byte for byte. On the native backend: the capture and the
    copy-on-write mount are the run's, the same code on both backends (docs/backends.md)."""
    git = ["git", "-c", "user.email=t@example.test", "-c", "user.name=t", "-C", str(plugin_copy)]
    # as many plugins do: tests left out of release archives (git archive would drop them from HEAD)
    (plugin_copy / ".gitattributes").write_text("tests/ export-ignore\n")
    (plugin_copy / "tests").mkdir()
    (plugin_copy / "tests" / "bootstrap.php").write_text("<?php // bootstrap\n")
    (plugin_copy / "tests" / "test-keep.php").write_text("<?php // untouched\n")
    subprocess.run(["git", "init", "-q", str(plugin_copy)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    pristine = tmp_path / "pristine"
    subprocess.run(["git", "clone", "-q", str(plugin_copy), str(pristine)], check=True)
    code = (
        "$d = WP_PLUGIN_DIR . '/simple-plugin';"
        "file_put_contents(\"$d/simple-plugin.php\", str_replace('Hello', 'Howdy', file_get_contents(\"$d/simple-plugin.php\")));"
        'file_put_contents("$d/includes-new.php", "<?php\\n// added in the sandbox\\n");'
        'file_put_contents("$d/icon.bin", "\\x00\\x01\\x02binary");'
        'unlink("$d/probe.php");'
        'file_put_contents("$d/tests/bootstrap.php", "<?php // bootstrap, edited\\n");'
        'mkdir("$d/node_modules/.bin", 0777, true); file_put_contents("$d/node_modules/.bin/lint", \'x\');'
        "echo 'changed';"
    )
    mount = f"{plugin_copy}:/wordpress/wp-content/plugins/simple-plugin"
    with native_run(tmp_path / "artifacts", mounts=[mount], commands=["wordpress.run-php"]) as run:
        run.execute("wordpress.run-php", [f"code={code}"])
        summary = run.capture()
        sandbox_output = run.mount_dir(0)  # the private copy the sandbox wrote (kept until close)
        outputs = {
            rel: (sandbox_output / rel).read_bytes()
            for rel in ("simple-plugin.php", "includes-new.php", "icon.bin", "tests/bootstrap.php")
        }
        assert not (sandbox_output / "probe.php").exists()
    from codebox_tui.bundle.verify import verify_bundle

    assert verify_bundle(summary.path).valid
    assert recorded_backend(summary.path) == "native"
    changed = {f["relativePath"]: f["status"] for f in summary.changed_files}
    assert changed == {
        "simple-plugin.php": "modified",
        "includes-new.php": "added",
        "icon.bin": "added",
        "probe.php": "deleted",
        "tests/bootstrap.php": "modified",  # export-ignored, still diffed against HEAD; test-keep.php unchanged
    }
    # not captured as content, but reported for the reviewer
    assert {(s["relativePath"], s.get("change")) for s in summary.skipped} >= {("node_modules/.bin/lint", "added")}
    subprocess.run(["git", "apply", "--binary", str(summary.path / "files" / "patch.diff")], cwd=pristine, check=True)
    for rel, data in outputs.items():
        assert (pristine / rel).read_bytes() == data
    assert not (pristine / "probe.php").exists()
    # the mounted folder itself is untouched (copy-on-write)
    assert subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True).stdout == ""
    types = [e["type"] for e in events(run)]
    assert types[-1] == "artifacts.capturing"


def test_git_folder_and_git_pointer_of_readwrite_mounts_are_shielded_and_no_sandbox_directory_leaks(
    plugin_copy: Path, codebox_home: Path, tmp_path: Path
) -> None:
    """The sandbox cannot read a mount's git history or plant hooks/config that the host's git would run later; a
    worktree/submodule ``.git`` file ("gitdir: …") cannot be redirected; the rest of the read-write mount stays
    writable. (On a fresh boot; a pre-booted spare that gets its mounts attached later is checked in
    tests/e2e/test_runtime_spare.py.) Both attacks in one sandbox, one mount each; the same sandbox keeps its private
    site copy while it runs and leaves no folder behind once its reaper has finished."""
    subprocess.run(["git", "init", "-q", str(plugin_copy)], check=True)
    hooks = plugin_copy / ".git" / "hooks"
    before = sorted(p.name for p in hooks.iterdir())
    config = (plugin_copy / ".git" / "config").read_bytes()
    pointed = tmp_path / "pointed"
    shutil.copytree(EXAMPLE_PLUGIN, pointed)
    pointer = pointed / ".git"
    pointer.write_text("gitdir: /somewhere/else/.git/worktrees/p\n")
    spec = SandboxSpec(
        mounts=[
            parse_mount(f"{plugin_copy}:/wordpress/wp-content/plugins/simple-plugin"),
            parse_mount(f"{pointed}:/wordpress/wp-content/plugins/pointed"),
        ],
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
    )
    code = (
        "$d = WP_PLUGIN_DIR . '/simple-plugin'; $f = WP_PLUGIN_DIR . '/pointed/.git';"
        "echo json_encode(['git' => array_values(array_diff(scandir(\"$d/.git\"), ['.', '..'])),"
        '\'hook\' => @file_put_contents("$d/.git/hooks/post-checkout", "#!/bin/sh\\necho pwned\\n"),'
        "'config' => @file_put_contents(\"$d/.git/config\", '[core]'),"
        "'plugin' => file_put_contents(\"$d/written.txt\", 'ok'),"
        "'read' => file_get_contents($f), 'write' => @file_put_contents($f, 'gitdir: ./evil')]);"
    )
    sandboxes_before = set(os.listdir(codebox_home / "sandboxes")) if (codebox_home / "sandboxes").exists() else set()
    with RunSession(spec, tmp_path / "artifacts") as run:
        result = run.execute("wordpress.run-php", [f"code={code}"])
        phases = [e["data"].get("phase") for e in events(run) if isinstance(e.get("data"), dict)]
        summary = run.capture()
        during = set(os.listdir(codebox_home / "sandboxes"))
    assert "using-prebooted-sandbox" not in phases
    assert "shielding-git-folder" in phases
    doc = json.loads(result.stdout)
    assert doc == {"git": [], "hook": False, "config": False, "plugin": 2, "read": "", "write": False}
    assert sorted(p.name for p in hooks.iterdir()) == before
    assert (plugin_copy / ".git" / "config").read_bytes() == config
    assert pointer.read_text() == "gitdir: /somewhere/else/.git/worktrees/p\n"
    # the rest of the mount was writable: the write is in the bundle (the folder itself is copy-on-write)
    # (the repository has no commit: its baseline is empty, every file reads as added)
    assert {f["relativePath"]: f["status"] for f in summary.changed_files}["written.txt"] == "added"
    assert not (plugin_copy / "written.txt").exists()
    # no sandbox directory leaks: kept while the sandbox runs, gone once its reaper has finished
    assert during - sandboxes_before, "the sandbox keeps its private site copy while it runs"
    assert wait_for_reaper(run.reaper_pid), "the reaper did not finish"

    def left() -> set[str]:  # (a first boot in this process also boots an opcache-seed sandbox in the background)
        return set(os.listdir(codebox_home / "sandboxes")) - sandboxes_before - {".readonly"}

    assert wait_until(lambda: not left(), timeout=120), left()


def test_opcache_seed_is_used_by_new_sandboxes_but_never_written_by_them(
    session: RunSession, codebox_home: Path, tmp_path: Path
) -> None:

    from codebox_tui.runtime.golden import opcache_seed
    from codebox_tui.runtime.wordpress_builds import resolve_build
    from codebox_tui.settings import get_settings

    build, golden_root = resolve_build(DEFAULT_WP_VERSION), get_settings().golden_dir
    spec = SandboxSpec(mounts=[], policy=RuntimePolicy(commands=["wordpress.run-php"]))
    # the module's sandbox (booted by now, else here; at the default WordPress and PHP): the background refill after
    # a boot builds the seed if none exists yet
    session.execute("wordpress.run-php", ["code=echo 1;"])
    wait_until(lambda: opcache_seed(build, DEFAULT_PHP_VERSION, golden_root) is not None, timeout=120, interval=0.5)
    seed = opcache_seed(build, DEFAULT_PHP_VERSION, golden_root)
    assert seed is not None
    before = sorted((p.relative_to(seed), p.stat().st_size) for p in seed.rglob("*") if p.is_file())
    assert any(str(name).endswith("wp-load.php.bin") for name, _ in before)  # core was compiled into it
    # every Codebox probe (the probe-guard check after every boot is one) drops the compiled copy of the prepend file
    # (probeguard.mjs; docs/security.md), so that one is not counted on either side
    prepend = "auto_prepend_file.php.bin"
    seeded = [name for name, _ in before if not str(name).endswith(prepend)]
    poison = (
        "code=$dir = '/internal/shared/opcache'; $n = 0;"
        " foreach (new RecursiveIteratorIterator(new RecursiveDirectoryIterator($dir, FilesystemIterator::SKIP_DOTS))"
        f" as $f) {{ $n += str_ends_with($f, '{prepend}') ? 0 : 1; if (str_ends_with($f, 'wp-load.php.bin')) {{ chmod($f, 0666);"
        " file_put_contents($f, 'poisoned'); } }"
        " file_put_contents($dir . '/planted.txt', 'x'); echo $n;"
    )
    with RunSession(spec, tmp_path) as run:
        result = run.execute("wordpress.run-php", [poison])
        assert result.exitCode == 0, result.stderr
        assert int(result.stdout) >= len(seeded)  # the new sandbox started from a copy of the seed
    after = sorted((p.relative_to(seed), p.stat().st_size) for p in seed.rglob("*") if p.is_file())
    assert after == before
    assert not (seed / "planted.txt").exists()

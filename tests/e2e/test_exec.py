"""`codebox exec` through a real sandbox (docs/exec.md): just-bash over the sandbox's own file system,
classification and capabilities checked before anything runs, escapes, `.git`, the eval policy, limits, and the
record in commands.jsonl.

Where each runs (CPU per test, docs/performance.md "Test suite"): the shell's own commands run on one warm
Playground sandbox (``box``), where a command is a request to the running sidecar (a few hundredths of a
CPU-second) while a native command starts two Node processes (about a second). What runs WP-CLI runs on one
native sandbox (``native_box``): WP-CLI on Playground's WebAssembly costs several CPU-seconds a call, so
Playground keeps one WP-CLI call (``test_the_sidecar_starts_no_process``). The flows that start a sandbox of
their own (the CLI on a fresh sandbox, the TUI console on a held preview) run natively; exec on a sandbox held
by `codebox boot` is in tests/e2e/test_native_shell.py."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.factories.exec_shell import ex, php, wp_cli_tools
from tests.factories.holds import codebox_in_process
from tests.factories.native import native_run
from tests.factories.paths import EXAMPLE_PLUGIN

PLUGIN = "/wordpress/wp-content/plugins/simple-plugin"
HOST_MARKER = "codebox-host-secret-4f1e9a"
GIT_MARKER = "codebox-git-object-77ab"


@pytest.fixture(scope="module")
def box(playground_session: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One warm Playground sandbox for the module: the example plugin mounted read-write (a private copy) with
    a host symlink to a secret outside the sandbox, and WP-CLI's release phar at the tools path."""
    root = tmp_path_factory.mktemp("exec")
    secret = root / "host-secret.txt"
    secret.write_text(HOST_MARKER)
    plugin = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    os.symlink(secret, plugin / "host-link.txt")
    (plugin / "readme.txt").write_text("alpha\nbeta\ngamma\nbeta\n")
    run = playground_session.new_run(
        root / "artifacts", mounts=[f"{plugin}:{PLUGIN}"], extra_mounts=[wp_cli_tools(root)]
    )
    with run:
        run.boot_sandbox()
        assert run.runtime_info().backend == "wordpress-playground"
        run.secret = secret
        yield run


@pytest.fixture(scope="module")
def native_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One native sandbox for the module's commands that run WP-CLI (the host's PHP in bubblewrap), WP-CLI's
    release phar at the tools path."""
    root = tmp_path_factory.mktemp("exec-native")
    with native_run(root / "artifacts", extra_mounts=[wp_cli_tools(root)]) as run:
        run.boot_sandbox()
        assert run.runtime_info().backend == "native"
        yield run


# -- utility families ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, expected",
    [
        # files
        (f"ls {PLUGIN} | grep -c simple-plugin.php", "1"),
        (f"cat {PLUGIN}/readme.txt | head -2 | tail -1", "beta"),
        (f"find {PLUGIN} -name '*.php' | sort | head -1", f"{PLUGIN}/probe.php"),
        (f"wc -l < {PLUGIN}/readme.txt", "4"),
        (f"stat -c %s {PLUGIN}/readme.txt", "22"),
        (f"basename {PLUGIN}/readme.txt; dirname {PLUGIN}/readme.txt", f"readme.txt\n{PLUGIN}"),
        # text
        (f"grep -c beta {PLUGIN}/readme.txt", "2"),
        (f"sed -n 3p {PLUGIN}/readme.txt", "gamma"),
        (f"awk 'NR==1 {{print toupper($1)}}' {PLUGIN}/readme.txt", "ALPHA"),
        (f"sort {PLUGIN}/readme.txt | uniq -c | sort -rn | head -1 | tr -s ' ' | cut -d' ' -f2-", "2 beta"),
        (f"tac {PLUGIN}/readme.txt | nl | head -1 | tr -d ' \\t'", "1beta"),
        # data
        ("echo '{\"a\": [1, 2, 3]}' | jq '.a | length'", "3"),
        ("printf hello | base64", "aGVsbG8="),
        ("printf hello | sha256sum | cut -c1-16", "2cf24dba5fb0a30e"),
        # environment and built-ins
        ("seq 3 | paste -s -d+ -", "1+2+3"),
        ("echo 2 | xargs expr 40 +", "42"),
        ("expr 6 \\* 7", "42"),
        ("export X=4; test $X -gt 3 && echo big", "big"),
        ("cd wp-content/plugins && pwd", "/wordpress/wp-content/plugins"),
        ("echo $(printf '%s-' a b)", "a-b-"),
        ("for f in a b; do echo $f; done | rev | tr '\\n' ,", "a,b,"),
        ("ls > /dev/null 2>&1 && cat /dev/null && echo quiet", "quiet"),
    ],
)
def test_utility_families_run_over_the_sandbox(box: Any, command: str, expected: str) -> None:
    result = ex(box, command)
    assert result.exitCode == 0, result.stderr
    assert result.classification == "read_only"
    assert result.stdout.strip() == expected


def test_commands_see_what_php_sees(box: Any) -> None:
    php(box, "file_put_contents('/wordpress/wp-content/php-made.txt', 'from php');")
    assert ex(box, "cat /wordpress/wp-content/php-made.txt").stdout == "from php"
    assert "simple-plugin.php" in ex(box, f"ls {PLUGIN}").stdout  # the mount, as PHP sees it


def test_pipelines_and_redirection_write_into_the_sandbox(box: Any) -> None:
    result = ex(
        box,
        "echo one > /tmp/exec-a.txt && echo two >> /tmp/exec-a.txt && cat /tmp/exec-a.txt | "
        "tr a-z A-Z | tee /tmp/exec-b.txt | wc -l",
        caps=("read", "write"),
    )
    assert result.classification == "sandbox_write" and result.exitCode == 0, result.stderr
    assert result.stdout.strip() == "2" and result.changedFiles
    assert php(box, "echo file_get_contents('/tmp/exec-b.txt');") == "ONE\nTWO\n"
    edited = ex(
        box,
        "cp /tmp/exec-a.txt /tmp/exec-c.txt && sed -i s/one/uno/ /tmp/exec-c.txt && cat /tmp/exec-c.txt",
        caps=("read", "write"),
    )
    assert edited.stdout == "uno\ntwo\n"


# -- classification --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, classification",
    [
        ("echo x > f", "sandbox_write"),
        ("echo x >> f", "sandbox_write"),
        ("sed -n p wp-load.php", "read_only"),
        ("sed -i s/a/b/ wp-load.php", "sandbox_write"),
        ("sed -n 'w out' wp-load.php", "sandbox_write"),
        ("sed -f script.sed wp-load.php", "sandbox_write"),
        ("awk -f prog.awk wp-load.php", "sandbox_write"),
        ("wp option update blogname x", "sandbox_write"),
        ("wp plugin activate hello", "sandbox_write"),
        ("wp eval 'echo 1;'", "eval"),
        ("wp eval-file /tmp/x.php", "eval"),
        ("cat wp-load.php | grep -c require | sort", "read_only"),
        ("ls 2>/dev/null", "read_only"),
        ("ls 2>&1 | head -1", "read_only"),
        ("ls | tee listing.txt", "sandbox_write"),
        ("find . -name '*.tmp' -delete", "sandbox_write"),
        ("find . -name x -exec rm {} \\;", "sandbox_write"),
        ("echo a | xargs rm", "sandbox_write"),
        ("echo $(touch x)", "sandbox_write"),
        ("for i in 1; do mkdir d$i; done", "sandbox_write"),
        ("f() { rm -f x; }; true", "sandbox_write"),
        ("eval 'cat wp-load.php > copy'", "sandbox_write"),
        ("sort -o out wp-load.php", "sandbox_write"),
        ("$CMD wp-load.php", "eval"),
        ("python3 -c 1", "eval"),
        ("on rg -l add_action", "read_only"),
    ],
)
def test_classification_table(box: Any, command: str, classification: str) -> None:
    assert_classified(box, command, classification)


@pytest.mark.parametrize("command", ["wp option get siteurl", "wp post list --format=ids"])
def test_read_only_wp_commands_are_classified_read_only(native_box: Any, command: str) -> None:
    """The table's rows that `read` allows and that so run WP-CLI: on the native box, where `wp option get
    siteurl` also shows WP-CLI ran in the sandbox (test_the_sidecar_starts_no_process runs `wp` on Playground and
    checks the same)."""
    result = assert_classified(native_box, command, "read_only")
    if command == "wp option get siteurl":
        assert_wp_cli_ran(result)


def assert_classified(run: Any, command: str, classification: str) -> Any:
    """``command`` run with `read` only is classified ``classification``; what needs more is refused, naming
    the missing capability, before it runs. Returns the result."""
    result = ex(run, command, caps=("read",))
    assert result.classification == classification, result.reason
    if classification != "read_only":
        assert result.error is not None and result.error.code == "capability-denied"
        assert result.exitCode == 126
        needed = "write" if classification == "sandbox_write" else "eval"
        assert result.error.details is not None and result.error.details["missing"] == [needed]
        assert needed in result.error.message
    return result


@pytest.mark.parametrize("flag", ["--url=http://other.test", "--blog=2", "--network", "--network-wide", "@production"])
def test_wp_site_selection_is_rejected(box: Any, flag: str) -> None:
    result = ex(box, f"wp option get home {flag}", caps=("read", "write", "eval"))
    assert result.error is not None and result.error.code == "wp-site-locked"
    assert result.exitCode != 0 and flag.split("=")[0] in result.error.message


def test_denied_commands_change_nothing(box: Any) -> None:
    before = php(box, "echo md5_file('/wordpress/wp-load.php');")
    for command in (
        "echo x > /wordpress/denied.txt",
        "rm /wordpress/wp-load.php",
        "ls; touch /wordpress/denied.txt",
        "cat wp-load.php | sed -i s/a/b/ wp-load.php",
    ):
        result = ex(box, command)
        assert result.error is not None and result.error.code == "capability-denied", command
        assert result.stdout == ""  # nothing ran, not even the harmless first command
    assert php(box, "echo md5_file('/wordpress/wp-load.php');") == before
    assert php(box, "var_export(file_exists('/wordpress/denied.txt'));") == "false"
    eval_denied = ex(box, 'wp eval \'update_option("blogname", "changed");\'', caps=("read", "write"))
    assert eval_denied.error is not None and eval_denied.error.details["missing"] == ["eval"]
    assert php(box, "require '/wordpress/wp-load.php'; echo get_option('blogname');") != "changed"


def test_a_read_only_command_cannot_write_even_when_misjudged(box: Any) -> None:
    """The file system of a read_only command refuses writes (docs/exec.md): awk's output
    redirection is classified by a heuristic, the read-only file system holds regardless."""
    result = ex(box, "awk 'BEGIN { f = \"/tmp/awk-out\"; print 1 > f }'", caps=("read", "write"))
    assert result.classification == "sandbox_write"  # classified as a write: allowed and done
    assert result.exitCode == 0, result.stderr
    blocked = ex(box, "echo '{}' | jq . ; cp /tmp/awk-out /tmp/awk-copy", caps=("read",))
    assert blocked.error is not None  # cp: denied before running
    assert php(box, "var_export(file_exists('/tmp/awk-copy'));") == "false"


# -- the wall ------------------------------------------------------------------------------------


def test_dotdot_and_symlinks_stay_inside_the_sandbox(box: Any) -> None:
    up = "../" * 12
    secret = str(box.secret)
    for command in (
        f"cat {up}{secret.lstrip('/')}",
        f"cat {secret}",
        "cat /etc/passwd",
        f"cat {PLUGIN}/host-link.txt",
        f"cd {up} && cat .{secret}",
        f"ls {Path(secret).parent}",
    ):
        result = ex(box, command)
        assert HOST_MARKER not in result.stdout + result.stderr, command
        assert result.exitCode != 0, command
    assert ex(box, f"cd {up} && pwd").stdout.strip() == "/"
    # a link made inside the sandbox resolves inside it too, and exec itself makes no links
    php(box, "@symlink('/', '/tmp/root-link');")
    assert HOST_MARKER not in ex(box, f"cat /tmp/root-link{secret}").stdout
    for target in (secret, "/wordpress/wp-load.php"):
        made = ex(box, f"ln -s {target} /tmp/exec-link", caps=("read", "write"))
        assert made.exitCode != 0
        assert php(box, "var_export(file_exists('/tmp/exec-link') || is_link('/tmp/exec-link'));") == "false"
    assert "links cannot be made" in made.stderr


def test_dot_git_is_invisible(box: Any) -> None:
    php(
        box,
        f"@mkdir('{PLUGIN}/sub/.git', 0777, true); file_put_contents('{PLUGIN}/sub/.git/config', '{GIT_MARKER}');"
        f" file_put_contents('{PLUGIN}/sub/visible.txt', 'ok');",
    )
    assert php(box, f"echo file_get_contents('{PLUGIN}/sub/.git/config');") == GIT_MARKER  # PHP sees it
    for command in (
        f"on rg {GIT_MARKER} --all",
        f"on rg {GIT_MARKER} --path {PLUGIN} --hidden --no-ignore",
        f"grep -r {GIT_MARKER} {PLUGIN}",
        f"cat {PLUGIN}/sub/.git/config",
        f"ls -a {PLUGIN}/sub",
        f"find {PLUGIN}",
        f"cd {PLUGIN}/sub/.git && cat config",
        f"on rg --files --hidden --path {PLUGIN}",
    ):
        result = ex(box, command)
        assert GIT_MARKER not in result.stdout and ".git" not in result.stdout, command
    assert "visible.txt" in ex(box, f"ls -a {PLUGIN}/sub").stdout
    assert ex(box, "ls", cwd=f"{PLUGIN}/sub/.git").error.code == "invalid-cwd"  # type: ignore[union-attr]


# -- on --------------------------------------------------------------------------------------------


def test_on_help_and_rg_scopes(box: Any) -> None:
    listing = ex(box, "on help")
    assert "on rg" in listing.stdout and "wp" in listing.stdout
    assert "--core" in ex(box, "on help rg").stdout
    core = ex(box, "on rg -l -F 'function wp_insert_post(' --core")
    assert core.stdout.strip() == "/wordpress/wp-includes/post.php"
    assert ex(box, "on rg -l -F 'function wp_insert_post(' --plugins").exitCode == 1
    plugin = ex(box, "on rg -n -i 'BETA' --scope simple-plugin")
    assert plugin.stdout.splitlines() == [f"{PLUGIN}/readme.txt:2:beta", f"{PLUGIN}/readme.txt:4:beta"]
    assert ex(box, "on rg -c beta --plugins").stdout.strip() == f"{PLUGIN}/readme.txt:2"
    assert ex(box, "on rg -c -w bet --plugins").exitCode == 1
    assert ex(box, "on rg --max-count 1 -I beta --path " + PLUGIN).stdout == "beta\n"
    globbed = ex(box, "on rg -l -g '*.php' 'Plugin Name' --content").stdout.splitlines()
    assert f"{PLUGIN}/simple-plugin.php" in globbed and all(p.endswith(".php") for p in globbed)
    themes = ex(box, "on rg -l 'Theme Name' --themes -g style.css").stdout
    assert "twentytwentyfour/style.css" in themes
    assert ex(box, "on rg x --scope nope").exitCode == 2


# -- wp and the eval policy ------------------------------------------------------------------------


def assert_wp_cli_ran(result: Any) -> None:
    """`wp option get home|siteurl` printed the site's address: WP-CLI ran, its phar's shebang line not shown."""
    assert result.exitCode == 0, result.stderr
    assert result.stdout.strip().startswith("http") and "#!/usr/bin/env php" not in result.stdout


@pytest.mark.parametrize(
    "code",
    [
        "system('id');",
        "exec('id');",
        "shell_exec('id');",
        "passthru('id');",
        "popen('id', 'r');",
        "proc_open('id', [], $p);",
        "echo `id`;",
        "eval('echo 1;');",
        "include '/etc/passwd';",
        "require_once '/tmp/evil.php';",
        "file_get_contents('/etc/passwd');",
        "file_put_contents(ABSPATH . '../outside.txt', 'x');",
        "file_get_contents(ABSPATH . '.git/config');",
        "file_get_contents($path);",
        "$f = 'sys' . 'tem'; $f('id');",
        "call_user_func('phpinfo');",
        "array_map('system', ['id']);",
        "exit(1);",
        "die('x');",
        "new ZipArchive();",
        "new PDO('sqlite::memory:');",
        "FFI::cdef('int x;');",
        "new SplFileObject('/wordpress/wp-config.php');",
        "wpmu_create_blog('a', '/', 't', 1);",
        "$o->$m();",
        "new $class();",
        "fopen('php://filter/resource=/etc/passwd', 'r');",
    ],
)
def test_eval_policy_rejects_each_construct(box: Any, code: str) -> None:
    result = ex(box, f"wp eval {shlex.quote(code)}", caps=("read", "eval"))
    assert result.classification == "eval"
    assert result.error is not None and result.error.code == "eval-policy", result.stderr
    assert result.exitCode == 126


def test_eval_policy_allows_wordpress_apis_and_rejects_before_any_effect(native_box: Any) -> None:
    """On the native box: what the policy lets through runs WP-CLI (the policy itself is checked before anything
    runs, the same on both backends; test_eval_policy_rejects_each_construct refuses on Playground)."""
    box = native_box
    ok = ex(
        box,
        'wp eval \'update_option("codebox_exec", "v1"); $q = new WP_Query(["post_type" => "post"]);'
        ' echo get_option("codebox_exec"), ":", $q->found_posts >= 0 ? "q" : "";\'',
        caps=("read", "eval"),
    )
    assert ok.exitCode == 0, ok.stderr
    assert ok.stdout.strip() == "v1:q"
    bad = ex(box, 'wp eval \'update_option("codebox_exec", "v2"); system("id");\'', caps=("read", "eval"))
    assert bad.error is not None and bad.error.code == "eval-policy"
    assert php(box, "require '/wordpress/wp-load.php'; echo get_option('codebox_exec');") == "v1"
    # eval-file: the file's code is checked too
    php(
        box,
        'file_put_contents(\'/tmp/probe-ok.php\', \'<?php echo get_bloginfo("name") !== null ? "named" : "";\');'
        "file_put_contents('/tmp/probe-bad.php', '<?php echo shell_exec(\"id\");');",
    )
    assert ex(box, "wp eval-file /tmp/probe-ok.php", caps=("read", "eval")).stdout.strip() == "named"
    # a relative path is read from the data root, where the policy resolved it
    rel = ex(
        box,
        'wp eval --skip-wordpress \'echo strlen(file_get_contents("wp-load.php")) > 0 ? "rel" : "";\'',
        caps=("read", "eval"),
    )
    assert rel.stdout.strip() == "rel", rel.stderr
    refused = ex(box, "wp eval-file /tmp/probe-bad.php", caps=("read", "eval"))
    assert refused.error is not None and refused.error.code == "eval-policy"


# -- limits and the record -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, limits, hit",
    [
        ("while true; do :; done", {"maxLoopIterations": 500}, "maxLoopIterations"),
        ("f() { f; }; f", {"maxCallDepth": 20}, "maxCallDepth"),
        ("seq 1 100000", {"maxOutputBytes": 2000}, "maxOutputBytes"),
        ("sleep 5", {"timeoutMs": 500}, "timeoutMs"),
    ],
)
def test_limits_are_enforced_and_reported(box: Any, command: str, limits: dict[str, int], hit: str) -> None:
    result = ex(box, command, **limits)
    assert result.exitCode != 0
    assert result.limitExceeded == hit, (result.stderr, result.stdout[-200:])
    assert getattr(result.limits, hit) == limits[hit]
    if hit == "maxOutputBytes":
        assert len(result.stdout.encode()) <= limits[hit]


def test_every_exec_is_recorded_with_classification_and_capabilities(box: Any) -> None:
    ex(box, "echo recorded-ok")
    ex(box, "touch /tmp/recorded-denied")
    lines = [json.loads(line) for line in (box.run_dir / "commands.jsonl").read_text().splitlines()]
    mine = [line for line in lines if line["command"] == "exec" and "recorded-" in line["args"][0]]
    assert [m["exitCode"] for m in mine] == [0, 126]
    assert mine[0]["diagnostics"]["classification"] == "read_only"
    assert mine[1]["diagnostics"]["classification"] == "sandbox_write"
    assert mine[1]["result"]["error"]["code"] == "capability-denied"
    assert all(m["diagnostics"]["capabilities"] == ["read"] for m in mine)
    events = [json.loads(line) for line in (box.run_dir / "events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "exec.denied" and e["data"]["classification"] == "sandbox_write" for e in events)


def test_the_sidecar_starts_no_process(box: Any) -> None:
    """just-bash runs inside the Node process: no child appears under the sidecar while commands run, WP-CLI
    (the module's one WP-CLI call on Playground) included."""
    pid = box.sandbox.sidecar.node_pid()
    assert pid is not None
    # a generous timeout: WP-CLI's first call on Playground can take longer than the default 30 s on a loaded
    # machine, and a command stopped by its timeout prints nothing
    ran = ex(box, "on rg -c add_action --all | sort | head -3; wp option get home; seq 100 | wc -l", timeoutMs=600_000)
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert children == []
    lines = ran.stdout.splitlines()
    assert len(lines) == 5 and lines[-1].strip() == "100", ran
    assert_wp_cli_ran(ran.model_copy(update={"stdout": lines[-2]}))


def test_a_relative_cwd_is_inside_the_site(box: Any) -> None:
    result = ex(box, "pwd && ls | grep -c hello.php", cwd="wp-content/plugins")
    assert result.cwd == "/wordpress/wp-content/plugins"
    assert result.stdout.split() == ["/wordpress/wp-content/plugins", "1"]


def _cli_exec(*args: str) -> subprocess.CompletedProcess[str]:
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", "exec", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=repo,
        env=env,
    )


def recorded_backend(artifacts: Path) -> str:
    """The backend the one bundle under ``artifacts`` records (metadata.json)."""
    [bundle] = [p for p in artifacts.iterdir() if (p / "manifest.json").exists()]
    return str(json.loads((bundle / "metadata.json").read_text())["runtime"]["backend"])


def test_cli_exec_json_on_a_fresh_sandbox(tmp_path: Path, codebox_home: Path) -> None:
    """`codebox exec --json` on a fresh (native) sandbox prints the exec result document (through the real entry
    point in this process, docs/performance.md "Test suite"; a `codebox exec` process of its own boots one in
    test_the_printed_exit_code_is_the_process_exit_code); a command its capabilities do not allow prints the
    refusal as one, from a `codebox exec` process of its own."""
    out = codebox_in_process(
        codebox_home,
        "exec",
        "--backend",
        "native",
        "--artifacts",
        str(tmp_path / "a"),
        "--json",
        "cat wp-includes/version.php | grep -c wp_version",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == "wp-codebox/exec-result/v1"
    assert doc["classification"] == "read_only" and doc["capabilities"] == ["read"]
    assert int(doc["stdout"].strip()) >= 1 and doc["cwd"] == "/wordpress" and doc["sandboxId"]
    assert recorded_backend(tmp_path / "a") == "native"
    denied = _cli_exec("--backend", "native", "--artifacts", str(tmp_path / "a"), "--json", "rm wp-load.php")
    assert denied.returncode != 0
    doc = json.loads(denied.stdout)
    assert doc["error"]["code"] == "capability-denied" and doc["error"]["details"]["missing"] == ["write"]


@pytest.mark.parametrize(
    ("command", "caps", "missing", "allow"),
    [
        ("touch /wordpress/x", "read", "write", "read,write"),
        ("wp eval 'echo 1;'", "read,write", "eval", "read,write,eval"),
    ],
)
def test_a_denied_exec_exits_before_any_boot(tmp_path: Path, command: str, caps: str, missing: str, allow: str) -> None:
    """Classified and checked on the host first (docs/exec.md, "Classification"): exit 3, a message naming
    the capability and the flag that allows it, and nothing booted — an empty, private CODEBOX_HOME stays
    empty (no golden site, no sidecar, no run folder) and no bundle is written. Through the real entry point in
    this process (docs/performance.md "Test suite"); a refusal before boot from a `codebox exec` process of its
    own is test_cli_exec_json_on_a_fresh_sandbox's."""
    home, artifacts = tmp_path / "home", tmp_path / "artifacts"
    home.mkdir()
    denied = codebox_in_process(home, "exec", "--artifacts", str(artifacts), "--capabilities", caps, command)
    assert denied.returncode == 3, denied.stderr
    assert f"needs the {missing} capability" in denied.stderr
    assert f"allow it with --capabilities {allow}" in denied.stderr
    assert "boot" not in denied.stderr.replace("before boot", "")  # no progress line about booting
    assert list(home.iterdir()) == [] and not artifacts.exists()


def test_the_printed_exit_code_is_the_process_exit_code(tmp_path: Path) -> None:
    """A refusal the sandbox shell makes after boot (the eval policy; its result carries exitCode 126) exits 3
    and prints "exit 3": the line on stderr, the process and the README table agree (on a native sandbox)."""
    refused = _cli_exec(
        "--backend",
        "native",
        "--artifacts",
        str(tmp_path / "a"),
        "--capabilities",
        "read,eval",
        "wp eval 'shell_exec(\"id\");'",
    )
    assert refused.returncode == 3, refused.stderr
    assert "codebox: exit 3 (refused: eval-policy)" in refused.stderr and "exit 126" not in refused.stderr
    assert recorded_backend(tmp_path / "a") == "native"


async def test_tui_console_on_a_held_preview(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Live run with a hold (on the native backend, chosen in the Launch form): the held preview serves the site
    as the command left it, the console appears, runs commands with the capabilities shown, refuses a write until
    write is granted explicitly, and closes when the preview does; the hold ends as closed and nothing listens at
    the preview's address afterwards (the Launch form's held preview: test_tui_launch.py's Launch runs do not
    hold)."""
    import asyncio
    import urllib.error
    import urllib.request

    from textual.widgets import Input

    from codebox_tui.app import CodeboxApp
    from codebox_tui.screens.launch import LaunchScreen
    from codebox_tui.screens.live_run import LiveRunScreen
    from tests.factories.tui import choose_backend, wait_while
    from widgets.console import ExecConsole

    monkeypatch.chdir(tmp_path)
    app = CodeboxApp()
    async with app.run_test(size=(120, 50)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)
        await choose_backend(pilot, "native")
        app.screen.query_one("#args", Input).value = 'code=\'update_option("blogname", "Held Site"); echo 1;\''
        hold = app.screen.query_one("#hold", Input)
        hold.value = "10m"
        hold.focus()
        await pilot.press("enter")
        await pilot.pause()
        live = app.screen
        assert isinstance(live, LiveRunScreen) and live.request is not None and live.request.backend == "native"
        await wait_while(lambda: live.progress.hold_until is None)
        assert live.progress.hold_until is not None and live.state == "starting"
        url = live.progress.preview_url
        await wait_while(lambda: not live.query("#console Input"))  # the console and its input line mounted
        console = live.query_one(ExecConsole)
        try:
            assert url and "held" in str(live.query_one("#progress").render())
            page = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=60).read().decode())
            assert "Held Site" in page  # the live sandbox, after the command ran
            await wait_while(lambda: not console.query_one(Input).has_focus, 30)
            assert console.query_one(Input).has_focus  # what the user types next goes to the console
            await pilot.press("escape")  # Home; the held preview goes on and Home says how to get back
            await pilot.pause()
            home = app.screen
            assert home is not live and "live run" in str(home.query_one("#home-status").render())
            commands = [c.title for c in app.get_system_commands(home)]
            assert any(t.startswith("Return to live run: ") for t in commands), commands
            await pilot.press("l")
            await pilot.pause()
            assert app.screen is live and live.query_one(ExecConsole) is console  # the same run, its console
            await _drive_console(pilot, live, console)
        finally:
            live.control.release()  # never leave the hold running (the app waits for its worker)
        await wait_while(lambda: live.state == "starting", 60)
        assert console.query_one(Input).disabled  # closed with the preview
        assert live.bundle_dir is not None
        assert json.loads((live.bundle_dir / "metadata.json").read_text())["runtime"]["backend"] == "native"
        events = [json.loads(line) for line in (live.bundle_dir / "events.jsonl").read_text().splitlines()]
        assert [e["data"]["classification"] for e in events if e["type"] in ("exec.finished", "exec.denied")] == [
            "read_only",
            "read_only",
            "sandbox_write",
            "sandbox_write",
        ]
        assert [e["data"]["reason"] for e in events if e["type"] == "runtime.hold-ended"] == ["closed"]
    assert url
    try:
        await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
        served = True
    except urllib.error.HTTPError:  # an answer, even an error page, means something still listens there
        served = True
    except OSError:
        served = False
    assert not served  # disposed with the run: nothing listens at the preview's address


async def _drive_console(pilot: Any, live: Any, console: Any) -> None:
    from textual.widgets import Checkbox, Input, RichLog

    from tests.factories.tui import wait_while
    from widgets.event_tail import EventTail

    async def run(command: str) -> Any:
        before = len(console.history), console.busy
        field = console.query_one(Input)
        field.focus()
        field.value = command
        await pilot.press("enter")
        await wait_while(lambda: console.busy or len(console.history) == before[0], 120)
        await pilot.pause(0.2)
        return " ".join(str(line.text) for line in console.query_one(RichLog).lines)

    log = await run("cat wp-includes/version.php | grep -c wp_version")
    assert "→ exit 0 · read_only" in log
    # output reads as a terminal shows it: a line per line, tabs expanded, ESC as a visible escape
    await run("printf 'first\\tcell\\nsecond \\033[2J line\\n'")
    lines = [str(line.text).rstrip() for line in console.query_one(RichLog).lines]
    assert "first   cell" in lines and "second \\x1b[2J line" in lines
    assert not [line for line in lines if "\\x0a" in line or "\\x09" in line]
    log = await run("touch /tmp/console-made")
    assert "needs the write capability" in log and "→ exit 126 · sandbox_write" in log
    assert php(live.session, "var_export(file_exists('/tmp/console-made'));") == "false"
    console.query_one(Input).focus()
    await pilot.press("f2")
    await pilot.pause()
    assert console.query_one("#cap-write", Checkbox).value and console.capabilities == ["read", "write"]
    log = await run("touch /tmp/console-made && ls /tmp")
    assert "capability write granted" in log and "console-made" in log
    assert php(live.session, "var_export(file_exists('/tmp/console-made'));") == "true"
    field = console.query_one(Input)
    field.focus()
    await pilot.press("up")
    assert field.value == "touch /tmp/console-made && ls /tmp"  # history
    live.query_one(EventTail).focus()
    await pilot.press("c")  # close the preview: the console closes with it

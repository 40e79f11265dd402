"""Plugin suites as maintainers keep them, run unchanged through the real CLI, with the WordPress core PHPUnit
library and the PHPUnit Polyfills from ``../shared/toolchains`` given the way a maintainer's machine gives them
(``WP_TESTS_DIR``, ``WP_TESTS_PHPUNIT_POLYFILLS_PATH``).

Every case is about what Codebox gives the suite and reads back (the test library's configuration, remedies,
the polyfills search, a work tree's baseline), the same on both backends, so they run on the native backend (real
PHP in bubblewrap, several times cheaper: docs/backends.md) and check that their bundle says so; PHPUnit with the
WordPress test library on Playground is proved by tests/e2e/test_wp_unittestcase.py's fix."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories.native import RECORDED, recorded_backend
from tests.factories.paths import REPO
from tests.factories.toolchains import PHPUNIT_POLYFILLS, WP_TESTS_LIB, require

pytestmark = pytest.mark.native

LEGACY = REPO / "examples" / "legacy-scaffold-plugin" / "reading-time"
TOOLCHAIN_ENV = ("WP_TESTS_DIR", "WP_TESTS_PHPUNIT_POLYFILLS_PATH", "CODEBOX_WP_CLI_PHAR")


def _run_phpunit(
    tmp_path: Path, home: Path, plugin: Path, slug: str, backend: str = "native", **env: str
) -> dict[str, Any]:
    base = {k: v for k, v in os.environ.items() if k not in TOOLCHAIN_ENV}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "run",
            "--backend",
            backend,
            "--mount",
            f"{plugin}:/wordpress/wp-content/plugins/{slug}",
            "--command",
            "wordpress.phpunit",
            "--arg",
            f"plugin-slug={slug}",
            "--timeout",
            "15m",
            "--artifacts",
            str(tmp_path / "art"),
            "--json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=1500,
        env={**base, "CODEBOX_HOME": str(home), **env},
        cwd=tmp_path,
    )
    assert proc.stdout.strip(), proc.stderr[-3000:]
    doc: dict[str, Any] = json.loads(proc.stdout)
    doc["_exit"] = proc.returncode
    if "runtime" in doc:  # it booted: on the backend asked for
        assert doc["runtime"]["backend"] == RECORDED[backend], doc["runtime"]
    return doc


def _execution(doc: dict[str, Any]) -> dict[str, Any]:
    """The first execution, its output taken from where ``diagnostics.outputRef`` points (the run document keeps
    each output once, docs/contracts.md)."""
    execution: dict[str, Any] = dict(doc["executions"][0])
    for stream, pointer in ((execution.get("diagnostics") or {}).get("outputRef") or {}).items():
        node: Any = doc
        for part in pointer.strip("/").split("/"):
            node = node[part]
        execution[stream] = node
    return execution


@pytest.mark.timeout(900)  # a cold run installing the test site, then the suite
def test_older_scaffold_bootstrap_runs_unchanged(codebox_home: Path, tmp_path: Path) -> None:
    """The bootstrap never forwards the polyfills' path: the library still finds them (the config Codebox
    gives it defines the constant), and the suite's real counts come back: 4 pass, 1 fails on the known bug."""
    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    assert "POLYFILLS" not in (LEGACY / "tests" / "bootstrap.php").read_text()  # the shape under test
    plugin = tmp_path / "reading-time"
    shutil.copytree(LEGACY, plugin)
    doc = _run_phpunit(
        tmp_path,
        codebox_home,
        plugin,
        "reading-time",
        WP_TESTS_DIR=str(WP_TESTS_LIB),
        WP_TESTS_PHPUNIT_POLYFILLS_PATH=str(PHPUNIT_POLYFILLS),
    )
    execution = _execution(doc)
    suite, stdout = execution["result"]["json"], execution["stdout"]
    assert "PHPUnit Polyfills library is a requirement" not in stdout
    assert suite["wordpress"] == "tests-lib", stdout[-3000:]
    assert (suite["tests"], suite["passed"], suite["failed"]) == (5, 4, 1), stdout[-3000:]
    failed = [c for c in suite["cases"] if c["status"] == "failed"]
    assert [c["name"] for c in failed] == ["test_empty_post_takes_no_time"]
    assert failed[0]["message"] == "Failed asserting that 1 is identical to 0."
    assert doc["_exit"] != 0  # a failing suite is not a successful run


def _git_work_tree_plugin(root: Path) -> Path:
    """A plugin as a maintainer's checkout looks: a committed plugin file and readme, a Composer-like
    ``vendor/`` that ``.gitignore`` leaves out, an untracked notes file, and a tracked file edited but
    not committed."""
    plugin = root / "tidy-titles"
    (plugin / "vendor" / "composer").mkdir(parents=True)
    (plugin / "tidy-titles.php").write_text(
        "<?php\n/**\n * Plugin Name: Tidy Titles\n */\n\nadd_filter( 'the_title', 'trim' );\n"
    )
    (plugin / "readme.txt").write_text("=== Tidy Titles ===\nStable tag: 1.0\n")
    (plugin / ".gitignore").write_text("/vendor/\n/build/\n")
    git = ["git", "-C", str(plugin), "-c", "user.name=Maintainer", "-c", "user.email=m@example.test"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "Tidy Titles 1.0"], check=True)
    (plugin / "vendor" / "autoload.php").write_text("<?php\nreturn require __DIR__ . '/composer/autoload_real.php';\n")
    (plugin / "vendor" / "composer" / "autoload_real.php").write_text("<?php\nreturn array();\n")
    (plugin / "vendor" / "composer" / "installed.json").write_text('{"packages": []}\n')
    (plugin / "build").mkdir()
    (plugin / "build" / "tidy-titles.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (plugin / "NOTES.md").write_text("- check the_title on feeds\n")
    (plugin / "readme.txt").write_text("=== Tidy Titles ===\nStable tag: 1.1\n")  # not committed yet
    return plugin


def _run_php(tmp_path: Path, home: Path, plugin: Path, code: str, name: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "run",
            "--backend",
            "native",
            "--mount",
            f"{plugin}:/wordpress/wp-content/plugins/tidy-titles",
            "--command",
            "wordpress.run-php",
            "--arg",
            f"code={code}",
            "--artifacts",
            str(tmp_path / name),
            "--json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "CODEBOX_HOME": str(home)},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    bundle = Path(json.loads(proc.stdout)["artifacts"]["directory"])
    assert recorded_backend(bundle) == "native"
    changed: list[dict[str, Any]] = json.loads((bundle / "files" / "changed-files.json").read_text())["files"]
    return changed


@pytest.mark.timeout(600)  # two runs, each booting a sandbox
def test_git_work_tree_run_reports_only_what_the_sandbox_changed(codebox_home: Path, tmp_path: Path) -> None:
    """Untracked files, ignored folders and uncommitted edits reach the sandbox, so they are part of the
    baseline: a run that only echoes reports no changes, a run that edits one file reports that file."""
    home = codebox_home
    plugin = _git_work_tree_plugin(tmp_path)
    assert _run_php(tmp_path, home, plugin, "echo 'hello';", "echo") == []
    edit = (
        "file_put_contents( WP_PLUGIN_DIR . '/tidy-titles/readme.txt', \"Tested up to: 6.5\\n\", FILE_APPEND );"
        " echo 'edited';"
    )
    changed = _run_php(tmp_path, home, plugin, edit, "edit")
    assert [(c["relativePath"], c["status"]) for c in changed] == [("readme.txt", "modified")]
    # the diff's old side is the uncommitted edit the sandbox was given, not HEAD's readme
    before = (plugin / "readme.txt").read_bytes()
    assert changed[0]["beforeSha256"] == hashlib.sha256(before).hexdigest()


@pytest.mark.timeout(900)
def test_phpunit_7_style_set_up_says_what_would_make_it_run(codebox_home: Path, tmp_path: Path) -> None:
    """A suite written for PHPUnit 7 (``setUp()`` without ``: void``) cannot load under PHPUnit 9: no test
    runs, and the reason names the class, the method and the two ways to fix it."""
    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    plugin = tmp_path / "reading-time"
    shutil.copytree(LEGACY, plugin)
    test_file = plugin / "tests" / "test-reading-time.php"
    test_file.write_text(
        test_file.read_text().replace(
            "class Test_Reading_Time extends WP_UnitTestCase {\n",
            "class Test_Reading_Time extends WP_UnitTestCase {\n\n\tfunction setUp() {\n\t\tparent::setUp();\n\t}\n",
        )
    )
    doc = _run_phpunit(
        tmp_path,
        codebox_home,
        plugin,
        "reading-time",
        WP_TESTS_DIR=str(WP_TESTS_LIB),
        WP_TESTS_PHPUNIT_POLYFILLS_PATH=str(PHPUNIT_POLYFILLS),
    )
    execution = _execution(doc)
    suite = execution["result"]["json"]
    assert suite["tests"] == 0 and doc["_exit"] != 0, execution["stdout"][-3000:]
    assert "Declaration of Test_Reading_Time::setUp()" in suite["reason"]
    assert "declare `setUp(): void`" in suite["reason"] and "set_up()" in suite["reason"]
    assert "no tests ran: " in execution["stdout"]


def test_missing_polyfills_say_where_they_were_looked_for(codebox_home: Path, tmp_path: Path) -> None:
    """The older scaffold with the test library but no polyfills anywhere: no suite is attempted, and the
    error names every place looked in and the option, variable and Composer package that would fix it."""
    require(WP_TESTS_LIB / "includes" / "bootstrap.php")
    plugin = tmp_path / "reading-time"
    shutil.copytree(LEGACY, plugin)
    doc = _run_phpunit(tmp_path, codebox_home, plugin, "reading-time", WP_TESTS_DIR=str(WP_TESTS_LIB))
    assert doc["_exit"] != 0
    text = json.dumps(doc)
    assert "phpunit-polyfills-missing" in text, text[-3000:]
    assert "--phpunit-polyfills DIR" in text and "WP_TESTS_PHPUNIT_POLYFILLS_PATH" in text
    assert "yoast/phpunit-polyfills" in text

"""Plugin suites as maintainers keep them, run unchanged through the real CLI and real Playground, with the
WordPress core PHPUnit library and the PHPUnit Polyfills from ``../shared/toolchains`` given the way a
maintainer's machine gives them (``WP_TESTS_DIR``, ``WP_TESTS_PHPUNIT_POLYFILLS_PATH``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories.paths import REPO
from tests.factories.toolchains import PHPUNIT_POLYFILLS, WP_TESTS_LIB, require

pytestmark = pytest.mark.playground

LEGACY = REPO / "examples" / "legacy-scaffold-plugin" / "reading-time"
TOOLCHAIN_ENV = ("WP_TESTS_DIR", "WP_TESTS_PHPUNIT_POLYFILLS_PATH", "CODEBOX_WP_CLI_PHAR")


def _run_phpunit(tmp_path: Path, home: Path, plugin: Path, slug: str, **env: str) -> dict[str, Any]:
    base = {k: v for k, v in os.environ.items() if k not in TOOLCHAIN_ENV}
    proc = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "run", "--mount", f"{plugin}:/wordpress/wp-content/plugins/{slug}",
         "--command", "wordpress.phpunit", "--arg", f"plugin-slug={slug}", "--timeout", "15m",
         "--artifacts", str(tmp_path / "art"), "--json", "--quiet"],
        capture_output=True, text=True, timeout=1500, env={**base, "CODEBOX_HOME": str(home), **env}, cwd=tmp_path)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    doc: dict[str, Any] = json.loads(proc.stdout)
    doc["_exit"] = proc.returncode
    return doc


def _execution(doc: dict[str, Any]) -> dict[str, Any]:
    execution: dict[str, Any] = doc["executions"][0]
    return execution


def test_older_scaffold_bootstrap_runs_unchanged(playground_session: Any, tmp_path: Path) -> None:
    """The bootstrap never forwards the polyfills' path: the library still finds them (the config Codebox
    gives it defines the constant), and the suite's real counts come back: 4 pass, 1 fails on the known bug."""
    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    assert "POLYFILLS" not in (LEGACY / "tests" / "bootstrap.php").read_text()  # the shape under test
    plugin = tmp_path / "reading-time"
    shutil.copytree(LEGACY, plugin)
    doc = _run_phpunit(tmp_path, Path(playground_session.home), plugin, "reading-time",
                       WP_TESTS_DIR=str(WP_TESTS_LIB), WP_TESTS_PHPUNIT_POLYFILLS_PATH=str(PHPUNIT_POLYFILLS))
    execution = _execution(doc)
    suite, stdout = execution["result"]["json"], execution["stdout"]
    assert "PHPUnit Polyfills library is a requirement" not in stdout
    assert suite["wordpress"] == "tests-lib", stdout[-3000:]
    assert (suite["tests"], suite["passed"], suite["failed"]) == (5, 4, 1), stdout[-3000:]
    failed = [c for c in suite["cases"] if c["status"] == "failed"]
    assert [c["name"] for c in failed] == ["test_empty_post_takes_no_time"]
    assert failed[0]["message"] == "Failed asserting that 1 is identical to 0."
    assert doc["_exit"] != 0  # a failing suite is not a successful run

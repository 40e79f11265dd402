"""Run parity (docs/backends.md): the same inputs through the real `codebox` CLI on both backends give bundles
that mean the same — the same changed files with the same digests, the same test results, the same verdict —
whatever the timings. One sandbox boot per input and backend."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories.paths import EXAMPLE_PLUGIN, REPO
from tests.factories.toolchains import PHPUNIT_POLYFILLS, WP_CLI_PHAR, WP_TESTS_LIB, require

pytestmark = [pytest.mark.integration, pytest.mark.playground, pytest.mark.native]

BACKENDS = ("playground", "native")
PLUGIN_TARGET = "/wordpress/wp-content/plugins/simple-plugin"
BUGGY_COUNTER = REPO / "examples" / "plugins-for-recipes" / "buggy-counter"
RECIPE = REPO / "examples" / "recipes" / "plugin-probe.json"  # no browser step


def _codebox(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "codebox_tui", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp_path / "tmp"), **(env or {})}, timeout=600)


def _changed(run_dir: Path) -> list[tuple[str, str, str | None, str | None]]:
    doc = json.loads((run_dir / "files" / "changed-files.json").read_text())
    return sorted((f["path"], f["status"], f.get("beforeSha256"), f.get("afterSha256")) for f in doc["files"])


def _meaning(tmp_path: Path, backend: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """What a `codebox run` means, as far as the backend should not matter."""
    work = tmp_path / backend
    work.mkdir(exist_ok=True)
    out = _codebox(work, "run", "--backend", backend, *args, "--artifacts", str(work / "artifacts"), "--json",
                   env=env)
    doc = json.loads(out.stdout)
    assert doc["runtime"]["backend"] == ("native" if backend == "native" else "wordpress-playground"), out.stderr
    run_dir = Path(doc["artifacts"]["directory"])
    verified = _codebox(work, "artifacts", "verify", str(run_dir))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    results = json.loads((run_dir / "files" / "test-results.json").read_text())
    cases = sorted((suite["name"], case["name"], case["status"]) for suite in results["suites"]
                   for case in suite["cases"])
    return {"exit": out.returncode, "status": doc.get("status"), "stdout": doc["execution"]["stdout"],
            "changed": _changed(run_dir), "tests": (results["status"], results["summary"], cases)}


def test_a_run_php_probe_with_a_copy_on_write_edit_means_the_same(tmp_path: Path) -> None:
    plugin = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    probe = tmp_path / "probe.php"
    probe.write_text((EXAMPLE_PLUGIN / "probe.php").read_text() + "\nfile_put_contents(WP_PLUGIN_DIR . "
                     "'/simple-plugin/parity-note.txt', 'the same on both');\nunlink(WP_PLUGIN_DIR . "
                     "'/simple-plugin/probe.php');\n")
    before = {p.name: p.read_bytes() for p in plugin.iterdir() if p.is_file()}
    meanings = {b: _meaning(tmp_path, b, "--mount", f"{plugin}:{PLUGIN_TARGET}", "--command", "wordpress.run-php",
                            "--arg", f"code-file={probe}") for b in BACKENDS}
    reports = {b: json.loads(meanings[b].pop("stdout")) for b in BACKENDS}  # the probe's JSON report
    assert reports["native"].pop("php") != reports["playground"].pop("php")  # the host's PHP against 8.3
    assert reports["native"] == reports["playground"]
    assert meanings["native"] == meanings["playground"]
    assert meanings["native"]["exit"] == 0
    assert {(path.rsplit("/", 1)[1], status) for path, status, _, _ in meanings["native"]["changed"]} == {
        ("parity-note.txt", "added"), ("probe.php", "deleted")}
    assert {p.name: p.read_bytes() for p in plugin.iterdir() if p.is_file()} == before  # copy-on-write both times


def test_wp_cli_option_get_means_the_same(tmp_path: Path) -> None:
    require(WP_CLI_PHAR)
    meanings = {b: _meaning(tmp_path, b, "--wp-cli-phar", str(WP_CLI_PHAR), "--command", "wordpress.wp-cli",
                            "--arg", "command=option get blogname") for b in BACKENDS}
    assert meanings["native"] == meanings["playground"]
    assert meanings["native"]["exit"] == 0 and meanings["native"]["stdout"].strip()


def test_phpunit_of_buggy_counter_means_the_same(tmp_path: Path) -> None:
    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(BUGGY_COUNTER, plugin)
    env = {"WP_TESTS_DIR": str(WP_TESTS_LIB), "WP_TESTS_PHPUNIT_POLYFILLS_PATH": str(PHPUNIT_POLYFILLS)}
    meanings = {b: _meaning(tmp_path, b, "--mount", f"{plugin}:/wordpress/wp-content/plugins/buggy-counter",
                            "--command", "wordpress.phpunit", "--arg", "plugin-slug=buggy-counter", env=env)
                for b in BACKENDS}
    native, playground = meanings["native"], meanings["playground"]
    assert native["tests"] == playground["tests"]
    assert (native["exit"], native["status"], native["changed"]) == (
        playground["exit"], playground["status"], playground["changed"])
    assert ("test_repeated_spaces", "failed") in {(name, status) for _, name, status in native["tests"][2]}


def test_a_recipe_without_browser_steps_means_the_same(tmp_path: Path) -> None:
    outcomes = {}
    for backend in BACKENDS:
        out = _codebox(tmp_path, "recipe-run", str(RECIPE), "--backend", backend, "--artifacts",
                       str(tmp_path / backend), "--json", "-q")
        doc = json.loads(out.stdout)
        outcomes[backend] = {"exit": out.returncode, "success": doc["success"], "status": doc["status"],
                             "failures": doc["failures"], "changed": _changed(Path(doc["bundleDir"])),
                             "steps": [(e.get("command"), e.get("exitCode")) for e in doc["executions"]]}
    assert outcomes["native"] == outcomes["playground"]
    assert outcomes["native"]["success"] is True


@pytest.mark.timeout(1200)  # two whole evaluations, one on Playground, on a shared machine
def test_evaluate_patch_of_buggy_counter_means_the_same(tmp_path: Path) -> None:
    """The flagship flow on both backends: the same verdict, test delta and front-end request result; on
    native the browser probe goes through the native preview (tests/e2e/test_native_preview.py probes it
    directly)."""
    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    env = {"WP_TESTS_DIR": str(WP_TESTS_LIB), "WP_TESTS_PHPUNIT_POLYFILLS_PATH": str(PHPUNIT_POLYFILLS)}
    outcomes: dict[str, Any] = {}
    probes: dict[str, Any] = {}
    steps: dict[str, Any] = {}
    for backend in BACKENDS:
        out = _codebox(tmp_path, "evaluate-patch", "--backend", backend, "--plugin", str(BUGGY_COUNTER), "--patch",
                       str(REPO / "examples" / "patches" / "buggy-counter-fix.patch"), "--artifacts",
                       str(tmp_path / backend), "--json", "-q", env=env)
        doc = json.loads(out.stdout)
        front = doc["probe"]["frontEnd"]
        outcomes[backend] = {"exit": out.returncode, "success": doc["success"], "tests": doc["tests"],
                             "frontEnd": (front["status"], front["httpStatus"], front["problems"])}
        probes[backend] = {key: doc["probe"].get(key) for key in ("status", "httpStatus", "pageErrors")}
        steps[backend] = [step for step in doc["steps"] if step["phase"] == "probe"]
    assert outcomes["native"] == outcomes["playground"], (probes, steps)
    # Chromium failing to start on a loaded machine is the probe step's error (browser-unavailable), on either
    # backend; a probe that ran through the native preview must pass
    if not any("error" in step for step in steps["native"]):
        assert probes["native"] == {"status": "passed", "httpStatus": 200, "pageErrors": []}, steps
    assert outcomes["native"]["tests"]["verdict"] == "improvement"
    assert outcomes["native"]["tests"]["fixed"] == ["CountTest::test_repeated_spaces"]

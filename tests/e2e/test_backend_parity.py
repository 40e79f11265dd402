"""Run parity (docs/backends.md): the same inputs through the real `codebox` CLI on both backends give bundles
that mean the same — the same changed files with the same digests, the same command results, the same test
results, the same verdict — whatever the timings.

Two runs per backend, each checked by several tests (a Playground run is what CI pays for): one `recipe-run` of
the example `plugin-probe` recipe with two steps added — the example probe making a copy-on-write edit and a
deletion, and WP-CLI's `option get blogname` — and one `evaluate-patch` of buggy-counter, whose PHPUnit suite
runs before and after the patch.

The native runs are `codebox` processes of their own; the Playground runs go through the real entry point in the
test's process on the session's warm sidecar (tests/factories/holds.py; docs/performance.md, "Test suite"), so
they do not pay a cold sidecar and a cold boot of a new process each."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.factories.holds import codebox_in_process
from tests.factories.native import codebox_with_tmpdir
from tests.factories.paths import EXAMPLE_PLUGIN, REPO
from tests.factories.toolchains import PHPUNIT_POLYFILLS, WP_CLI_PHAR, WP_TESTS_LIB, require

pytestmark = [pytest.mark.integration, pytest.mark.playground, pytest.mark.native]

BACKENDS = ("playground", "native")
RECORDED = {"playground": "wordpress-playground", "native": "native"}
PLUGIN_TARGET = "/wordpress/wp-content/plugins/simple-plugin"
BUGGY_COUNTER = REPO / "examples" / "plugins-for-recipes" / "buggy-counter"
RECIPE = REPO / "examples" / "recipes" / "plugin-probe.json"  # no browser step
EXAMPLE_STEPS = len(json.loads(RECIPE.read_text())["workflow"]["steps"])
PROBE_STEP, WP_CLI_STEP = EXAMPLE_STEPS, EXAMPLE_STEPS + 1  # the two steps added after the example's own


def _changed(run_dir: Path) -> list[tuple[str, str, str | None, str | None]]:
    doc = json.loads((run_dir / "files" / "changed-files.json").read_text())
    return sorted((f["path"], f["status"], f.get("beforeSha256"), f.get("afterSha256")) for f in doc["files"])


def _test_results(run_dir: Path) -> tuple[Any, Any, list[tuple[Any, ...]]]:
    """The bundle's test results: overall status, totals, and every case (with the side it ran on, if any)."""
    results = json.loads((run_dir / "files" / "test-results.json").read_text())
    cases = sorted(
        (suite.get("phase"), suite["name"], case["name"], case["status"])
        for suite in results["suites"]
        for case in suite["cases"]
    )
    return results["status"], results["summary"], cases


def _codebox(backend: str, work: Path, *args: str, env: dict[str, str]) -> Any:
    """``codebox ARGS --backend backend``: native in a process of its own (with a private TMPDIR), Playground through
    the entry point in this process, on the session's warm sidecar."""
    if backend == "native":
        return codebox_with_tmpdir(work, *args, "--backend", backend, env=env, timeout=1200)
    return codebox_in_process(Path(os.environ["CODEBOX_HOME"]), *args, "--backend", backend, env={**env})


def _verified(run_dir: Path) -> None:
    """`codebox artifacts verify` of a bundle: a query after the run, through the entry point in this process."""
    verified = codebox_in_process(Path(os.environ["CODEBOX_HOME"]), "artifacts", "verify", str(run_dir))
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.fixture(scope="module")
def recipe_runs(tmp_path_factory: pytest.TempPathFactory, playground_session: Any) -> dict[str, Any]:
    """`codebox recipe-run --backend B` of the example recipe plus a copy-on-write probe step (the example probe,
    which also writes a file into the read-write plugin and deletes one) and a WP-CLI step (the toolchain's phar,
    set as a user without a flag sets it: CODEBOX_WP_CLI_PHAR), once per backend; each bundle verified."""
    require(WP_CLI_PHAR)
    root = tmp_path_factory.mktemp("recipe-parity")
    plugin = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    probe = root / "probe.php"
    probe.write_text(
        (EXAMPLE_PLUGIN / "probe.php").read_text() + "\nfile_put_contents(WP_PLUGIN_DIR . "
        "'/simple-plugin/parity-note.txt', 'the same on both');\nunlink(WP_PLUGIN_DIR . "
        "'/simple-plugin/probe.php');\n"
    )
    recipe = json.loads(RECIPE.read_text())
    for mount in recipe["inputs"]["mounts"]:  # the example's sources are relative to its own folder
        mount["source"] = str((RECIPE.parent / mount["source"]).resolve())
    recipe["inputs"]["mounts"].append({"source": str(plugin), "target": PLUGIN_TARGET, "mode": "readwrite"})
    recipe["workflow"]["steps"] += [
        {"command": "wordpress.run-php", "args": [f"code-file={probe}"]},
        {"command": "wordpress.wp-cli", "args": ["command=option get blogname"]},
    ]
    recipe_file = root / "plugin-probe-and-more.json"
    recipe_file.write_text(json.dumps(recipe))
    before = {p.name: p.read_bytes() for p in plugin.iterdir() if p.is_file()}
    runs: dict[str, Any] = {"plugin": plugin, "before": before}
    for backend in BACKENDS:
        work = root / backend
        work.mkdir()
        out = _codebox(
            backend,
            work,
            "recipe-run",
            str(recipe_file),
            "--artifacts",
            str(work / "artifacts"),
            "--json",
            "-q",
            env={"CODEBOX_WP_CLI_PHAR": str(WP_CLI_PHAR)},
        )
        doc = json.loads(out.stdout)
        bundle = Path(doc["bundleDir"])
        assert json.loads((bundle / "metadata.json").read_text())["runtime"]["backend"] == RECORDED[backend]
        _verified(bundle)
        commands = [json.loads(line) for line in (bundle / "commands.jsonl").read_text().splitlines()]
        runs[backend] = {"exit": out.returncode, "doc": doc, "bundle": bundle, "commands": commands}
    return runs


def _step_meaning(run: dict[str, Any], index: int) -> dict[str, Any]:
    """What step ``index`` of a recipe run means, as far as the backend should not matter."""
    assert index < len(run["commands"]), (run["doc"]["failures"], run["doc"]["stepFailures"])  # the run stopped
    command = run["commands"][index]
    envelope = command.get("result") or {}
    return {
        "command": command["command"],
        "exit": command["exitCode"],
        "status": envelope.get("status"),
        "stdout": command["stdout"],
    }


@pytest.mark.timeout(900)  # the first test of the two recipe runs: they are made for it
def test_a_run_php_probe_with_a_copy_on_write_edit_means_the_same(recipe_runs: dict[str, Any]) -> None:
    steps = {b: _step_meaning(recipe_runs[b], PROBE_STEP) for b in BACKENDS}
    reports = {b: json.loads(steps[b].pop("stdout")) for b in BACKENDS}  # the probe's JSON report
    assert reports["native"].pop("php") != reports["playground"].pop("php")  # the host's PHP against 8.3
    assert reports["native"] == reports["playground"]
    assert reports["native"]["active"] is True and reports["native"]["greeting"]
    assert steps["native"] == steps["playground"]
    assert steps["native"]["exit"] == 0
    changed = {b: _changed(recipe_runs[b]["bundle"]) for b in BACKENDS}
    assert changed["native"] == changed["playground"]
    assert {(path.rsplit("/", 1)[1], status) for path, status, _, _ in changed["native"]} == {
        ("parity-note.txt", "added"),
        ("probe.php", "deleted"),
    }
    plugin = recipe_runs["plugin"]
    assert {p.name: p.read_bytes() for p in plugin.iterdir() if p.is_file()} == recipe_runs["before"]  # copy-on-write


def test_wp_cli_option_get_means_the_same(recipe_runs: dict[str, Any]) -> None:
    steps = {b: _step_meaning(recipe_runs[b], WP_CLI_STEP) for b in BACKENDS}
    assert steps["native"] == steps["playground"]
    assert steps["native"]["command"] == "wordpress.wp-cli" and steps["native"]["exit"] == 0
    # WordPress answered from inside the phar (PHP-wasm runs it with argv on Playground), without its shebang line
    for step in steps.values():
        assert step["stdout"].strip() and "#!/usr/bin/env php" not in step["stdout"]


def test_a_recipe_without_browser_steps_means_the_same(recipe_runs: dict[str, Any]) -> None:
    outcomes = {}
    for backend in BACKENDS:
        run = recipe_runs[backend]
        doc = run["doc"]
        outcomes[backend] = {
            "exit": run["exit"],
            "success": doc["success"],
            "status": doc["status"],
            "failures": doc["failures"],
            "changed": _changed(run["bundle"]),
            "tests": _test_results(run["bundle"]),
            "steps": [(e.get("command"), e.get("exitCode")) for e in doc["executions"]],
            "example steps": [
                _step_meaning(run, i)
                for i in range(EXAMPLE_STEPS)
                if run["commands"][i]["command"] != "inspect-mounted-inputs"
            ],
        }
    assert outcomes["native"] == outcomes["playground"]
    assert outcomes["native"]["success"] is True
    assert [command for command, _ in outcomes["native"]["steps"]] == [
        *(step["command"] for step in json.loads(RECIPE.read_text())["workflow"]["steps"]),
        "wordpress.run-php",
        "wordpress.wp-cli",
    ]


@pytest.fixture(scope="module")
def evaluations(tmp_path_factory: pytest.TempPathFactory, playground_session: Any) -> dict[str, Any]:
    """`codebox evaluate-patch --backend B` of buggy-counter with its fix, once per backend; each bundle verified."""
    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    root = tmp_path_factory.mktemp("evaluate-parity")
    env = {"WP_TESTS_DIR": str(WP_TESTS_LIB), "WP_TESTS_PHPUNIT_POLYFILLS_PATH": str(PHPUNIT_POLYFILLS)}
    runs: dict[str, Any] = {}
    for backend in BACKENDS:
        work = root / backend
        work.mkdir()
        out = _codebox(
            backend,
            work,
            "evaluate-patch",
            "--plugin",
            str(BUGGY_COUNTER),
            "--patch",
            str(REPO / "examples" / "patches" / "buggy-counter-fix.patch"),
            "--artifacts",
            str(work / "artifacts"),
            "--json",
            "-q",
            env=env,
        )
        doc = json.loads(out.stdout)
        run_dir = Path(doc["bundleDir"])
        assert json.loads((run_dir / "metadata.json").read_text())["runtime"]["backend"] == RECORDED[backend]
        _verified(run_dir)
        runs[backend] = {"exit": out.returncode, "doc": doc, "bundle": run_dir}
    return runs


@pytest.mark.timeout(1200)  # the first test of the two evaluations: they are made for it
def test_phpunit_of_buggy_counter_means_the_same(evaluations: dict[str, Any]) -> None:
    """The plugin's own suite, run by the evaluation before the patch (the example's known bug failing) and
    after it: the same cases with the same results, the same exit codes, the same changed files."""
    tests = {b: _test_results(evaluations[b]["bundle"]) for b in BACKENDS}
    assert tests["native"] == tests["playground"]
    suites = {
        b: [
            (s["phase"], s.get("exitCode"))
            for s in evaluations[b]["doc"]["steps"]
            if s["command"] == "wordpress.phpunit"
        ]
        for b in BACKENDS
    }
    assert suites["native"] == suites["playground"] == [("before", 1), ("after", 0)]
    assert (evaluations["native"]["exit"], _changed(evaluations["native"]["bundle"])) == (
        evaluations["playground"]["exit"],
        _changed(evaluations["playground"]["bundle"]),
    )
    cases = tests["native"][2]
    assert ("before", "test_repeated_spaces", "failed") in {(side, name, status) for side, _, name, status in cases}
    assert ("after", "test_repeated_spaces", "passed") in {(side, name, status) for side, _, name, status in cases}


def test_evaluate_patch_of_buggy_counter_means_the_same(evaluations: dict[str, Any]) -> None:
    """The flagship flow on both backends: the same verdict, test delta and front-end request result; on
    native the browser probe goes through the native preview (tests/e2e/test_native_preview.py probes it
    directly)."""
    outcomes: dict[str, Any] = {}
    probes: dict[str, Any] = {}
    steps: dict[str, Any] = {}
    for backend in BACKENDS:
        doc = evaluations[backend]["doc"]
        front = doc["probe"]["frontEnd"]
        outcomes[backend] = {
            "exit": evaluations[backend]["exit"],
            "success": doc["success"],
            "tests": doc["tests"],
            "frontEnd": (front["status"], front["httpStatus"], front["problems"]),
        }
        probes[backend] = {key: doc["probe"].get(key) for key in ("status", "httpStatus", "pageErrors")}
        steps[backend] = [step for step in doc["steps"] if step["phase"] == "probe"]
    assert outcomes["native"] == outcomes["playground"], (probes, steps)
    # Chromium failing to start on a loaded machine is the probe step's error (browser-unavailable), on either
    # backend; a probe that ran through the native preview must pass
    if not any("error" in step for step in steps["native"]):
        assert probes["native"] == {"status": "passed", "httpStatus": 200, "pageErrors": []}, steps
    assert outcomes["native"]["tests"]["verdict"] == "improvement"
    assert outcomes["native"]["tests"]["fixed"] == ["CountTest::test_repeated_spaces"]

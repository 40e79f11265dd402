"""Honest recipe verdicts end to end (#14): real sandboxes through the real `codebox recipe-run` CLI, the
bundle read back by `codebox artifacts show` and by the Review screen (Pilot). The verdict is Codebox's reading of
the steps' exit codes and the probes' JSON, the same on both backends, so both runs are native (real PHP in
bubblewrap, docs/backends.md), and their bundles say so.

- a passing non-advisory check and a failing advisory one: the run passes, the advisory failure is a
  warning carrying its message (CLI JSON and human output, `artifacts show`, the TUI);
- a failing non-advisory probe: the run fails (exit 1) and every output names the probe, the expected
  JSON and what came back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static, TabbedContent

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen
from tests.factories.native import recorded_backend

pytestmark = pytest.mark.native

ADVISORY_MESSAGE = "advisory: the cache is cold"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "CODEBOX_HOME": str(home)},
    )


def _recipe(path: Path, steps: list[dict[str, Any]], probes: list[dict[str, Any]]) -> Path:
    path.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "metadata": {"title": path.stem},
                "workflow": {"steps": steps},
                "probes": probes,
            }
        )
    )
    return path


def _php(code: str, **extra: Any) -> dict[str, Any]:
    return {"command": "wordpress.run-php", "args": [f"code={code}"], **extra}


@pytest.fixture(scope="module")
def runs(codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two real recipe runs on the native backend: one with a failing advisory step (--json), one with a failing
    probe (human)."""
    home = codebox_home
    root = tmp_path_factory.mktemp("verdicts")
    advisory = _recipe(
        root / "advisory.json",
        [
            _php("update_option('codebox_verdict', 'set'); echo 'ok';"),
            _php(f"echo '{ADVISORY_MESSAGE}' . PHP_EOL; exit(4);", advisory=True),
        ],
        [
            {
                "name": "option-set",
                "step": _php("echo json_encode(['value' => get_option('codebox_verdict')]);"),
                "expectJson": {"value": "set"},
            }
        ],
    )
    probe = _recipe(
        root / "probe.json",
        [_php("update_option('codebox_greeting', 'bye'); echo 'ok';")],
        [
            {
                "name": "greeting",
                "step": _php("echo json_encode(['greeting' => get_option('codebox_greeting'), 'extra' => 1]);"),
                "expectJson": {"greeting": "hello"},
            }
        ],
    )
    first = _cli(
        home, "recipe-run", str(advisory), "--backend", "native", "--artifacts-dir", str(root / "a"), "--json", "-q"
    )
    second = _cli(home, "recipe-run", str(probe), "--backend", "native", "--artifacts-dir", str(root / "b"), "-q")
    bundles = sorted(p.parent for p in (root / "b").rglob("manifest.json"))
    return {"home": home, "advisory": first, "probe": second, "probe_bundle": bundles[0] if bundles else None}


def test_failing_advisory_check_passes_with_a_warning(runs: dict[str, Any]) -> None:
    proc = runs["advisory"]
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["status"] == "passed" and doc["success"] is True and doc["failures"] == []
    assert recorded_backend(Path(doc["bundleDir"])) == "native"
    assert [(p["name"], p["status"]) for p in doc["probes"]] == [("option-set", "passed")]
    assert len(doc["warnings"]) == 1
    warning = doc["warnings"][0]
    assert warning["kind"] == "advisory" and warning["what"] == "workflow.steps[1] (wordpress.run-php)"
    assert ADVISORY_MESSAGE in warning["message"]

    show = _cli(runs["home"], "artifacts", "show", doc["bundleDir"])
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    assert "probe    ✔ option-set: passed" in lines
    assert "verdict  passed (0 failure(s), 1 warning(s))" in lines
    assert any(
        line.startswith("warning  workflow.steps[1] (wordpress.run-php): ") and ADVISORY_MESSAGE in line
        for line in lines
    )


def test_failing_probe_fails_the_run_naming_probe_expected_and_actual(runs: dict[str, Any]) -> None:
    proc = runs["probe"]
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    out = proc.stdout.splitlines()
    assert out[0] == "status: failed"
    assert "  probe greeting: failed" in out
    assert (
        '  FAILED  probe \'greeting\': expected JSON containing {"greeting": "hello"}, '
        'got {"greeting": "bye", "extra": 1}'
    ) in out
    bundle = runs["probe_bundle"]
    assert bundle is not None and out[-1] == f"bundle: {bundle}"
    assert recorded_backend(bundle) == "native"

    stored = json.loads((bundle / "files" / "probes.json").read_text())["probes"][0]
    assert stored["name"] == "greeting" and stored["status"] == "failed"
    assert stored["expectJson"] == {"greeting": "hello"} and stored["actualJson"] == {"greeting": "bye", "extra": 1}
    assert stored["message"] == 'expected JSON containing {"greeting": "hello"}, got {"greeting": "bye", "extra": 1}'

    show = _cli(runs["home"], "artifacts", "show", str(bundle), "--json")
    assert show.returncode == 0, show.stderr
    checks = json.loads(show.stdout)["checks"]
    assert checks["kind"] == "recipe-run"
    assert checks["probes"] == [
        {
            "name": "greeting",
            "status": "failed",
            "message": stored["message"],
            "expected": '{"greeting": "hello"}',
            "actual": '{"greeting": "bye", "extra": 1}',
            "allow_failure": False,
        }
    ]
    assert checks["verdict"]["status"] == "failed"
    assert [f["what"] for f in checks["verdict"]["failures"]] == ["probe 'greeting'"]
    human = _cli(runs["home"], "artifacts", "show", str(bundle)).stdout.splitlines()
    assert "tests    unknown (no test-aware command ran)" in human
    assert f"probe    ✘ greeting: failed — {stored['message']}" in human


async def test_review_shows_an_advisory_failure_as_a_warning(runs: dict[str, Any]) -> None:
    bundle = Path(json.loads(runs["advisory"].stdout)["bundleDir"])
    app = CodeboxApp(bundle)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        header = str(screen.query_one("#recipe-verdict", Static).render())
        assert "RECIPE PASSED" in header and "⚠ 1 warning" in header and "probes 1/1 passed" in header
        tests = str(screen.query_one("#tests", Static).render())
        assert "Probes (1)" in tests and "✔ option-set" in tests and "Recipe run: passed" in tests
        assert f"⚠ warning workflow.steps[1] (wordpress.run-php): {ADVISORY_MESSAGE}" in tests


async def test_review_shows_probes_and_the_recipe_verdict(runs: dict[str, Any]) -> None:
    bundle = runs["probe_bundle"]
    assert bundle is not None
    app = CodeboxApp(bundle)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        header = str(screen.query_one("#recipe-verdict", Static).render())
        assert "RECIPE FAILED" in header and "1 failure" in header and "probes 0/1 passed" in header
        await pilot.press("t")
        await pilot.pause()
        assert screen.query_one("#tabs", TabbedContent).active == "tab-tests"
        tests = str(screen.query_one("#tests", Static).render())
        assert "Probes (1)" in tests and "✘ greeting: failed" in tests
        assert 'expected  {"greeting": "hello"}' in tests
        assert 'got       {"greeting": "bye", "extra": 1}' in tests
        assert "Recipe run: failed" in tests and "✘ probe 'greeting':" in tests

"""Control files the code under review changes keep a verdict from reading as clean; the ones Codebox's own set-up
writes do not, and only while they hold exactly what Codebox wrote (issue #25; docs/site-state.md, "Attribution"
and "Verdicts"). Every test goes through the real CLI; site-state attribution is the same code on both backends
(runtime/site_state.py), so only the run that needs Playground boots one:

- on Playground (a blueprint is Playground's), one recipe run checked by two tests: a step plants a must-use plugin
  and a ``db.php`` drop-in beside the mu-plugin loader Codebox writes for an extra plugin, a staged mu-plugin and a
  blueprint's file: ``recipe-run`` fails naming both planted paths, never Codebox's set-up (on native ``db.php``
  is the read-only SQLite drop-in: the plant cannot happen there);
- natively from here on (each asserts the backend its bundle records): the same recipe without the plant (and
  without the blueprint native refuses) reads clean (the loader and a staged mu-plugin are Codebox's set-up);
- a step overwrites Codebox's own loader path with other content: caught, because the excuse is the exact
  digest, not the name;
- a patch under ``evaluate-patch`` makes the plugin plant a must-use plugin: success false, the path named,
  although the tests improved; the same fix without the plant is a clean success (Codebox's error probe excused)
  in tests/e2e/test_mcp_flows.py's native ``evaluate_patch``, which checks its site-state diff;
- ``codebox run`` of a command that plants a drop-in exits 1 with ``siteStateRisks``.

Before the change, the attacks read clean: only an unavailable summary or a changed wp-config.php was unclean."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories.evaluations import evaluate_natively
from tests.factories.holds import codebox_in_process
from tests.factories.native import NATIVE, PLAYGROUND, recorded_backend

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MU = "/wordpress/wp-content/mu-plugins"
LOADER = f"{MU}/codebox-load-helper.php"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "CODEBOX_HOME": str(home)},
    )


def _recipe(tmp_path: Path, plant: str | None, *, blueprint: bool) -> Path:
    """A recipe whose set-up writes control files (an extra single-file mu-plugin's loader, a staged mu-plugin and,
    with ``blueprint`` (Playground only), a blueprint writeFile into mu-plugins) and whose one step runs ``plant``
    (PHP) when given."""
    (tmp_path / "helper.php").write_text("<?php function codebox_helper() { return 'helper'; }\n", encoding="utf-8")
    (tmp_path / "staged.php").write_text("<?php // staged by the recipe\n", encoding="utf-8")
    code = "echo codebox_helper();" + (plant or "")
    recipe = tmp_path / "recipe.json"
    runtime = {
        "blueprint": {
            "steps": [
                {"step": "writeFile", "path": f"{MU}/from-blueprint.php", "data": "<?php // written by the blueprint\n"}
            ]
        }
    }
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                **({"runtime": runtime} if blueprint else {}),
                "inputs": {
                    "extra_plugins": [{"source": "helper.php"}],
                    "stagedFiles": [{"source": "staged.php", "target": f"{MU}/staged.php"}],
                },
                "workflow": {"steps": [{"command": "wordpress.run-php", "args": [f"code={code}"]}]},
            }
        ),
        encoding="utf-8",
    )
    return recipe


def _recipe_outcome(home: Path, tmp_path: Path, plant: str | None, *, backend: str) -> tuple[int, dict[str, Any]]:
    """``recipe-run`` of the recipe above on ``backend`` (the blueprint only on Playground, which alone runs one)."""
    recipe = _recipe(tmp_path, plant, blueprint=backend == "playground")
    args = ("recipe-run", str(recipe), "--backend", backend, "--artifacts-dir", str(tmp_path / "art"), "--json")
    # the Playground run in a `codebox` process of its own, the native ones through the real entry point in this
    # process (docs/performance.md "Test suite")
    done = _cli(home, *args) if backend == "playground" else codebox_in_process(home, *args)
    assert done.stdout.strip(), done.stderr[-2000:]
    outcome = json.loads(done.stdout)
    assert recorded_backend(outcome["bundleDir"]) == (NATIVE if backend == "native" else PLAYGROUND)
    return done.returncode, outcome


def _site_state_failure(outcome: dict[str, Any]) -> str:
    failures = [f for f in outcome["stepFailures"] if f["phase"] == "site-state"]
    assert len(failures) == 1, outcome["stepFailures"]
    return str(failures[0]["error"])


def _diff(bundle: str) -> dict[str, Any]:
    return dict(json.loads((Path(bundle) / "files" / "site-state-diff.json").read_text(encoding="utf-8")))


PLANT_MU_PLUGIN = f"file_put_contents('{MU}/evil.php', '<?php // planted by the step');"
PLANT_DB_DROP_IN = "file_put_contents(WP_CONTENT_DIR . '/db.php', '<?php // a database drop-in');"


@pytest.fixture(scope="module")
def planted_recipe(playground_session: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any]]:
    """One Playground recipe run (blueprint, extra plugin's loader, staged mu-plugin) whose step plants a mu-plugin
    and a ``db.php`` drop-in; the two tests below each check what one plant must do."""
    return _recipe_outcome(
        Path(playground_session.home),
        tmp_path_factory.mktemp("planted-recipe"),
        PLANT_MU_PLUGIN + PLANT_DB_DROP_IN,
        backend="playground",
    )


def _named(error: str, code: str) -> set[str]:
    """The subjects ``error`` names for ``code`` (``code (a, b)``, lifecycle/site_state.py unclean_text)."""
    found = re.search(re.escape(code) + r" \(([^)]*)\)", error)
    assert found, error
    return set(found.group(1).split(", "))


@pytest.mark.playground
def test_a_recipe_step_planting_a_mu_plugin_is_unclean_naming_it(planted_recipe: tuple[int, dict[str, Any]]) -> None:
    code, outcome = planted_recipe
    assert code == 1 and outcome["success"] is False, outcome
    error = _site_state_failure(outcome)
    assert f"{MU}/evil.php" in _named(error, "sandbox-control-file-modified")
    assert LOADER not in error and "staged.php" not in error and "from-blueprint.php" not in error
    changed = {c["path"] for c in _diff(outcome["bundleDir"])["controlFiles"]}
    assert changed == {f"{MU}/evil.php", "/wordpress/wp-content/db.php"}  # the two plants, none of the set-up


@pytest.mark.playground
def test_a_recipe_step_planting_a_db_drop_in_is_unclean_naming_it(planted_recipe: tuple[int, dict[str, Any]]) -> None:
    code, outcome = planted_recipe
    assert code == 1 and outcome["success"] is False, outcome
    error = _site_state_failure(outcome)
    assert "/wordpress/wp-content/db.php" in _named(error, "sandbox-control-file-modified"), error


@pytest.mark.native
def test_the_same_recipe_without_a_plant_reads_clean(codebox_home: Path, tmp_path: Path) -> None:
    """Codebox wrote the loader and the staged mu-plugin: its own set-up, not a change (the blueprint's file is
    checked on Playground above: it is in no failure there)."""
    code, outcome = _recipe_outcome(codebox_home, tmp_path, None, backend="native")
    assert code == 0 and outcome["success"] is True, outcome
    diff = _diff(outcome["bundleDir"])
    assert diff["controlFiles"] == [] and diff["risks"] == [], diff


@pytest.mark.native
def test_overwriting_codebox_own_loader_with_other_content_is_caught(codebox_home: Path, tmp_path: Path) -> None:
    """The excuse is the exact digest Codebox wrote: the same name with other content is the step's change."""
    plant = f"file_put_contents('{LOADER}', '<?php // not the loader Codebox wrote');"
    code, outcome = _recipe_outcome(codebox_home, tmp_path, plant, backend="native")
    assert code == 1 and outcome["success"] is False, outcome
    assert f"sandbox-control-file-modified ({LOADER})" in _site_state_failure(outcome)
    assert [(c["path"], c["status"]) for c in _diff(outcome["bundleDir"])["controlFiles"]] == [(LOADER, "added")]


def _patch(tmp_path: Path, plant: bool) -> tuple[Path, Path]:
    """buggy-counter and its fix patch, made with real git; with ``plant`` the patch also makes the plugin write
    a must-use plugin whenever it loads."""
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(EXAMPLES / "plugins-for-recipes" / "buggy-counter", plugin)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=plugin, check=True)
    subprocess.run([*git, "add", "-A"], cwd=plugin, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=plugin, check=True)
    subprocess.run([*git, "apply", str(EXAMPLES / "patches" / "buggy-counter-fix.patch")], cwd=plugin, check=True)
    if plant:
        main = plugin / "buggy-counter.php"
        main.write_text(
            main.read_text(encoding="utf-8") + "\n@mkdir( WP_CONTENT_DIR . '/mu-plugins' );\n"
            "file_put_contents( WP_CONTENT_DIR . '/mu-plugins/evil.php', '<?php // planted by the patch' );\n",
            encoding="utf-8",
        )
    diff = subprocess.run([*git, "diff"], cwd=plugin, check=True, capture_output=True).stdout
    subprocess.run([*git, "checkout", "-q", "--", "."], cwd=plugin, check=True)
    shutil.rmtree(plugin / ".git")
    patch = tmp_path / ("planting.patch" if plant else "fix.patch")
    patch.write_bytes(diff)
    return plugin, patch


def _evaluate(home: Path, tmp_path: Path, plant: bool) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    plugin, patch = _patch(tmp_path, plant)
    done = evaluate_natively(home, plugin, ("--patch", str(patch)), tmp_path / "art")
    assert done.stdout.strip(), done.stderr[-2000:]
    outcome = json.loads(done.stdout)
    assert recorded_backend(outcome["bundleDir"]) == NATIVE
    return done, outcome


@pytest.mark.native
def test_a_patch_that_plants_a_mu_plugin_is_not_a_clean_evaluation(codebox_home: Path, tmp_path: Path) -> None:
    done, outcome = _evaluate(codebox_home, tmp_path, plant=True)
    assert outcome["tests"]["verdict"] == "improvement"  # the tests alone would call it a success
    assert done.returncode == 1 and outcome["success"] is False, outcome
    assert outcome["siteStateRisks"] == ["sandbox-control-file-modified"]
    assert [d["subject"] for d in outcome["siteStateRiskDetails"]] == [f"{MU}/evil.php"]
    # the human output says so too (the real entry point in this process, docs/performance.md "Test suite")
    shown = codebox_in_process(codebox_home, "artifacts", "show", outcome["bundleDir"])
    assert f"{MU}/evil.php" in shown.stdout, shown.stdout


@pytest.mark.native
def test_codebox_run_planting_a_drop_in_exits_unclean(codebox_home: Path, tmp_path: Path) -> None:
    plant = "code=file_put_contents(WP_CONTENT_DIR . '/object-cache.php', '<?php // planted'); echo 'ok';"
    done = _cli(
        codebox_home,
        "run",
        "--backend",
        "native",
        "-c",
        "wordpress.run-php",
        "-a",
        plant,
        "--artifacts",
        str(tmp_path / "art"),
        "--json",
    )
    assert done.returncode == 1, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["runtime"]["backend"] == NATIVE
    assert document["success"] is False and document["execution"]["exitCode"] == 0
    assert document["siteStateRisks"] == ["sandbox-control-file-modified"]
    assert [d["subject"] for d in document["siteStateRiskDetails"]] == ["/wordpress/wp-content/object-cache.php"]
    # the human output: the same run through the real entry point in this process (docs/performance.md "Test
    # suite"); the run above is the one in a `codebox` process of its own
    human = codebox_in_process(
        codebox_home,
        "run",
        "--backend",
        "native",
        "-c",
        "wordpress.run-php",
        "-a",
        plant,
        "--artifacts",
        str(tmp_path / "art2"),
    )
    assert human.returncode == 1
    assert "NOT CLEAN: site-state risk sandbox-control-file-modified" in human.stderr, human.stderr[-2000:]

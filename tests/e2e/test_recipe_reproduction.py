"""A reproduction recipe (``"kind": "reproduction"``) through the real CLI: its probes describe the bug, so it
reports ``reproduced`` (exit 0) on the buggy plugin and ``not-reproduced`` (exit 1) once the plugin is fixed
(docs/evaluate-patch.md, "Reproducing a bug"). The status is Codebox's reading of the probes, the same on both
backends, so every run is on the native backend (real PHP in bubblewrap), the faster one, and checks that its
bundle records it. The must-use plugin's run is a ``codebox`` process of its own, as a user starts it; the buggy and
fixed runs and the refusal go through the same entry point (``codebox_tui.cli.main``) in the test's process
(tests/factories/holds.py): a new process costs over a CPU-second of imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories.holds import codebox_in_process
from tests.factories.native import recorded_backend

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RECIPE = EXAMPLES / "recipes" / "reproduce-word-count.json"
FIX = EXAMPLES / "patches" / "buggy-counter-fix.patch"


def _recipe_run(
    home: Path, recipe: Path, artifacts: Path, *extra: str, in_process: bool = True
) -> subprocess.CompletedProcess[str]:
    args = ["recipe-run", str(recipe), "--artifacts-dir", str(artifacts), *extra]
    if in_process:
        return codebox_in_process(home, *args)
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "CODEBOX_HOME": str(home)},
    )


@pytest.mark.native
def test_reproduction_recipe_reports_reproduced_then_not_reproduced(codebox_home: Path, tmp_path: Path) -> None:
    home = codebox_home
    shown = _recipe_run(home, RECIPE, tmp_path / "art", "--backend", "native")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "status: reproduced" in shown.stdout and "warning" not in shown.stdout
    assert "the bug is reproduced: every probe describing it passed" in shown.stdout
    (buggy_run,) = (tmp_path / "art").iterdir()
    assert recorded_backend(buggy_run) == "native"
    # the same recipe against the fixed plugin cannot reproduce the bug, and says so
    (tmp_path / "recipes").mkdir()
    plugin = tmp_path / "plugins-for-recipes" / "buggy-counter"
    shutil.copytree(EXAMPLES / "plugins-for-recipes" / "buggy-counter", plugin)
    subprocess.run(["git", "apply", str(FIX)], cwd=plugin, check=True)
    recipe = tmp_path / "recipes" / RECIPE.name
    shutil.copy(RECIPE, recipe)
    gone = _recipe_run(home, recipe, tmp_path / "art2", "--json", "--backend", "native")
    assert gone.returncode == 1, gone.stderr
    doc = json.loads(gone.stdout)
    assert doc["status"] == "not-reproduced" and doc["success"] is False
    assert [f["what"] for f in doc["failures"]] == ["probe 'two-spaces-count-as-three-words'"]
    attestation = json.loads((Path(doc["bundleDir"]) / "files" / "run-attestation.json").read_text())
    assert attestation["kind"] == "reproduction"
    assert json.loads((Path(doc["bundleDir"]) / "metadata.json").read_text())["runtime"]["backend"] == "native"


def test_reproduction_recipe_without_a_probe_is_refused(tmp_path: Path) -> None:
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({**json.loads(RECIPE.read_text()), "probes": []}))
    proc = codebox_in_process(tmp_path / "home", "recipe", "validate", str(recipe), "--json")
    assert proc.returncode == 2
    issues = json.loads(proc.stdout)["issues"]
    assert any(i["path"] == "$.probes" and "reproduction" in i["message"] for i in issues)


@pytest.mark.native
def test_single_file_mu_plugin_reproduces_its_bug(codebox_home: Path, tmp_path: Path) -> None:
    """A bug in a one-file must-use plugin: the recipe names the .php file where a plugin folder would go."""
    (tmp_path / "site-greeting.php").write_text(
        "<?php\n// Bug: the greeting drops the last letter of the name.\n"
        "function site_greeting( $name ) { return 'Hello, ' . substr( $name, 0, -1 ) . '!'; }\n",
        encoding="utf-8",
    )
    recipe = tmp_path / "reproduce-greeting.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "kind": "reproduction",
                "inputs": {"extra_plugins": [{"source": "site-greeting.php"}]},
                "workflow": {"steps": [{"command": "wordpress.run-php", "args": ["code=echo site_greeting('Ada');"]}]},
                "probes": [
                    {
                        "name": "greeting-drops-a-letter",
                        "step": {
                            "command": "wordpress.run-php",
                            "args": [
                                "code=echo json_encode(array('greeting' => site_greeting('Ada'), 'mu' => is_file("
                                "WPMU_PLUGIN_DIR . '/codebox-load-site-greeting.php')));"
                            ],
                        },
                        "expectJson": {"greeting": "Hello, Ad!", "mu": True},
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    proc = _recipe_run(codebox_home, recipe, tmp_path / "art", "--json", "--backend", "native", in_process=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["status"] == "reproduced" and recorded_backend(Path(doc["bundleDir"])) == "native"

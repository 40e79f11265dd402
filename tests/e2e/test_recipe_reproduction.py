"""A reproduction recipe (``"kind": "reproduction"``) through real Playground and the real CLI: its probes describe
the bug, so it reports ``reproduced`` (exit 0) on the buggy plugin and ``not-reproduced`` (exit 1) once the plugin
is fixed (docs/evaluate-patch.md, "Reproducing a bug"). The status is Codebox's reading of the probes, the same
on both backends: the buggy run is on Playground, the fixed one and the must-use plugin's on the native backend
(real PHP in bubblewrap), the faster one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.playground

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RECIPE = EXAMPLES / "recipes" / "reproduce-word-count.json"
FIX = EXAMPLES / "patches" / "buggy-counter-fix.patch"


def _recipe_run(home: Path, recipe: Path, artifacts: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codebox_tui", "recipe-run", str(recipe), "--artifacts-dir",
                           str(artifacts), *extra], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "CODEBOX_HOME": str(home)})


def test_reproduction_recipe_reports_reproduced_then_not_reproduced(playground_session: Any, tmp_path: Path) -> None:
    home = Path(playground_session.home)
    shown = _recipe_run(home, RECIPE, tmp_path / "art")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "status: reproduced" in shown.stdout and "warning" not in shown.stdout
    assert "the bug is reproduced: every probe describing it passed" in shown.stdout
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
    proc = subprocess.run([sys.executable, "-m", "codebox_tui", "recipe", "validate", str(recipe), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    issues = json.loads(proc.stdout)["issues"]
    assert any(i["path"] == "$.probes" and "reproduction" in i["message"] for i in issues)


def test_single_file_mu_plugin_reproduces_its_bug(playground_session: Any, tmp_path: Path) -> None:
    """A bug in a one-file must-use plugin: the recipe names the .php file where a plugin folder would go."""
    (tmp_path / "site-greeting.php").write_text(
        "<?php\n// Bug: the greeting drops the last letter of the name.\n"
        "function site_greeting( $name ) { return 'Hello, ' . substr( $name, 0, -1 ) . '!'; }\n", encoding="utf-8")
    recipe = tmp_path / "reproduce-greeting.json"
    recipe.write_text(json.dumps({
        "schema": "wp-codebox/workspace-recipe/v1", "kind": "reproduction",
        "inputs": {"extra_plugins": [{"source": "site-greeting.php"}]},
        "workflow": {"steps": [{"command": "wordpress.run-php", "args": ["code=echo site_greeting('Ada');"]}]},
        "probes": [{"name": "greeting-drops-a-letter", "step": {"command": "wordpress.run-php", "args": [
            "code=echo json_encode(array('greeting' => site_greeting('Ada'), 'mu' => is_file("
            "WPMU_PLUGIN_DIR . '/codebox-load-site-greeting.php')));"]},
            "expectJson": {"greeting": "Hello, Ad!", "mu": True}}]}), encoding="utf-8")
    proc = _recipe_run(Path(playground_session.home), recipe, tmp_path / "art", "--json", "--backend", "native")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["status"] == "reproduced"

"""`codebox validate-blueprint FILE --boot` (docs/recipes: the blueprint applied the way recipe-run applies
runtime.blueprint): real CLI, native backend (the blueprint steps are PHP, the same on both backends), a
sealed bundle in the review inbox. An invalid blueprint boots nothing; a step that fails fails the boot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.native

GOOD = {
    "steps": [
        {"step": "setSiteOptions", "options": {"blogname": "Booted Blueprint"}},
        {"step": "writeFile", "path": "/wordpress/wp-content/uploads/hello.txt", "data": "hi"},
    ]
}
FAILING = {"steps": [{"step": "activatePlugin", "pluginPath": "missing-plugin/missing-plugin.php"}]}


def _validate(tmp_path: Path, name: str, blueprint: Any, *extra: str) -> tuple[int, dict[str, Any]]:
    file = tmp_path / f"{name}.json"
    file.write_text(json.dumps(blueprint))
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "validate-blueprint",
            str(file),
            "--boot",
            "--backend",
            "native",
            "--artifacts",
            str(tmp_path / "artifacts"),
            "--json",
            "--quiet",
            *extra,
        ],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    return cli.returncode, json.loads(cli.stdout)


def test_a_valid_blueprint_is_applied_and_its_site_captured(tmp_path: Path) -> None:
    code, doc = _validate(tmp_path, "good", GOOD)
    assert code == 0, doc
    assert doc["valid"] and doc["success"] and doc["boot"]["success"] and doc["boot"]["error"] is None
    assert doc["boot"]["blueprintPhase"]["status"] == "completed"
    bundle = Path(doc["boot"]["bundleDir"])
    assert bundle.parent == tmp_path / "artifacts"
    manifest = json.loads((bundle / "manifest.json").read_text())
    state_files = [f["path"] for f in manifest["files"] if f["path"].startswith("files/wordpress-state/")]
    assert state_files, manifest["files"]
    assert "Booted Blueprint" in (bundle / state_files[0]).read_text()  # the options the blueprint set
    subprocess.run(
        [sys.executable, "-m", "codebox_tui", "artifacts", "verify", str(bundle)],
        check=True,
        env=dict(os.environ),
        capture_output=True,
        timeout=120,
    )


def test_a_failing_step_fails_the_boot_and_an_invalid_blueprint_boots_nothing(tmp_path: Path) -> None:
    code, doc = _validate(tmp_path, "failing", FAILING)
    assert code == 1 and doc["valid"] and not doc["success"]
    assert "blueprint step 0 (activatePlugin) failed" in doc["boot"]["error"]
    assert doc["boot"]["blueprintPhase"]["status"] == "failed" and Path(doc["boot"]["bundleDir"]).is_dir()
    booted = sorted((tmp_path / "artifacts").iterdir())
    code, doc = _validate(tmp_path, "invalid", {"steps": "nope"})
    assert code == 2 and not doc["valid"] and "boot" not in doc
    # a shape the recipe layer cannot apply (runPHP without code) is bad input too, naming the field
    code, doc = _validate(tmp_path, "unappliable", {"steps": [{"step": "runPHP"}]})
    assert code == 2 and doc["error"]["code"] == "invalid-blueprint"
    assert "steps[0].code" in doc["error"]["message"]
    assert sorted((tmp_path / "artifacts").iterdir()) == booted  # no new sandbox, no new bundle

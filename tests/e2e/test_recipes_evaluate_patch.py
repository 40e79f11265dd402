"""`codebox evaluate-patch` end to end: real Playground, Debian PHPUnit, real Chromium, real bundle."""

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

ROOT = Path(__file__).resolve().parents[2] / "examples"
PLUGIN = ROOT / "plugins-for-recipes" / "buggy-counter"
PATCH = ROOT / "patches" / "buggy-counter-fix.patch"


def _evaluate(tmp_path: Path, home: Path, plugin: Path, patch: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codebox_tui", "evaluate-patch", "--plugin", str(plugin),
                           "--patch", str(patch), "--artifacts-dir", str(tmp_path / "art"), "--json"],
                          capture_output=True, text=True, timeout=900, env={**os.environ, "CODEBOX_HOME": str(home)})


def test_fix_patch_shows_test_delta_patch_and_evidence(playground_session: Any, tmp_path: Path) -> None:
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(PLUGIN, plugin)
    original = (plugin / "buggy-counter.php").read_bytes()
    proc = _evaluate(tmp_path, Path(playground_session.home), plugin, PATCH)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["applied"] is True
    assert doc["tests"]["verdict"] == "improvement"
    assert doc["tests"]["fixed"] == ["CountTest::test_repeated_spaces"]
    assert doc["tests"]["before"]["failed"] == 1 and doc["tests"]["after"]["failed"] == 0
    assert doc["probe"]["status"] == "passed"
    assert (plugin / "buggy-counter.php").read_bytes() == original  # the original is never touched
    bundle = Path(doc["bundleDir"])
    patch = (bundle / "files/patch.diff").read_text()
    assert "preg_split" in patch and "-\treturn count( explode(" in patch
    results = json.loads((bundle / "files/test-results.json").read_text())
    assert [s.get("phase") for s in results["suites"]] == ["before", "after"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    paths = {f["path"] for f in manifest["files"]}
    assert {"files/evaluate-patch.json", "files/contributor.patch", "files/browser/screenshot.png"} <= paths
    # `artifacts show`: each side's totals (never "tests unknown"), the verdict and the front-end probe
    show = subprocess.run([sys.executable, "-m", "codebox_tui", "artifacts", "show", str(bundle)],
                          capture_output=True, text=True, timeout=120)
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    for side in ("before", "after"):
        c = doc["tests"][side]
        assert f"tests    {side:<6} {c['status']} — {c['passed']} passed, {c['failed']} failed of {c['tests']}" in lines
    assert not any(line.startswith("tests") and "unknown" in line for line in lines)
    assert "verdict  improvement (evaluate-patch: tests before and after the patch)" in lines
    assert "probe    ✔ front end /: passed" in lines


def test_patch_that_does_not_apply_is_bad_input(playground_session: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.patch"
    bad.write_text(PATCH.read_text().replace("explode( ' ', trim", "explode( 'X', trim"))
    proc = _evaluate(tmp_path, Path(playground_session.home), PLUGIN, bad)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["code"] == "patch-does-not-apply"
    assert not (tmp_path / "art").exists() or not any((tmp_path / "art").iterdir())

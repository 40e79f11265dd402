"""`codebox evaluate-patch` end to end: a real native sandbox (the verdict, evidence and bench documents are the same
on both backends; the bundle checks the backend it records), Debian PHPUnit, real Chromium, real bundle; `artifacts
show` on it through the real entry point in-process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.factories.evaluations import evaluate_natively
from tests.factories.holds import codebox_in_process, linked_home
from tests.factories.native import NATIVE, recorded_backend

pytestmark = pytest.mark.native

ROOT = Path(__file__).resolve().parents[2] / "examples"
PLUGIN = ROOT / "plugins-for-recipes" / "buggy-counter"
PATCH = ROOT / "patches" / "buggy-counter-fix.patch"


@pytest.mark.timeout(900)  # the evaluation and its two benches on a shared machine
def test_fix_patch_shows_test_delta_patch_and_evidence(codebox_home: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(PLUGIN, plugin)
    original = (plugin / "buggy-counter.php").read_bytes()
    # --bench: the paths are timed before and after the patch in the same sandbox (docs/bench.md)
    home = linked_home(codebox_home, tmp_path / "home")
    proc = evaluate_natively(
        home, plugin, ("--patch", str(PATCH)), tmp_path / "art", "--bench", "/", "--bench-count", "2"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["applied"] is True
    assert doc["tests"]["verdict"] == "improvement"
    assert doc["tests"]["fixed"] == ["CountTest::test_repeated_spaces"]
    assert doc["tests"]["before"]["failed"] == 1 and doc["tests"]["after"]["failed"] == 0
    assert doc["probe"]["status"] == "passed"
    assert (plugin / "buggy-counter.php").read_bytes() == original  # the original is never touched
    bundle = Path(doc["bundleDir"])
    assert recorded_backend(bundle) == NATIVE
    patch = (bundle / "files/patch.diff").read_text()
    assert "preg_split" in patch and "-\treturn count( explode(" in patch
    results = json.loads((bundle / "files/test-results.json").read_text())
    assert [s.get("phase") for s in results["suites"]] == ["before", "after"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    paths = {f["path"] for f in manifest["files"]}
    assert {"files/evaluate-patch.json", "files/contributor.patch", "files/browser/screenshot.png"} <= paths
    # `artifacts show`: each side's totals (never "tests unknown"), the verdict and the front-end probe
    show = codebox_in_process(home, "artifacts", "show", str(bundle))
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    for side in ("before", "after"):
        c = doc["tests"][side]
        assert f"tests    {side:<6} {c['status']} — {c['passed']} passed, {c['failed']} failed of {c['tests']}" in lines
    assert not any(line.startswith("tests") and "unknown" in line for line in lines)
    assert "verdict  improvement (evaluate-patch: tests before and after the patch)" in lines
    assert "probe    ✔ front end /: passed · plugin still active" in lines
    _assert_bench_check(doc, bundle, paths)


def _assert_bench_check(doc: dict[str, Any], bundle: Path, listed: set[str]) -> None:
    """The regression check's shape and counts, never the timings' values (they depend on the machine)."""
    from codebox_tui.contracts.schemas import SCHEMA_DIR, schema_file_name

    bench = doc["bench"]
    assert (bench["before"], bench["after"]) == ("files/bench.json", "files/bench-2.json")
    assert {bench["before"], bench["after"]} <= listed
    assert [entry["path"] for entry in bench["paths"]] == ["/"]
    for entry in bench["paths"]:
        assert entry["ratio"] is not None and entry["regressed"] == (entry["ratio"] > bench["threshold"]), entry
        assert entry["beforePeakMemoryBytes"] and entry["afterPeakMemoryBytes"], entry
    assert len(bench["warnings"]) == sum(entry["regressed"] for entry in bench["paths"])
    schema = json.loads((SCHEMA_DIR / schema_file_name("codebox/bench/v1")).read_text())  # the generated one
    validator = jsonschema.Draft202012Validator(schema)
    for side, label in ((bench["before"], "before"), (bench["after"], "after")):
        document = json.loads((bundle / side).read_text())
        assert not list(validator.iter_errors(document)), side
        assert document["label"] == label and (document["count"], document["warmup"]) == (2, 1)
        for entry in document["paths"]:
            assert entry["requests"] == entry["answered"] == sum(entry["statuses"].values()) == 2, entry
            lat = entry["latencyMs"]
            assert 0 < lat["min"] <= lat["median"] <= lat["p95"] <= lat["max"], entry
    steps = [(step["phase"], step["command"]) for step in doc["steps"] if step["command"] == "wordpress.bench"]
    assert steps == [("before", "wordpress.bench"), ("after", "wordpress.bench")]


def test_patch_that_does_not_apply_is_bad_input(codebox_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.patch"
    bad.write_text(PATCH.read_text().replace("explode( ' ', trim", "explode( 'X', trim"))
    proc = evaluate_natively(
        linked_home(codebox_home, tmp_path / "home"), PLUGIN, ("--patch", str(bad)), tmp_path / "art"
    )
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["code"] == "patch-does-not-apply"
    assert not (tmp_path / "art").exists() or not any((tmp_path / "art").iterdir())

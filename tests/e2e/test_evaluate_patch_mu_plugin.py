"""`codebox evaluate-patch --plugin hello.php`: a single-file must-use plugin evaluated end to end through the real
CLI. The patch's paths are relative to the file's folder, the copy is loaded as a mu-plugin through a loader
Codebox writes as its own setup step, and a patch that makes it fatal on load is plugin-broken
(docs/evaluate-patch.md, "A single-file must-use plugin").

The loader is written and the verdicts are read by Codebox the same way on both backends (the sandbox's file API,
recipes/evaluate_patch.py), so all three run on the native backend (real PHP in bubblewrap, docs/backends.md) and
check that their bundle says so; evaluate-patch on Playground is proved by tests/e2e/test_wp_unittestcase.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories.suites import assert_ran_on

pytestmark = pytest.mark.native

BUGGY = (
    "<?php\n// Site greeting (a must-use plugin).\n"
    "function site_greeting( $name ) {\n\treturn 'Hello, ' . substr( $name, 0, -1 ) . '!';\n}\n"
)
TEST = (
    "<?php\nuse PHPUnit\\Framework\\TestCase;\n\nfinal class GreetingTest extends TestCase {\n"
    "\tpublic function test_greets_by_the_whole_name(): void {\n"
    "\t\t$this->assertSame( 'Hello, Ada!', site_greeting( 'Ada' ) );\n\t}\n\n"
    "\tpublic function test_starts_with_hello(): void {\n"
    "\t\t$this->assertStringStartsWith( 'Hello, ', site_greeting( 'Bob' ) );\n\t}\n}\n"
)
FIX = """diff --git a/site-greeting.php b/site-greeting.php
--- a/site-greeting.php
+++ b/site-greeting.php
@@ -1,5 +1,5 @@
 <?php
 // Site greeting (a must-use plugin).
 function site_greeting( $name ) {
-\treturn 'Hello, ' . substr( $name, 0, -1 ) . '!';
+\treturn 'Hello, ' . $name . '!';
 }
"""
FATAL = """diff --git a/site-greeting.php b/site-greeting.php
--- a/site-greeting.php
+++ b/site-greeting.php
@@ -3,3 +3,4 @@
 function site_greeting( $name ) {
 \treturn 'Hello, ' . substr( $name, 0, -1 ) . '!';
 }
+site_greeting_setup_that_does_not_exist();
"""


def _mu_plugin(root: Path, with_tests: bool) -> Path:
    """``mu-plugins/site-greeting.php`` as a site keeps it, with its PHPUnit suite beside it when asked; the suite
    loads nothing itself: WordPress, loaded before PHPUnit, loads the must-use plugin."""
    folder = root / "mu-plugins"
    (folder / "tests").mkdir(parents=True)
    (folder / "site-greeting.php").write_text(BUGGY, encoding="utf-8")
    if with_tests:
        (folder / "phpunit.xml").write_text(
            '<?xml version="1.0"?>\n<phpunit bootstrap="tests/bootstrap.php">\n  <testsuites>\n'
            '    <testsuite name="greeting"><directory suffix="Test.php">tests</directory></testsuite>\n'
            "  </testsuites>\n</phpunit>\n",
            encoding="utf-8",
        )
        (folder / "tests" / "bootstrap.php").write_text(
            "<?php\n// WordPress is loaded before PHPUnit.\n", encoding="utf-8"
        )
        (folder / "tests" / "GreetingTest.php").write_text(TEST, encoding="utf-8")
    return folder / "site-greeting.php"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "evaluate-patch", "--backend", "native", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "CODEBOX_HOME": str(home)},
    )
    assert_ran_on("native", proc.stdout, proc.stderr)  # the bundle says where it ran
    return proc


@pytest.mark.timeout(900)
def test_fix_to_a_single_file_mu_plugin_is_an_improvement(codebox_home: Path, tmp_path: Path) -> None:
    plugin = _mu_plugin(tmp_path, with_tests=True)
    patch = tmp_path / "fix.patch"
    patch.write_text(FIX, encoding="utf-8")
    proc = _cli(
        codebox_home, "--plugin", str(plugin), "--patch", str(patch), "--artifacts-dir", str(tmp_path / "art"), "--json"
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["plugin"] == "site-greeting"  # the file's stem
    assert doc["tests"]["verdict"] == "improvement"
    assert doc["tests"]["fixed"] == ["GreetingTest::test_greets_by_the_whole_name"]
    assert doc["tests"]["before"]["passed"] == 1 and doc["tests"]["after"]["passed"] == 2
    assert doc["pluginLoad"] == {"before": None, "after": None}
    assert doc["probe"]["frontEnd"]["pluginLoaded"] is True and doc["probe"]["frontEnd"]["status"] == "passed"
    bundle = Path(doc["bundleDir"])
    # the bundle's patch is exactly the contributor's change: Codebox's loader is not part of it
    patch_diff = (bundle / "files" / "patch.diff").read_text(encoding="utf-8")
    assert "site-greeting.php" in patch_diff and "$name . '!'" in patch_diff
    assert "codebox-load" not in patch_diff
    changed = json.loads((bundle / "files" / "changed-files.json").read_text(encoding="utf-8"))["files"]
    assert [c["relativePath"] for c in changed] == ["site-greeting.php"]
    # the loader is Codebox's setup step, not a site-state risk of the patch
    diff = json.loads((bundle / "files" / "site-state-diff.json").read_text(encoding="utf-8"))
    assert diff.get("risks", []) == [], diff.get("risks")
    assert "siteStateRisks" not in doc
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    written = [e for e in events if e.get("type") == "mu-plugin.loader-written"]
    assert written and written[0]["data"]["plugin"] == (
        "/wordpress/wp-content/mu-plugins/codebox-runtime/site-greeting/site-greeting.php"
    )


@pytest.mark.timeout(900)
def test_patch_that_makes_a_mu_plugin_fatal_is_plugin_broken(codebox_home: Path, tmp_path: Path) -> None:
    plugin = _mu_plugin(tmp_path, with_tests=False)
    patch = tmp_path / "fatal.patch"
    patch.write_text(FATAL, encoding="utf-8")
    proc = _cli(
        codebox_home,
        "--plugin",
        str(plugin),
        "--patch",
        str(patch),
        "--slug",
        "greeting",
        "--artifacts-dir",
        str(tmp_path / "art"),
        "--json",
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["plugin"] == "greeting" and doc["tests"]["verdict"] == "plugin-broken"
    assert doc["pluginLoad"]["before"] is None
    assert doc["pluginLoad"]["after"].startswith("greeting fails to load (after): ")
    assert "site_greeting_setup_that_does_not_exist" in doc["pluginLoad"]["after"]
    assert doc["probe"]["frontEnd"]["status"] == "failed"


@pytest.mark.timeout(900)
def test_mu_plugin_without_tests_beside_it_is_untested_and_says_so(codebox_home: Path, tmp_path: Path) -> None:
    plugin = _mu_plugin(tmp_path, with_tests=False)
    patch = tmp_path / "fix.patch"
    patch.write_text(FIX, encoding="utf-8")
    proc = _cli(
        codebox_home, "--plugin", str(plugin), "--patch", str(patch), "--artifacts-dir", str(tmp_path / "art"), "--json"
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["tests"]["verdict"] == "untested"
    assert "next to site-greeting.php: nothing to run" in doc["tests"]["reason"]
    assert doc["pluginLoad"] == {"before": None, "after": None} and doc["probe"]["frontEnd"]["pluginLoaded"] is True

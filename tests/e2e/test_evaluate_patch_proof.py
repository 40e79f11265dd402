"""`codebox evaluate-patch` verdicts that prove a fix, end to end through real sandboxes: a fix that brings its
own test (fail before, pass after), a git range of the plugin's own repository,
and Codebox's own activation of the plugin never counted as the patch's site-state risk
(docs/evaluate-patch.md). The verdicts are Codebox's reading of JUnit and the site state, not Playground's, so
they run on the native backend (real PHP in bubblewrap), each checking that its bundle says so; the same flow on
Playground is covered by test_wp_unittestcase.py (docs/performance.md, "Test suite").

One evaluation per input: the fix with its test is evaluated once, as the single commit of the plugin's own
repository (``--git COMMIT``, a JSON document checked for the proof, the source and the slug), and the range
``BASE..HEAD`` of the same commit once, in human output. A patch that breaks a test, named as the regression in
the human output, is test_wp_unittestcase.py's breaking patch (the same reading of JUnit, one evaluation fewer)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories.buggy_counter import PLUGIN, commit_fix_branch, git
from tests.factories.suites import assert_ran_on, printed_bundle

pytestmark = pytest.mark.native

PROVED = [
    "CountTest::test_repeated_spaces",
    "WhitespaceTest::test_empty_text_has_no_words",
    "WhitespaceTest::test_newline_separated_words",
    "WhitespaceTest::test_tab_separated_words",
]


def _cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """An evaluation on the native backend; one that made a bundle must say it ran there."""
    proc = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "evaluate-patch", "--backend", "native", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env={**os.environ, "CODEBOX_HOME": str(home)},
    )
    if printed_bundle(proc.stdout) is not None:
        assert_ran_on("native", proc.stdout, proc.stderr)
    return proc


def _site_risks(bundle: Path) -> list[str]:
    diff = json.loads((bundle / "files" / "site-state-diff.json").read_text(encoding="utf-8"))
    return [risk["code"] for risk in diff.get("risks", [])]


def _fix_commit_repo(tmp_path: Path) -> Path:
    """buggy-counter's own repository: ``main`` with the bug, ``fix-whitespace`` one commit on top of it adding
    the fix with its test (examples/patches/buggy-counter-fix-with-test.patch)."""
    repo = tmp_path / "checkout-folder"
    shutil.copytree(PLUGIN, repo)
    commit_fix_branch(repo)
    return repo


def test_fix_with_its_own_test_is_proved_by_it(codebox_home: Path, tmp_path: Path) -> None:
    """The fix commit alone: one commit means COMMIT^..COMMIT, and the slug is the folder's name unless --slug
    says otherwise."""
    repo = _fix_commit_repo(tmp_path)
    proc = _cli(
        codebox_home,
        "--plugin",
        str(repo),
        "--git",
        "fix-whitespace",
        "--slug",
        "word-counter",
        "--json",
        "--artifacts-dir",
        str(tmp_path / "art"),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["plugin"] == "word-counter"
    assert doc["source"]["base"] == git(repo, "rev-parse", "main")
    assert doc["source"]["head"] == git(repo, "rev-parse", "fix-whitespace")
    # the patch's new tests ran against the old code: they fail there and pass with the fix
    assert doc["split"] == {
        "rule": "default",
        "testFiles": ["tests/WhitespaceTest.php"],
        "codeFiles": ["buggy-counter.php"],
        "testsRunBefore": True,
    }
    assert doc["tests"]["verdict"] == "improvement"
    assert doc["tests"]["provedBy"] == PROVED and doc["tests"]["added"] == []
    assert doc["tests"]["before"]["failed"] == 4 and doc["tests"]["after"]["failed"] == 0
    assert [s["command"] for s in doc["steps"] if s["phase"] == "apply"] == [
        "git apply (the patch's tests)",
        "git apply (the patch's code)",
    ]
    bundle = Path(doc["bundleDir"])
    written = json.loads((bundle / "files" / "evaluate-patch.json").read_text(encoding="utf-8"))
    assert written["tests"]["provedBy"] == PROVED
    # the bundle's patch is the whole contributor patch: tests and code
    patch = (bundle / "files" / "patch.diff").read_text(encoding="utf-8")
    assert "WhitespaceTest" in patch and "preg_split" in patch
    # Codebox activated the plugin itself: that is its own setup step, not a risk of the patch
    assert "active-plugins-changed" not in _site_risks(bundle)
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    setup = [e for e in events if e.get("type") == "site-state.setup-step"]
    assert setup and "active-plugins-changed" in setup[0]["data"]["risks"]


def test_git_range_of_a_fix_commit_with_its_test(codebox_home: Path, tmp_path: Path) -> None:
    repo = _fix_commit_repo(tmp_path)
    # a dirty work tree is refused: the range would silently leave the edit out
    (repo / "buggy-counter.php").write_text("<?php // edited\n", encoding="utf-8")
    dirty = _cli(codebox_home, "--plugin", str(repo), "--git", "main..fix-whitespace", "--json")
    assert dirty.returncode == 2 and json.loads(dirty.stdout)["error"]["code"] == "dirty-work-tree"
    git(repo, "checkout", "--", "buggy-counter.php")
    proc = _cli(
        codebox_home,
        "--plugin",
        str(repo),
        "--git",
        "main..fix-whitespace",
        "--slug",
        "buggy-counter",
        "--artifacts-dir",
        str(tmp_path / "art"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict: improvement" in proc.stdout
    assert "the patch's tests (tests/WhitespaceTest.php) ran on the old code too" in proc.stdout
    for name in PROVED:
        assert f"  proved by {name}: failed before the fix, passes after it" in proc.stdout

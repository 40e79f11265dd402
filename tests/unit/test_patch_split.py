"""The test/code split of a patch (docs/evaluate-patch.md, "Which files are tests") and the proof rule of the
verdict (fail before, pass after)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codebox_tui.contracts.bundle import TestCase, TestSuite
from codebox_tui.errors import BadInputError
from codebox_tui.recipes.evaluate_patch import test_delta as compute_delta
from codebox_tui.recipes.evaluate_range import parse_range
from codebox_tui.recipes.patch_split import split_patch
from codebox_tui.recipes.patch_split import test_rule as rule_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WITH_TEST = EXAMPLES / "patches" / "buggy-counter-fix-with-test.patch"


def _section(path: str, new: bool = False) -> bytes:
    old = "/dev/null" if new else f"a/{path}"
    return (f"diff --git a/{path} b/{path}\n--- {old}\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n").encode()


def test_default_rule_names_test_folders_files_and_phpunit_directories(tmp_path: Path) -> None:
    (tmp_path / "phpunit.xml.dist").write_text(
        '<phpunit><testsuites><testsuite name="u"><directory>./spec/unit/</directory>'
        "<file>checks/OneCheck.php</file></testsuite></testsuites></phpunit>"
    )
    rule = rule_for(tmp_path)
    for path in (
        "tests/FooTest.php",
        "src/test/helper.php",
        "test-foo.php",
        "inc/foo-test.php",
        "FooTest.php",
        "spec/unit/a.php",
        "checks/OneCheck.php",
    ):
        assert rule.is_test(path), path
    for path in ("plugin.php", "inc/latest.php", "testing.php", "spec/other.php", "contest/a.php"):
        assert not rule.is_test(path), path


def test_tests_path_replaces_the_rule_and_bad_globs_are_refused(tmp_path: Path) -> None:
    rule = rule_for(tmp_path, ["qa/*"])
    assert rule.name == "--tests-path"
    assert rule.is_test("qa/deep/a.php") and not rule.is_test("tests/FooTest.php")
    with pytest.raises(BadInputError) as caught:
        rule_for(tmp_path, ["/etc/*"])
    assert caught.value.field == "--tests-path"


def test_split_keeps_each_part_applicable(tmp_path: Path) -> None:
    plugin = EXAMPLES / "plugins-for-recipes" / "buggy-counter"
    split = split_patch(WITH_TEST.read_bytes(), rule_for(plugin))
    assert split.test_files == ["tests/WhitespaceTest.php"] and split.code_files == ["buggy-counter.php"]
    assert split.code_patch + split.test_patch == WITH_TEST.read_bytes()
    for part in (split.test_patch, split.code_patch):
        copy = tmp_path / f"c{len(part)}"
        subprocess.run(["cp", "-r", str(plugin), str(copy)], check=True)
        done = subprocess.run(["git", "apply", "--check", "-"], cwd=copy, input=part, capture_output=True)
        assert done.returncode == 0, done.stderr


def test_a_file_renamed_out_of_the_tests_is_code_and_plain_diffs_split() -> None:
    rename = b"diff --git a/tests/a.php b/a.php\nsimilarity index 100%\nrename from tests/a.php\nrename to a.php\n"
    split = split_patch(rename + _section("tests/BTest.php", new=True), rule_for(Path("/nonexistent")))
    assert split.code_files == ["tests/a.php", "a.php"] and split.test_files == ["tests/BTest.php"]
    plain = b"--- a/x.php\n+++ b/x.php\n@@ -1 +1 @@\n-a\n+b\n--- a/tests/XTest.php\n+++ b/tests/XTest.php\n@@ -1 +1 @@\n-a\n+b\n"
    split = split_patch(plain, rule_for(Path("/nonexistent")))
    assert split.code_files == ["x.php"] and split.test_files == ["tests/XTest.php"]


def _suite(**statuses: str) -> TestSuite:
    cases = [TestCase(name=n, classname="T", status=s) for n, s in statuses.items()]  # type: ignore[arg-type]
    failed = sum(s != "passed" for s in statuses.values())
    return TestSuite(
        name="s",
        status="failed" if failed else "passed",
        tests=len(cases),
        failed=failed,
        passed=len(cases) - failed,
        cases=cases,
    )


def test_fail_before_pass_after_is_the_proof() -> None:
    proved = compute_delta(_suite(new="failed", old="passed"), _suite(new="passed", old="passed"), patch_tests=True)
    assert proved["verdict"] == "improvement" and proved["provedBy"] == ["T::new"]
    blind = compute_delta(_suite(new="passed"), _suite(new="passed"), patch_tests=True)
    assert blind["verdict"] == "neutral" and "do not detect the bug" in blind["reason"]
    assert "provedBy" not in compute_delta(_suite(x="failed"), _suite(x="passed"))  # no tests in the patch
    broke = compute_delta(_suite(new="failed", old="passed"), _suite(new="passed", old="failed"), patch_tests=True)
    assert broke["verdict"] == "regression" and broke["broken"] == ["T::old"] and "provedBy" not in broke


def test_git_ranges() -> None:
    assert parse_range("main..fix-1") == ("main", "fix-1")
    assert parse_range("a1b2c3d") == ("a1b2c3d^", "a1b2c3d")
    for bad in ("a...b", "..b", "-x", "a..--output=x", "a b"):
        with pytest.raises(BadInputError):
            parse_range(bad)

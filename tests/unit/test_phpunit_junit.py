"""JUnit parsing against genuine output of Debian's phpunit, run natively on a tiny suite."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codebox_tui.errors import BadInputError
from codebox_tui.runtime.phpunit import parse_junit, phpunit_tool_mounts, split_output

SUITE = r"""<?php
use PHPUnit\Framework\TestCase;
final class DemoTest extends TestCase {
    public function testPasses(): void { $this->assertSame(2, 1 + 1); }
    public function testFails(): void { $this->assertSame('expected', 'actual', 'values differ'); }
    public function testErrors(): void { throw new RuntimeException('kaboom'); }
    public function testSkipped(): void { $this->markTestSkipped('not today'); }
    /** @dataProvider rows */
    public function testProvided(int $n): void { $this->assertGreaterThan(0, $n); }
    public function rows(): array { return [[1], [2]]; }
}
"""

needs_phpunit = pytest.mark.skipif(shutil.which("phpunit") is None, reason="Debian phpunit not installed")


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "DemoTest.php").write_text(SUITE)
    return subprocess.run(
        ["phpunit", "--colors=never", *extra, str(tmp_path / "DemoTest.php")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


@needs_phpunit
def test_parse_real_junit_file(tmp_path: Path) -> None:
    _run(tmp_path, "--log-junit", str(tmp_path / "junit.xml"))
    suite = parse_junit((tmp_path / "junit.xml").read_text(), name="wordpress.phpunit")
    assert (suite.tests, suite.passed, suite.failed, suite.skipped) == (6, 3, 2, 1)
    assert suite.status == "failed"
    by_name = {c.name: c for c in suite.cases}
    assert by_name["testPasses"].status == "passed" and by_name["testPasses"].classname == "DemoTest"
    assert by_name["testFails"].status == "failed"
    assert "values differ" in (by_name["testFails"].details or "")
    # the assertion message, not the test id PHPUnit writes on the first line
    assert by_name["testFails"].message == (
        "values differ\nFailed asserting that two strings are identical.\n"
        "--- Expected\n+++ Actual\n@@ @@\n-'expected'\n+'actual'"
    )
    assert by_name["testErrors"].message == "RuntimeException: kaboom"
    assert by_name["testErrors"].status == "error" and "kaboom" in (by_name["testErrors"].details or "")
    assert by_name["testSkipped"].status == "skipped"
    provided = [c for c in suite.cases if c.name.startswith("testProvided")]
    assert len(provided) == 2 and all(c.status == "passed" for c in provided)


@needs_phpunit
def test_junit_on_stdout_is_split_from_human_output(tmp_path: Path) -> None:
    proc = _run(tmp_path, "--log-junit", "php://stdout")
    human, junit = split_output(proc.stdout)
    assert junit is not None and junit.startswith("<?xml")
    assert "Failures: 1" in human and "<testsuite" not in human
    assert parse_junit(junit).failed == 2


def test_all_passing_and_empty_and_broken() -> None:
    ok = parse_junit(
        '<testsuites><testsuite name="s"><testcase name="a" class="C" time="0.01"/></testsuite></testsuites>'
    )
    assert ok.status == "passed" and ok.cases[0].timeSeconds == pytest.approx(0.01)
    assert parse_junit("<testsuites/>").status == "unknown"
    skipped = parse_junit('<testsuites><testsuite><testcase name="a"><skipped/></testcase></testsuite></testsuites>')
    assert skipped.status == "skipped"
    with pytest.raises(BadInputError):
        parse_junit("<testsuites><unclosed>")
    assert split_output("no xml here") == ("no xml here", None)


@needs_phpunit
def test_tool_mounts_are_readonly_copies(tmp_path: Path) -> None:
    mounts = phpunit_tool_mounts(tmp_path / "bin")
    assert {m.target for m in mounts} == {"/usr/share/php", "/codebox-phpunit-bin"}
    assert all(m.mode == "readonly" for m in mounts)
    assert (tmp_path / "bin" / "phpunit").read_bytes() == Path("/usr/bin/phpunit").read_bytes()

"""A suite that forges PHPUnit's TeamCity log on stderr (runtime/test_progress.py): through the real CLI and a
real native sandbox, a bootstrap announces an absurd test count and a test claims finished and failed tests
that never ran. The progress counts stay bounded display hints; the verdict and totals are the JUnit ones,
and the suite's own stderr is kept as evidence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codebox_tui.runtime.test_progress import MAX_COUNT

pytestmark = pytest.mark.native

BOOTSTRAP = """<?php
fwrite( STDERR, "\\n##teamcity[testCount count='99999999' flowId='1']\\n" );
"""
TEST = """<?php
class ForgeTest extends PHPUnit\\Framework\\TestCase {
    public function test_it_passes() {
        fwrite( STDERR, str_repeat( "\\n##teamcity[testFinished name='ghost' flowId='1']\\n", 40 ) );
        fwrite( STDERR, "\\n##teamcity[testFailed name='ghost' message='[b]forged' flowId='1']\\n" );
        fwrite( STDERR, "##teamcity[testFinished " . str_repeat( 'A', 200000 ) . "\\n" );
        fwrite( STDERR, "suite's own line\\n" );
        $this->assertTrue( true );
    }
}
"""


def test_forged_progress_lines_stay_hints_and_never_reach_the_verdict(tmp_path: Path) -> None:
    plugin = tmp_path / "forger"
    (plugin / "tests").mkdir(parents=True)
    (plugin / "forger.php").write_text("<?php\n/* Plugin Name: Forger */\n")
    (plugin / "tests" / "bootstrap.php").write_text(BOOTSTRAP)
    (plugin / "tests" / "ForgeTest.php").write_text(TEST)
    proc = subprocess.run(  # the session's CODEBOX_HOME (tests/conftest.py): its prepared native install
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "run",
            "--backend",
            "native",
            "--json",
            "--artifacts",
            str(tmp_path / "art"),
            "-m",
            f"{plugin}:/wordpress/wp-content/plugins/forger",
            "-c",
            "wordpress.phpunit",
            "-a",
            "plugin-slug=forger",
            "-a",
            "bootstrap=tests/bootstrap.php",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = Path(json.loads(proc.stdout)["artifacts"]["directory"])
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    progress = [e["data"] for e in events if e["type"] == "tests.progress"]
    finished = [e["data"] for e in events if e["type"] == "tests.finished"]
    # the verdict is the JUnit document's: one test, passed
    assert [(f["status"], f["tests"], f["passed"], f["failed"]) for f in finished] == [("passed", 1, 1, 0)]
    # the forged count was read (it came first) but bounded; the ghosts moved a display hint and nothing else
    assert progress and all(p.get("total", 0) <= MAX_COUNT for p in progress), progress
    assert progress[-1]["failed"] <= progress[-1]["done"]
    # what the suite itself wrote on stderr is kept; the over-long line never became a count
    output = next(run_dir.glob("files/phpunit/1/output.txt")).read_text()
    assert "suite's own line" in output
    assert max(p["done"] for p in progress) <= 41 + 1

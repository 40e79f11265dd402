"""`codebox evaluate-patch --git BASE..HEAD` on a maintainer's work tree, through the real CLI, real git and a real
native sandbox (what is tested is the work tree's export and overlay, the same for either backend; the bundle
checks the backend it records): the ignored Composer ``vendor/`` the suite's bootstrap requires reaches both sides (the suite runs
before and after), and an untracked notes file is carried along without showing up as a change
(docs/evaluate-patch.md, "A git range")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.factories.buggy_counter import PLUGIN, commit_fix_branch, git
from tests.factories.evaluations import evaluate_natively
from tests.factories.holds import linked_home
from tests.factories.native import NATIVE, recorded_backend

pytestmark = pytest.mark.native

BOOTSTRAP = """<?php
// Composer's autoloader: vendor/ is ignored by git, installed by `composer install`.
require dirname( __DIR__ ) . '/vendor/autoload.php';
define( 'WP_USE_THEMES', false );
require getenv( 'WP_LOAD' ) ? getenv( 'WP_LOAD' ) : '/wordpress/wp-load.php';
require_once dirname( __DIR__ ) . '/buggy-counter.php';
counter_test_helpers_ready();
"""


@pytest.mark.timeout(900)
def test_ignored_vendor_reaches_both_sides_and_notes_are_no_change(codebox_home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "buggy-counter"
    shutil.copytree(PLUGIN, repo)
    (repo / "tests" / "bootstrap.php").write_text(BOOTSTRAP, encoding="utf-8")
    (repo / ".gitignore").write_text("/vendor/\n", encoding="utf-8")
    commit_fix_branch(repo)
    # what `composer install` leaves in the maintainer's checkout (ignored) and a notes file (untracked)
    (repo / "vendor" / "composer").mkdir(parents=True)
    (repo / "vendor" / "autoload.php").write_text(
        "<?php\nrequire __DIR__ . '/composer/helpers.php';\n", encoding="utf-8"
    )
    (repo / "vendor" / "composer" / "helpers.php").write_text(
        "<?php\nfunction counter_test_helpers_ready() { return true; }\n", encoding="utf-8"
    )
    (repo / "NOTES.md").write_text("- ask about non-breaking spaces\n", encoding="utf-8")
    assert git(repo, "status", "--porcelain") == "?? NOTES.md"  # vendor/ is ignored, not even listed
    # what is under test is the work tree's export and overlay, not the sandbox: the native backend (CI time)
    home = linked_home(codebox_home, tmp_path / "home")
    proc = evaluate_natively(home, repo, ("--git", "main..fix-whitespace"), tmp_path / "art")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    # the bootstrap found the ignored vendor/ on both sides: the suite ran before and after
    assert doc["tests"]["before"]["tests"] == 5 and doc["tests"]["after"]["tests"] == 5
    assert doc["tests"]["verdict"] == "improvement" and doc["tests"]["before"]["failed"] == 4
    bundle = Path(doc["bundleDir"])
    assert recorded_backend(bundle) == NATIVE
    changed = json.loads((bundle / "files" / "changed-files.json").read_text(encoding="utf-8"))["files"]
    assert sorted(c["relativePath"] for c in changed) == ["buggy-counter.php", "tests/WhitespaceTest.php"]
    patch = (bundle / "files" / "patch.diff").read_text(encoding="utf-8")
    assert "NOTES.md" not in patch and "vendor/" not in patch

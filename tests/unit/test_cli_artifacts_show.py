"""``codebox artifacts show``: what a reviewer needs at a glance, from real bundles through the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.factories.bundles import make_bundle, typical_change


def _show(bundle: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", "artifacts", "show", str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_show_lists_runtime_baseline_changes_skips_and_tests(tmp_path: Path) -> None:
    def change_and_plant(source: Path) -> None:
        typical_change(source)
        (source / "link.php").symlink_to("/etc/hostname")  # reported, never followed

    summary, _ = make_bundle(tmp_path, change_and_plant)
    out = _show(summary.path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "runtime  " in out.stdout and "WordPress 6.5.5" in out.stdout
    assert "baseline mount 0: snapshot" in lines
    assert "verified yes" in lines
    assert any(line.split()[:2] == ["deleted", "readme.txt"] for line in lines)
    assert any(line.startswith("skipped  1 not captured") for line in lines)
    assert any(line.split() == ["symlink", "link.php"] for line in lines)
    assert "tests    unknown (no test-aware command ran)" in lines
    assert "{" not in out.stdout  # no raw Python/JSON structures in the human summary


def test_show_names_the_violations_of_a_tampered_bundle(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    patch = summary.path / "files" / "patch.diff"
    patch.write_text(patch.read_text() + "+sneaked in\n")
    out = _show(summary.path)
    assert out.returncode == 0, out.stderr  # show describes; verify is the gate
    assert any(line.startswith("verified NO") for line in out.stdout.splitlines())
    assert any(line.split()[:1] == ["file-hash-mismatch"] for line in out.stdout.splitlines())


def test_list_of_a_missing_root_is_bad_input(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "artifacts", "list", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "is not a folder" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "empty").mkdir()
    empty = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "artifacts", "list", str(tmp_path / "empty")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert empty.returncode == 0 and "no bundles under" in empty.stdout

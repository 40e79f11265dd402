"""Host file-system problems are clear one-line errors with documented exit codes, never tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNUSABLE = "/dev/null/sub"  # a folder can never be made under a device file


def _codebox(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args], capture_output=True, text=True, timeout=120, cwd=REPO
    )


def test_run_with_an_unusable_artifacts_folder_fails_before_boot(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    out = _codebox(
        "run",
        "--mount",
        f"{tmp_path / 'p'}:/wordpress/wp-content/plugins/p",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo 1;",
        "--artifacts",
        UNUSABLE,
    )
    assert out.returncode == 2, out.stderr
    assert "--artifacts" in out.stderr and "Not a directory" in out.stderr
    assert "Traceback" not in out.stderr and "boot" not in out.stderr


def test_recipe_run_with_an_unusable_artifacts_folder_is_bad_input() -> None:
    out = _codebox("recipe-run", "examples/recipes/plugin-probe.json", "--artifacts", UNUSABLE, "--json")
    assert out.returncode == 2, out.stderr
    assert '"field": "--artifacts"' in out.stdout
    assert "Traceback" not in out.stderr


def test_an_unexpected_host_io_error_is_one_line_with_exit_code_6(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from codebox_tui import cli
    from codebox_tui.errors import ExitCode

    def disk_full(**_: object) -> None:
        raise OSError(28, "No space left on device", "/var/lib/codebox/run/files/patch.diff")

    monkeypatch.setattr(cli, "app", disk_full)
    with pytest.raises(SystemExit) as exited:
        cli.main(["artifacts", "list"])
    assert exited.value.code == ExitCode.HOST_IO == 6
    err = capsys.readouterr().err
    assert err.strip() == "codebox: error: No space left on device (/var/lib/codebox/run/files/patch.diff)"

"""WP-CLI where maintainers have it, end to end through the real CLI and a real sandbox, with WP-CLI's release
phar from ``../shared/toolchains`` used the way a user's own is: named with ``--wp-cli-phar``, or found as ``wp``
on ``PATH`` (a link to the phar, as its install instructions make it). Finding the phar is the host's work and
the same on both backends, so every run here is native (the host's PHP in bubblewrap, several times cheaper than
Playground, docs/backends.md) and checks that it ran there; the phar inside PHP-wasm is compared with native by
tests/e2e/test_backend_parity.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories.native import recorded_backend
from tests.factories.paths import REPO
from tests.factories.toolchains import WP_CLI_PHAR, require

pytestmark = pytest.mark.native


def _env(tmp_path: Path, *, path_dir: Path | None = None) -> dict[str, str]:
    """The environment a user's shell gives: no CODEBOX_WP_CLI_PHAR, and ``path_dir`` first on PATH (else a
    PATH without any ``wp``)."""
    env = {k: v for k, v in os.environ.items() if k != "CODEBOX_WP_CLI_PHAR"}
    system = [d for d in env.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "wp").exists()]
    env["PATH"] = os.pathsep.join([str(path_dir), *system] if path_dir else system)
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return env


def _wp_cli(tmp_path: Path, command: str, *extra: str, env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "run",
            *extra,
            "--command",
            "wordpress.wp-cli",
            "--arg",
            f"command={command}",
            "--artifacts",
            str(tmp_path / "artifacts"),
            "--json",
            "--quiet",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.stdout.strip(), proc.stderr[-3000:]
    doc: dict[str, Any] = json.loads(proc.stdout)
    doc["_exit"] = proc.returncode
    return doc


def _wp_on_path(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "wp").symlink_to(WP_CLI_PHAR)
    return bin_dir


@pytest.mark.timeout(900)  # three runs, each booting a sandbox, on a shared CI machine
def test_real_wp_cli_phar_given_with_the_flag(tmp_path: Path) -> None:
    require(WP_CLI_PHAR)
    env = _env(tmp_path)
    plugins = _wp_cli(
        tmp_path, "plugin list --format=json", "--backend", "native", "--wp-cli-phar", str(WP_CLI_PHAR), env=env
    )
    assert plugins["_exit"] == 0, json.dumps(plugins)[-3000:]
    listed = json.loads(plugins["execution"]["stdout"])
    assert isinstance(listed, list) and all({"name", "status", "version"} <= set(p) for p in listed)
    home = _wp_cli(tmp_path, "option get home", "--backend", "native", "--wp-cli-phar", str(WP_CLI_PHAR), env=env)
    assert home["_exit"] == 0 and home["execution"]["stdout"].strip().startswith("http"), json.dumps(home)[-3000:]
    blogname = _wp_cli(
        tmp_path,
        "eval 'echo get_option(\"blogname\");'",
        "--backend",
        "native",
        "--wp-cli-phar",
        str(WP_CLI_PHAR),
        env=env,
    )
    assert blogname["_exit"] == 0, json.dumps(blogname)[-3000:]
    assert blogname["execution"]["stdout"].strip() == "My WordPress Website"
    assert [d["runtime"]["backend"] for d in (plugins, home, blogname)] == ["native", "native", "native"]


@pytest.mark.timeout(600)  # a run and an exec, each booting a sandbox
def test_wp_on_path_is_used_like_a_maintainers_install(tmp_path: Path) -> None:
    require(WP_CLI_PHAR)
    env = _env(tmp_path, path_dir=_wp_on_path(tmp_path))
    home = _wp_cli(tmp_path, "option get home", "--backend", "native", env=env)
    assert home["_exit"] == 0 and home["execution"]["stdout"].strip().startswith("http"), json.dumps(home)[-3000:]
    assert home["runtime"]["backend"] == "native"
    # the exec shell's `wp` finds it the same way
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "exec",
            "--backend",
            "native",
            "--artifacts",
            str(tmp_path / "exec"),
            "--json",
            "--timeout",
            "5m",
            "wp plugin list --field=name",
        ],  # a busy machine: no 30 s race
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["exitCode"] == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [recorded_backend(m.parent) for m in (tmp_path / "exec").rglob("metadata.json")] == ["native"]


def test_no_wp_cli_anywhere_says_how_to_get_one(tmp_path: Path) -> None:
    doc = _wp_cli(tmp_path, "option get home", "--backend", "native", env=_env(tmp_path))
    assert doc["_exit"] != 0
    text = json.dumps(doc)
    assert "--wp-cli-phar" in text and "CODEBOX_WP_CLI_PHAR" in text and "PATH" in text and "wp-cli.org" in text

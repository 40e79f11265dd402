"""Finding the WordPress core PHPUnit library and the PHPUnit Polyfills on this machine: explicit option,
environment variable, default path; a folder named explicitly but not the library is an error naming what is
missing; what is found is mounted read-only and tagged with where it came from."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codebox_tui.errors import BadInputError
from codebox_tui.runtime import wp_tests
from codebox_tui.runtime.phpunit import SANDBOX_BIN_DIR, phpunit_tool_mounts
from codebox_tui.settings import reload_settings

REPO = Path(__file__).resolve().parents[2]


def _lib(root: Path) -> Path:
    for name in wp_tests.LIB_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("<?php\n")
    return root


def _polyfills(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / wp_tests.POLYFILLS_FILE).write_text("<?php\n")
    return root


@pytest.fixture
def set_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Set the WordPress tooling's environment variables, read through the settings."""

    def setter(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        reload_settings()

    for name in ("WP_TESTS_DIR", "WP_TESTS_PHPUNIT_POLYFILLS_PATH"):
        monkeypatch.delenv(name, raising=False)
    reload_settings()
    yield setter
    monkeypatch.undo()
    reload_settings()


def test_option_wins_over_environment(tmp_path: Path, set_env: Callable[..., None]) -> None:
    option, env = _lib(tmp_path / "opt"), _lib(tmp_path / "env")
    set_env(WP_TESTS_DIR=str(env))
    found = wp_tests.find_host_lib(option)
    assert found == wp_tests.Found(option.resolve(), "option")
    assert wp_tests.find_host_lib(None) == wp_tests.Found(env.resolve(), "env")


def test_a_folder_that_is_not_the_library_names_what_is_missing(tmp_path: Path, set_env: Callable[..., None]) -> None:
    (tmp_path / "lib" / "includes").mkdir(parents=True)
    (tmp_path / "lib" / "includes" / "functions.php").write_text("<?php\n")
    with pytest.raises(BadInputError) as info:
        wp_tests.find_host_lib(tmp_path / "lib")
    assert info.value.code == "wp-tests-lib-missing" and info.value.field == "--wp-tests-lib"
    assert str(tmp_path / "lib" / "includes" / "bootstrap.php") in info.value.message
    set_env(WP_TESTS_DIR=str(tmp_path / "nowhere"))
    with pytest.raises(BadInputError) as env_info:
        wp_tests.find_host_lib(None)
    assert env_info.value.field == "WP_TESTS_DIR"
    with pytest.raises(BadInputError) as poly_info:
        wp_tests.find_host_polyfills(tmp_path / "nowhere")
    assert poly_info.value.field == "--phpunit-polyfills"
    assert str(tmp_path / "nowhere" / wp_tests.POLYFILLS_FILE) in poly_info.value.message


def test_mounts_are_read_only_and_tagged(tmp_path: Path, set_env: Callable[..., None]) -> None:
    lib, polyfills = _lib(tmp_path / "lib"), _polyfills(tmp_path / "poly")
    set_env(WP_TESTS_DIR=str(lib), WP_TESTS_PHPUNIT_POLYFILLS_PATH=str(polyfills))
    mounts = wp_tests.toolchain_mounts(None, None)
    assert [(m.target, m.mode, m.metadata["toolchain"], m.metadata["origin"]) for m in mounts] == [
        (wp_tests.LIB_TARGET, "readonly", "wp-tests-lib", "env"),
        (wp_tests.POLYFILLS_TARGET, "readonly", "phpunit-polyfills", "env"),
    ]
    assert all(m.captureArtifacts is False for m in mounts)


@pytest.mark.skipif(not Path("/usr/bin/phpunit").is_file(), reason="Debian phpunit not installed")
def test_tool_mounts_write_the_tests_config_and_prelude(tmp_path: Path) -> None:
    mounts = phpunit_tool_mounts(tmp_path / "bin", wp_tests_lib=_lib(tmp_path / "lib"))
    assert any(m.target == wp_tests.LIB_TARGET for m in mounts)
    config = (tmp_path / "bin" / wp_tests.TESTS_CONFIG).read_text()
    assert "define( 'ABSPATH', '/wordpress/' );" in config and "'wptests_'" in config
    prelude = (tmp_path / "bin" / wp_tests.TESTS_PRELUDE).read_text()
    assert f"'{SANDBOX_BIN_DIR}/{wp_tests.TESTS_CONFIG}'" in prelude and "'WP_HOME' !==" in prelude


def test_scaffolded_bootstraps_are_recognised() -> None:
    scaffolded = (REPO / "examples/wp-unittest-plugin/word-stats/tests/bootstrap.php").read_text()
    plain = (REPO / "examples/plugins-for-recipes/buggy-counter/tests/bootstrap.php").read_text()
    assert wp_tests.needs_core_library(scaffolded)
    assert not wp_tests.needs_core_library(plain)
    assert wp_tests.needs_core_library("<?php require getenv( 'WP_PHPUNIT__DIR' ) . '/includes/bootstrap.php';")


@pytest.mark.parametrize(
    ("flag", "value", "code"),
    [
        ("--wp-tests-lib", "/nonexistent/wordpress-tests-lib", "wp-tests-lib-missing"),
        ("--phpunit-polyfills", "/nonexistent/polyfills", "phpunit-polyfills-missing"),
        ("--test", "tests/test-missing.php", "missing-source"),
        ("--phpunit-xml", "phpunit-missing.xml", "missing-source"),
        ("--wordpress", "sometimes", "invalid-arg"),
    ],
)
def test_evaluate_patch_bad_toolchain_input_fails_before_boot(tmp_path: Path, flag: str, value: str, code: str) -> None:
    import json
    import os
    import subprocess
    import sys

    example = REPO / "examples/wp-unittest-plugin"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "evaluate-patch",
            "--plugin",
            str(example / "word-stats"),
            "--patch",
            str(example / "patches/word-stats-fix.patch"),
            "--artifacts-dir",
            str(tmp_path / "art"),
            flag,
            value,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CODEBOX_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == code and error["field"] == flag
    assert not (tmp_path / "art").exists() or not any((tmp_path / "art").iterdir())


def test_single_file_config_keeps_settings_and_php_section() -> None:
    from xml.etree import ElementTree as ET

    from codebox_tui.runtime.phpunit import single_file_config

    source = (
        '<?xml version="1.0"?><phpunit bootstrap="./tests/bootstrap.php" convertWarningsToExceptions="true">'
        '<php><const name="WP_TESTS_MULTISITE" value="1"/></php><testsuites><testsuite name="all">'
        '<directory prefix="test-">./tests/</directory></testsuite></testsuites>'
        "<coverage><include><directory>./src</directory></include></coverage></phpunit>"
    )
    root = ET.fromstring(single_file_config(source, "phpunit.xml.dist", "/p", "/p/tests/test-a.php", None))
    assert root.get("bootstrap") == "/p/tests/bootstrap.php" and root.get("convertWarningsToExceptions") == "true"
    assert root.find("php/const").get("name") == "WP_TESTS_MULTISITE"  # type: ignore[union-attr]
    assert [f.text for f in root.iter("file")] == ["/p/tests/test-a.php"] and root.find("coverage") is None
    assert len(root.findall("testsuites")) == 1
    bare = ET.fromstring(single_file_config(None, None, "/p", "/p/tests/t.php", "/p/boot.php"))
    assert bare.get("bootstrap") == "/p/boot.php"
    with pytest.raises(BadInputError):
        single_file_config("<phpunit", "phpunit.xml", "/p", "/p/t.php", None)

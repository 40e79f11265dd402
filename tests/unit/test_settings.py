"""Settings: every configuration variable is a typed field; a bad value is a clear error naming it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codebox_tui.errors import BadInputError
from codebox_tui.runtime.backend import SandboxSpec
from codebox_tui.runtime.policy import default_policy
from codebox_tui.settings import CodeboxSettings, get_settings, reload_settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    def setter(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()

    yield setter
    monkeypatch.undo()
    reload_settings()


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("CODEBOX_TAB_WIDTH", "100", "less than or equal to 16"),
        ("CODEBOX_IMAGES", "sixel-please", "'auto', 'halfcell' or 'off'"),
        ("CODEBOX_PREVIEW_BIND", "localhost", "IP address"),
        ("CODEBOX_BOOT_TIMEOUT_S", "soon", "valid number"),
        ("CODEBOX_KEYMAP", "{not json", "must be JSON"),
    ],
)
def test_a_bad_value_names_its_variable(env: Callable[..., None], name: str, value: str, shown: str) -> None:
    env(**{name: value})
    with pytest.raises(BadInputError) as info:
        get_settings()
    assert info.value.field == name and info.value.code == "invalid-setting"
    assert name in info.value.message and shown in info.value.message


def test_values_are_typed_and_normalised(env: Callable[..., None], tmp_path: Path) -> None:
    env(
        CODEBOX_IMAGES=" No ",
        CODEBOX_APPROVER="  ",
        CODEBOX_ALLOW_NETWORK_DOWNLOADS="1",
        WP_TESTS_DIR=str(tmp_path),
        WP_TESTS_PHPUNIT_POLYFILLS_PATH="",
        CODEBOX_BOOT_TIMEOUT_S="7.5",
        CODEBOX_KEYMAP='{"review.approve_all": "ctrl+a"}',
    )
    settings = get_settings()
    assert settings.images == "off"
    assert settings.approver is None
    assert settings.allow_network_downloads is True
    assert settings.wp_tests_dir == tmp_path and settings.wp_tests_phpunit_polyfills_path is None
    assert settings.keymap == {"review.approve_all": "ctrl+a"} and settings.keymap_problem is None
    assert SandboxSpec(mounts=[], policy=default_policy()).boot_timeout_s == 7.5


def test_keymap_file_is_read_when_the_variable_is_unset(env: Callable[..., None], tmp_path: Path) -> None:
    env(CODEBOX_HOME=str(tmp_path))
    (tmp_path / "keymap.json").write_text('{"home.new": "m"}')
    assert reload_settings().keymap == {"home.new": "m"}
    (tmp_path / "keymap.json").write_text('["not", "a", "map"]')
    broken = reload_settings()
    assert broken.keymap == {} and "must map binding ids to key strings" in (broken.keymap_problem or "")


def test_configuration_is_read_only_through_the_settings() -> None:
    """No module reads a CODEBOX_ (or WP_TESTS_) variable from the environment itself (docs/settings.md)."""
    reads = re.compile(
        r"""(os\.environ(\.get)?[\[(]|os\.getenv\()\s*["'](CODEBOX_|WP_TESTS_)\w*["'][],)](?!\s*=[^=])"""
    )
    offenders = []
    for folder in ("codebox_tui", "store", "widgets"):
        for path in (REPO / folder).rglob("*.py"):
            rel = path.relative_to(REPO).as_posix()
            if "node_modules" in rel:
                continue
            offenders += [f"{rel}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1) if reads.search(line)]
    assert offenders == []


def test_variables_match_in_any_case_and_keyword_arguments_win(env: Callable[..., None], tmp_path: Path) -> None:
    """As pydantic-settings read them before settings.py read the environment itself: a variable's name in any
    case, and a value given to CodeboxSettings() over the environment's."""
    env(codebox_tab_width="8", Wp_Tests_Dir=str(tmp_path), CODEBOX_SITE_STATE="off")
    settings = get_settings()
    assert settings.tab_width == 8 and settings.wp_tests_dir == tmp_path and settings.site_state == "off"
    assert CodeboxSettings(site_state="on").site_state == "on" and CodeboxSettings().site_state == "off"

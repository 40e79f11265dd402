"""Browser step parsing and URL/viewport helpers: pure logic, no browser (the Chromium tests are in
tests/integration/test_browser_evidence.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebox_tui.browser.actions import parse_steps
from codebox_tui.browser.launch import parse_viewport, resolve_url
from codebox_tui.errors import BadInputError


@pytest.mark.parametrize("raw, field", [
    ("not json", "steps-json"), ("[]", "steps-json"), ('[{"action": "fly"}]', "steps-json[0]"),
    ('[{"action": "click"}]', "steps-json[0]"), ('[{"action": "navigate", "url": "/"}, 3]', "steps-json[1]"),
    ('[{"action": "waitFor"}]', "steps-json[0]"),
])
def test_bad_steps_name_the_step(raw: str, field: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_steps(raw)
    assert info.value.field == field


def test_steps_at_path_uses_the_shared_json_argument_resolver(tmp_path: Path) -> None:
    """The direct command reads @path relative to base_dir exactly as `recipe validate`/`recipe-run` do."""
    from codebox_tui.jsonargs import load_json_arg

    (tmp_path / "steps").mkdir()
    (tmp_path / "steps" / "ok.json").write_text('[{"action": "waitFor", "ms": 1}]')
    (tmp_path / "steps" / "bad.json").write_text('[{"action": ')
    assert parse_steps("@steps/ok.json", tmp_path) == load_json_arg("@steps/ok.json", tmp_path, "x")
    with pytest.raises(BadInputError) as missing:
        parse_steps("@steps/missing.json", tmp_path)
    assert (missing.value.code, missing.value.field) == ("missing-source", "steps-json")
    assert str(tmp_path / "steps" / "missing.json") in missing.value.message
    with pytest.raises(BadInputError) as bad:
        parse_steps("@steps/bad.json", tmp_path)
    assert (bad.value.code, bad.value.field) == ("invalid-arg", "steps-json")
    assert "bad.json" in bad.value.message


def test_url_and_viewport_helpers() -> None:
    assert resolve_url("http://127.0.0.1:9/", "/?p=1") == "http://127.0.0.1:9/?p=1"
    assert resolve_url("http://127.0.0.1:9", "wp-admin/") == "http://127.0.0.1:9/wp-admin/"
    with pytest.raises(BadInputError):
        resolve_url("http://127.0.0.1:9/", "https://example.com/")
    assert parse_viewport("390x844") == {"width": 390, "height": 844}
    with pytest.raises(BadInputError):
        parse_viewport("big")

"""Browser step parsing and URL/viewport helpers: pure logic, no browser (the Chromium tests are in
tests/integration/test_browser_evidence.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebox_tui.browser.actions import parse_steps, same_json, step_target
from codebox_tui.browser.launch import parse_viewport, resolve_url
from codebox_tui.errors import BadInputError


@pytest.mark.parametrize(
    "raw, field",
    [
        ("not json", "steps-json"),
        ("[]", "steps-json"),
        ('[{"action": "fly"}]', "steps-json[0]"),
        ('[{"action": "click"}]', "steps-json[0].selector"),
        ('[{"action": "navigate", "url": "/"}, 3]', "steps-json[1]"),
        ('[{"action": "waitFor"}]', "steps-json[0].selector"),
        ('[{"action": "waitFor", "selector": "#a", "state": "gone"}]', "steps-json[0].state"),
        ('[{"action": "waitFor", "ms": "5"}]', "steps-json[0].ms"),
        ('[{"action": "hover", "selector": ""}]', "steps-json[0].selector"),
        ('[{"action": "type", "selector": "#a"}]', "steps-json[0].text"),
        ('[{"action": "type", "selector": "#a", "text": "x", "delay": -1}]', "steps-json[0].delay"),
        ('[{"action": "type", "selector": "#a", "text": "x", "delay": true}]', "steps-json[0].delay"),
        ('[{"action": "press", "selector": "#a"}]', "steps-json[0].key"),
        ('[{"action": "select", "selector": "#a", "value": ["x"]}]', "steps-json[0].value"),
        ('[{"action": "drag", "source": "#a"}]', "steps-json[0].target"),
        ('[{"action": "drag", "target": "#a"}]', "steps-json[0].source"),
        ('[{"action": "evaluate"}]', "steps-json[0].expression"),
        ('[{"action": "evaluate", "expression": "  "}]', "steps-json[0].expression"),
        ('[{"action": "evaluate", "expression": "1", "script": "2"}]', "steps-json[0].script"),
        ('[{"action": "click", "selector": "#a", "assert": true}]', "steps-json[0].assert"),
        ('[{"action": "expect", "selector": "#a", "visible": "yes"}]', "steps-json[0].visible"),
        ('[{"action": "expect", "selector": "#a", "count": 1.5}]', "steps-json[0].count"),
    ],
)
def test_bad_steps_name_the_step(raw: str, field: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_steps(raw)
    assert info.value.field == field


def test_every_new_action_with_its_fields_is_accepted() -> None:
    steps = parse_steps(
        json.dumps(
            [
                {"action": "hover", "selector": "#a"},
                {"action": "type", "selector": "#a", "text": "", "delay": 5},
                {"action": "press", "key": "Enter"},
                {"action": "select", "selector": "#s", "value": "b"},
                {"action": "drag", "source": "#a", "target": "#b"},
                {"action": "evaluate", "expression": "1 + 1", "assert": 2},
                {"action": "evaluate", "script": "1"},
                {"action": "fill", "selector": "#a", "value": ""},
            ]
        )
    )
    assert [step_target(s) for s in steps] == ["#a", "#a", "Enter", "#s", "#a -> #b", "1 + 1", "1", "#a"]


def test_bad_step_errors_say_what_was_expected() -> None:
    with pytest.raises(BadInputError) as info:
        parse_steps('[{"action": "hover", "selector": "#a"}, {"action": "waitFor", "ms": -3}]')
    assert (info.value.field, info.value.code) == ("steps-json[1].ms", "invalid-step")
    assert "negative" in info.value.message
    with pytest.raises(BadInputError) as missing:
        parse_steps('[{"action": "drag", "source": "#a"}]')
    assert "drag needs 'target'" in missing.value.message


@pytest.mark.parametrize(
    "result, expected, same",
    [
        (True, True, True),
        (1, True, False),
        (True, 1, False),
        (0, False, False),
        (2, 2.0, True),
        ("2", 2, False),
        ([1, {"a": None}], [1, {"a": None}], True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (None, None, True),
        (None, False, False),
        ([1, 2], [2, 1], False),
    ],
)
def test_evaluate_assert_compares_as_json(result: object, expected: object, same: bool) -> None:
    assert same_json(result, expected) is same


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

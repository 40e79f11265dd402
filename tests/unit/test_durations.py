"""The one duration parser (codebox_tui/durations.py): a bare number is seconds everywhere."""

from __future__ import annotations

import pytest

from codebox_tui.browser.actions import parse_steps
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90s", 90.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("1.5s", 1.5),
        ("500ms", 0.5),
        ("15m", 900.0),
        ("2h", 7200.0),
        (" 30s ", 30.0),
        ("30 s", 30.0),
        ("0.25m", 15.0),
        ("5000", 5000.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--timeout") == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5s", "5x", "1e3", "s", "5 m s", "1,5s", "5S", "ms500", "1.s"])
def test_not_durations_name_the_field(text: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_duration(text, "steps-json[2].timeout")
    assert info.value.field == "steps-json[2].timeout" and info.value.code == "invalid-duration"
    assert repr(text) in info.value.message


def test_browser_step_timeouts_are_checked_when_the_steps_are_read() -> None:
    ok = parse_steps(
        '[{"action": "click", "selector": "#a", "timeout": 5}, '
        '{"action": "click", "selector": "#b", "timeout": "250ms"}]'
    )
    assert [parse_duration(str(step["timeout"]), "t") for step in ok] == [5.0, 0.25]  # 5 is five seconds
    for bad in ('"soon"', "true", "[1]"):
        with pytest.raises(BadInputError) as info:
            parse_steps(f'[{{"action": "click", "selector": "#a", "timeout": {bad}}}]')
        assert info.value.field == "steps-json[0].timeout"

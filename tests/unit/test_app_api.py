"""Screens see the app as ``AppApi`` (codebox_tui/screens/app_api.py): the protocol lists exactly what they use.

mypy proves ``CodeboxApp`` satisfies the protocol (``app.py``) and that Textual's ``App`` members match it
(``ScreensApp``); the screens' ``app`` is typed as an ``App`` too (Textual requires that of an override), so
this test keeps the protocol the exact list: every ``….app.<member>`` a screen or a controller uses is
declared there, and every declared member is used."""

from __future__ import annotations

import ast
from pathlib import Path

from codebox_tui.screens.app_api import AppApi

SCREENS = Path(__file__).resolve().parents[2] / "codebox_tui" / "screens"


def app_uses(source: str) -> tuple[set[str], list[int]]:
    """The members read from an ``app`` (``self.app.x``, ``self.screen.app.x``), and the lines where the
    app itself is handed on (``f(self.app)``), which would escape the protocol."""
    tree = ast.parse(source)
    used: set[str] = set()
    bases: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "app":
            used.add(node.attr)
            bases.add(id(node.value))
    handed_on = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "app"
        and id(node) not in bases
        and isinstance(node.ctx, ast.Load)
    ]
    return used, handed_on


def declared() -> set[str]:
    return {name for name in vars(AppApi) if not name.startswith("_")}


def test_app_uses_reads_members_and_finds_the_app_handed_on() -> None:
    used, handed_on = app_uses("self.app.notify('x')\nself.screen.app.push_screen(s)\nwatch(self.app, 't')\n")
    assert used == {"notify", "push_screen"}
    assert handed_on == [3]


def test_screens_use_exactly_the_protocol_members() -> None:
    used: set[str] = set()
    for path in sorted(SCREENS.glob("*.py")):
        members, handed_on = app_uses(path.read_text(encoding="utf-8"))
        assert not handed_on, f"{path.name}: the app is handed on at line(s) {handed_on}; use AppApi members"
        used |= members
    assert used - declared() == set(), "screens use app members AppApi does not declare: add them to AppApi"
    assert declared() - used == set(), "AppApi declares members no screen uses: remove them"

"""The screens' header survives a title change that arrives after its title widget is gone (widgets/app_header.py):
Textual's own Header then raised NoMatches out of the app (seen at the end of a run on a busy machine)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Header
from textual.widgets._header import HeaderTitle

from widgets.app_header import AppHeader


class _Host(App[None]):
    def __init__(self, header: type[Header]) -> None:
        super().__init__()
        self.header = header

    def compose(self) -> ComposeResult:
        yield self.header(icon="◆")


async def _title_change_after_the_title_widget_is_removed(header: type[Header]) -> str:
    app = _Host(header)
    async with app.run_test() as pilot:
        await app.query_one(HeaderTitle).remove()
        app.title = "changed while the header is being torn down"
        await pilot.pause()
        app.title = "and again"
        await pilot.pause()
    return app.title


async def test_a_late_title_update_is_skipped() -> None:
    assert await _title_change_after_the_title_widget_is_removed(AppHeader) == "and again"


async def test_textuals_own_header_fails_there() -> None:
    """The failure the subclass exists for: if Textual fixes it, this test says the subclass can go."""
    with pytest.raises(Exception, match="HeaderTitle"):
        await _title_change_after_the_title_widget_is_removed(Header)

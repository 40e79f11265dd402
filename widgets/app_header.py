"""The header every screen shows: Textual's Header, with a title update that tolerates its own removal.

Textual's Header watches the app's and the screen's title; the update it schedules can run after the header's
children were removed (a screen dismissed while the title changes, e.g. a run ending on a busy machine), and it
then raises NoMatches out of the app's teardown. Here the update is skipped once there is nothing to update."""

from __future__ import annotations

from textual.css.query import NoMatches
from textual.dom import NoScreen
from textual.events import Mount
from textual.widgets import Header
from textual.widgets._header import HeaderTitle


class AppHeader(Header):
    """Header(icon=…) whose title updates never fail once the header is gone."""

    def _on_mount(self, event: Mount) -> None:
        event.prevent_default()  # instead of Header's own watchers, not beside them

        async def set_title() -> None:
            if not self.is_attached:
                return
            try:
                self.query_one(HeaderTitle).update(self.format_title())
            except (NoMatches, NoScreen):  # removed while the update was on its way
                return

        self.watch(self.app, "title", set_title)
        self.watch(self.app, "sub_title", set_title)
        self.watch(self.screen, "title", set_title)
        self.watch(self.screen, "sub_title", set_title)

"""The app as screens see it: :class:`AppApi`, exactly what a screen (or a screen's controller) uses of
``self.app``, typed. Screens derive from ``screens/base.py``'s classes, whose ``app`` is typed with this
protocol (``ScreensApp``), so they never import ``codebox_tui/app.py``, which imports them: no import cycle,
not even a type-only one.

``CodeboxApp`` satisfies it structurally; mypy proves that in ``app.py`` (``_SATISFIES_APP_API``). A screen
that needs more of the app adds the member here first, or posts a message (``screens/messages.py``) when it
asks the app to act (docs/architecture.md, "The UI layer")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from textual.app import App
    from textual.await_complete import AwaitComplete
    from textual.geometry import Size
    from textual.notifications import SeverityLevel
    from textual.screen import Screen, ScreenResultCallbackType
    from textual.widget import AwaitMount

    from codebox_tui.lifecycle import RunControl

ResultT = TypeVar("ResultT")
ReturnT = TypeVar("ReturnT")


class AppApi(Protocol):
    """What screens use of the app: Codebox's own state, then the few Textual ``App`` members they call."""

    @property
    def active_keymap(self) -> dict[str, str]:
        """The keymap in force (binding id → keys), for screens that name keys (docs/settings.md)."""
        ...

    @property
    def live_runs(self) -> dict[RunControl, Screen[None]]:
        """Runs started from the Live run screen that have not finished, with their screen: the screen adds
        and removes itself, Home lists them, quitting cancels them."""
        ...

    @property
    def screen(self) -> Screen[object]: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    @property
    def size(self) -> Size: ...

    def push_screen(
        self, screen: Screen[ResultT] | str, callback: ScreenResultCallbackType[ResultT] | None = None
    ) -> AwaitMount: ...

    def pop_screen(self) -> AwaitComplete: ...

    def switch_screen(self, screen: Screen[Any] | str) -> AwaitComplete: ...

    def install_screen(self, screen: Screen[Any], name: str) -> None: ...

    def uninstall_screen(self, screen: Screen[Any] | str) -> str | None: ...

    def call_from_thread(
        self, callback: Callable[..., ReturnT | Awaitable[ReturnT]], *args: Any, **kwargs: Any
    ) -> ReturnT: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def copy_to_clipboard(self, text: str) -> None: ...


if TYPE_CHECKING:

    class ScreensApp(App[None], AppApi):
        """For the type checker only, since Python has no intersection type: the screens' ``app``. Textual
        declares every node's ``app`` as an ``App``, so a screen's may only narrow it: to an ``App`` that is
        also an ``AppApi`` (mypy checks here that Textual's ``App`` members match the protocol's). Never
        instantiated; at run time ``app`` is the running ``CodeboxApp``. Screens use only the protocol's
        members (tests/unit/test_app_api.py)."""

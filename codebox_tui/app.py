"""The Codebox review workstation (Textual)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from codebox_tui.settings import get_settings

MIN_WIDTH, MIN_HEIGHT = 60, 16


class CodeboxApp(App[None]):
    TITLE = "Codebox"
    SUB_TITLE = "review disposable WordPress sandboxes"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("ctrl+t", "toggle_theme", "Theme", id="app.theme"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    def __init__(self, bundle: Path | None = None, *, now: datetime | None = None) -> None:
        """``now`` fixes Home's clock (for deterministic snapshots and screenshots)."""
        super().__init__()
        self.initial_bundle = bundle
        self.fixed_now = now

    @property
    def active_keymap(self) -> dict[str, str]:
        """The keymap in force (binding id → keys, as Textual normalised them), for widgets that name keys."""
        return dict(self._keymap)

    def on_mount(self) -> None:
        settings = get_settings()
        if settings.keymap:
            self.set_keymap(settings.keymap)
        if settings.keymap_problem:
            self.notify(settings.keymap_problem, severity="warning")
        from codebox_tui.screens.home import HomeScreen

        self.push_screen(HomeScreen(now=self.fixed_now))
        if self.initial_bundle is not None:
            self.open_bundle(self.initial_bundle)
        self._check_size()

    def on_resize(self) -> None:
        self._check_size()

    def _check_size(self) -> None:
        if self.size.width < MIN_WIDTH or self.size.height < MIN_HEIGHT:
            self.notify(f"The terminal is {self.size.width}x{self.size.height}; Codebox needs at least "
                        f"{MIN_WIDTH}x{MIN_HEIGHT}.", severity="warning", timeout=6)

    def open_bundle(self, path: Path) -> None:
        from codebox_tui.errors import CodeboxError
        from codebox_tui.screens.review import ReviewScreen

        try:
            screen = ReviewScreen(path)
        except CodeboxError as error:
            from codebox_tui.textsafe import safe_text

            self.notify(safe_text(f"Cannot open bundle: {error}"), severity="error", timeout=8, markup=False)
            return
        self.push_screen(screen)

    def action_help(self) -> None:
        from codebox_tui.screens.dialogs import HelpDialog
        from widgets.keys import key_display

        parts = [getattr(self.screen, "HELP", "") or ""]
        focused = self.focused
        if focused is not None and getattr(focused, "HELP", None):
            parts.append(str(focused.HELP))
        keys = ["## Keys on this screen"]
        for binding in self.screen.active_bindings.values():
            if binding.binding.show or binding.binding.id:
                keys.append(f"- `{key_display(binding.binding.key)}`: {binding.binding.description}")
        parts.append("\n".join(keys))
        self.push_screen(HelpDialog("\n\n".join(p for p in parts if p)))

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        # Every binding in the focus chain, including ones a focused widget shadows by key
        # (e.g. Home's `enter` under the table's own `enter`), so each action has a palette entry.
        seen: set[tuple[int, str]] = set()
        for node, bindings_map in screen._binding_chain:
            for bindings in bindings_map.key_to_bindings.values():
                for binding in bindings:
                    if not binding.description or binding.action == "command_palette":
                        continue
                    if (id(node), binding.action) in seen:
                        continue
                    seen.add((id(node), binding.action))
                    yield SystemCommand(binding.description, f"{binding.description} ({binding.key})",
                                        lambda b=binding, n=node: self.run_action(b.action, n))


def run_app(bundle: Path | None = None) -> None:
    from widgets.evidence_view import prepare_images

    prepare_images()  # the terminal is asked about image support before Textual owns stdin
    from codebox_tui.runtime.playground import shutdown_sidecars

    _prewarm_launch_defaults()
    try:
        CodeboxApp(bundle).run()
    finally:
        shutdown_sidecars()  # disposes the spare (and its site copy) with the sidecars


def _prewarm_launch_defaults() -> None:
    """Boot a spare for the Launch screen's defaults (default WordPress, PHP and policy) while the user
    looks around, so the first run starts warm. Off with CODEBOX_SPARE_SANDBOXES=off; a failure here only
    means the first run boots from scratch (it reports the real error then)."""
    from codebox_tui.errors import CodeboxError
    from codebox_tui.runtime.backend import SandboxSpec
    from codebox_tui.runtime.playground import PlaygroundBackend
    from codebox_tui.runtime.policy import default_policy

    try:
        PlaygroundBackend().prewarm(SandboxSpec(mounts=[], policy=default_policy()))
    except (CodeboxError, OSError):
        pass

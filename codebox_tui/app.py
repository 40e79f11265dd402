"""The Codebox review workstation (Textual)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from codebox_tui.errors import CodeboxError
from codebox_tui.runtime.backend import SandboxSpec
from codebox_tui.runtime.playground import PlaygroundBackend, shutdown_sidecars
from codebox_tui.runtime.policy import default_policy
from codebox_tui.screens.app_api import AppApi
from codebox_tui.screens.dialogs import HelpDialog
from codebox_tui.screens.home import HomeScreen
from codebox_tui.screens.messages import OpenBundle
from codebox_tui.screens.opening import OpeningScreen
from codebox_tui.screens.review import ReviewScreen, prepare_review
from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text
from widgets.diff_view import DiffView
from widgets.evidence_view import prepare_images
from widgets.keys import key_display

if TYPE_CHECKING:
    from codebox_tui.lifecycle import RunControl

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
        # A bundle named on the command line is read and verified now, before the UI runs (nothing waits on
        # it: the terminal is not ours yet); one opened later is verified in a worker (screens/opening.py).
        self._initial_review: Any = None
        self._initial_problem: str | None = None
        if bundle is not None:
            try:
                self._initial_review = prepare_review(Path(bundle))
            except (CodeboxError, OSError) as error:
                self._initial_problem = f"Cannot open bundle: {error}"
        self.fixed_now = now
        # runs the Live run screens started that have not finished, with their screen (Home lists them)
        self.live_runs: dict[RunControl, Screen[None]] = {}

    async def action_quit(self) -> None:
        """Quit at once, also during a run: each live run is cancelled (its sandbox's process group is
        killed) from a background thread, and its run worker still captures what exists and disposes the
        sandbox; nothing waits for that here (docs/architecture.md, the run lifecycle)."""
        for control in list(self.live_runs):
            threading.Thread(
                target=control.cancel, args=("was stopped: the app quit",), daemon=True, name="codebox-quit-cancel"
            ).start()
        self.exit()

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
        self.push_screen(HomeScreen(now=self.fixed_now))
        if self._initial_review is not None and self.initial_bundle is not None:
            self.push_screen(ReviewScreen(Path(self.initial_bundle), self._initial_review))
        elif self._initial_problem is not None:
            self.notify(safe_text(self._initial_problem), severity="error", timeout=8, markup=False)
        self._check_size()

    def on_resize(self) -> None:
        self._check_size()

    def _check_size(self) -> None:
        if self.size.width < MIN_WIDTH or self.size.height < MIN_HEIGHT:
            self.notify(
                f"The terminal is {self.size.width}x{self.size.height}; Codebox needs at least "
                f"{MIN_WIDTH}x{MIN_HEIGHT}.",
                severity="warning",
                timeout=6,
            )

    def open_bundle(self, path: Path, *, tab: str | None = None) -> None:
        """Open a bundle for review: verified in a worker behind a 'Verifying…' screen (never on the UI
        thread), then the Review screen (on ``tab`` when given, e.g. ``tab-tests``)."""
        self.push_screen(OpeningScreen(path, tab=tab))

    def on_open_bundle(self, message: OpenBundle) -> None:
        """A screen asks for a bundle to be reviewed (screens/messages.py)."""
        self.open_bundle(message.path, tab=message.tab)

    def action_evaluate_patch(self) -> None:
        """The "Evaluate a patch" form (Home's `e`, the palette)."""
        from codebox_tui.screens.evaluate import EvaluatePatchScreen  # noqa: PLC0415 - the run-starting forms load the run lifecycle when first opened, not at start-up

        self.push_screen(EvaluatePatchScreen())

    def action_reproduce_bug(self) -> None:
        """The "Reproduce a bug" form (Home's `R`, the palette)."""
        from codebox_tui.screens.evaluate import ReproduceScreen  # noqa: PLC0415 - the run-starting forms load the run lifecycle when first opened, not at start-up

        self.push_screen(ReproduceScreen())

    def action_help(self) -> None:
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
        """The command palette: each action once (by its title), every binding of the focus chain (also
        ones a focused widget shadows by key, e.g. Home's `enter` under the table's own `enter`), the
        diff view's toggles and hunk keys even while another pane has the focus, and open-bundle."""
        titles: set[str] = set()
        for command in super().get_system_commands(screen):
            if command.title not in titles:
                titles.add(command.title)
                yield command
        chain: list[tuple[object, list[Binding]]] = [
            (node, [b for bindings in bindings_map.key_to_bindings.values() for b in bindings])
            for node, bindings_map in screen._binding_chain
        ]
        in_chain = {id(node) for node, _bindings in chain}
        for view in screen.query(DiffView):  # the diff's keys, also from the file tree or a tab
            if id(view) not in in_chain and view.model is not None:
                chain.append((view, [b for b in view.BINDINGS if isinstance(b, Binding)]))
        for node, bindings in chain:
            for binding in bindings:
                title = binding.description
                if not title or binding.action == "command_palette" or title in titles:
                    continue
                titles.add(title)
                yield SystemCommand(
                    title,
                    f"{title} ({key_display(binding.key.split(',')[0])})",
                    lambda b=binding, n=node: self.run_action(b.action, n),
                )
        for title, help_text, action in (
            (
                "Evaluate a patch",
                "A patch or a git range against a plugin: tests before and after, the verdict",
                self.action_evaluate_patch,
            ),
            (
                "Reproduce a bug",
                "Run a reproduction recipe or an episode plan and review its evidence",
                self.action_reproduce_bug,
            ),
        ):
            if title not in titles:
                titles.add(title)
                yield SystemCommand(title, help_text, action)
        if "Open bundle…" not in titles:
            yield SystemCommand(
                "Open bundle…",
                "Open a bundle folder (or a folder of bundles) and review it",
                self.action_open_bundle_dialog,
            )
        for live in self.live_runs.values():  # runs left with `escape` that go on (a held preview, a long run)
            if live not in self.screen_stack:
                name = getattr(live, "title_line", "run")
                yield SystemCommand(
                    f"Return to live run: {name}",
                    "Its events and, while its preview is held, its console",
                    lambda s=live: self.push_screen(s),
                )

    def action_open_bundle_dialog(self) -> None:
        """Ask for a bundle folder and open it: Home's `o`, from any screen."""
        home = next((s for s in self.screen_stack if isinstance(s, HomeScreen)), None)
        if home is not None:
            home.action_open_path()


# The screens see the app as an AppApi (screens/app_api.py, typed in screens/base.py without importing this
# module); this typed assignment is where mypy proves CodeboxApp satisfies that protocol.
_SATISFIES_APP_API: type[AppApi] = CodeboxApp


def run_app(bundle: Path | None = None) -> None:
    prepare_images()  # the terminal is asked about image support before Textual owns stdin
    _prewarm_launch_defaults()
    try:
        CodeboxApp(bundle).run()
    finally:
        shutdown_sidecars()  # disposes the spare (and its site copy) with the sidecars


def _prewarm_launch_defaults() -> None:
    """Boot a spare for the Launch screen's defaults (default WordPress, PHP and policy) while the user
    looks around, so the first run starts warm. Off with CODEBOX_SPARE_SANDBOXES=off; a failure here only
    means the first run boots from scratch (it reports the real error then)."""
    try:
        PlaygroundBackend().prewarm(SandboxSpec(mounts=[], policy=default_policy()))
    except (CodeboxError, OSError):
        pass

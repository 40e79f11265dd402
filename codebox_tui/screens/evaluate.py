"""The "Evaluate a patch" and "Reproduce a bug" forms: the command line's evaluate-patch and recipe-run, started
from the TUI and watched on the Live run screen (docs/evaluate-patch.md, "From the TUI")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.suggester import Suggester
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select

from codebox_tui.errors import CodeboxError
from codebox_tui.recipes.evaluate_range import check_evaluation_backend, check_evaluation_inputs
from codebox_tui.screens.backend_field import BackendProblem, backend_select, follow_backend_php, show_backend_problem
from codebox_tui.screens.base import CodeboxModal, fit_compact
from codebox_tui.screens.dialogs import DIALOG_CSS
from codebox_tui.screens.launch import checked_recipe_screen
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION


def form_css(screen: str) -> str:
    """The forms' CSS, each rule starting with the screen's own name (a screen's DEFAULT_CSS is scoped to it)."""
    return (
        DIALOG_CSS
        + f"""
{screen} {{ align: center middle; }}
{screen} .field {{ height: auto; }}
{screen} .field-label {{ width: 11; padding: 1 1 0 0; color: $text-muted; }}
{screen} .field Input, {screen} .field Select {{ width: 1fr; }}
{screen} .field .field-label.second {{ width: 5; padding-left: 1; }}
{screen} .field-error {{ color: $error; height: auto; padding-left: 11; display: none; }}
{screen} .field-error.-shown {{ display: block; }}
{screen}.-compact .dialog {{ padding: 0 2; }}
{screen}.-compact .dialog Input {{ margin-bottom: 1; background: $boost; }}
{screen}.-compact .dialog Select {{ margin-bottom: 1; }}
{screen}.-compact .dialog .buttons {{ margin-top: 0; }}
{screen}.-compact .field-label {{ padding: 0 1 0 0; }}
"""
    )


COMPACT_BELOW = 34  # rows: under this the forms use borderless fields so all of them fits (80x24)


class FormScreen(CodeboxModal[None]):
    """What both forms share: borderless fields on a short terminal (as the Launch form does); Cancel and escape
    close the form, the other button and enter in a field submit it; a Backend field that says at once what the
    chosen backend cannot do for the flow (the check the command line makes)."""

    def submit(self) -> None:
        raise NotImplementedError

    def backend_problem(self, backend: str) -> str | None:
        """Why this flow cannot run on ``backend`` as the form stands, or None."""
        raise NotImplementedError

    @property
    def backend(self) -> str:
        return str(self.query_one("#backend", Select).value)

    def on_input_changed(self, _event: Input.Changed) -> None:
        if self.query_one("#backend-error", Label).has_class("-shown"):  # said under Backend: still so?
            show_backend_problem(self, self.backend_problem(self.backend))

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "backend":
            if self.query("#php"):
                follow_backend_php(self, self.backend)
            show_backend_problem(self, self.backend_problem(self.backend))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.dismiss(None)
        else:
            self.submit()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.submit()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        fit_compact(self, self.app.size.height < COMPACT_BELOW)


# the field a BadInputError of evaluate-patch's checks names (resolve_build says "wp") → the form's input
FIELDS = {
    "--plugin": "plugin",
    "--patch": "patch",
    "--git": "git",
    "--wp": "wp",
    "wp": "wp",
    "--php": "php",
    "backend": "backend",
    "--backend": "backend",
}


class PathSuggester(Suggester):
    """Completes a path as it is typed (→ takes the suggestion): the first entry of its folder, in name order,
    that starts with what follows the last ``/``; a folder gets its ``/``."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        folder, slash, start = value.rpartition("/")
        where = Path((folder or "/") if slash else ".").expanduser()
        try:
            names = sorted(
                entry.name
                for entry in os.scandir(where)
                if entry.name.startswith(start) and (start.startswith(".") or not entry.name.startswith("."))
            )
        except OSError:
            return None
        for name in names:
            ending = "/" if (where / name).is_dir() else ""
            if name + ending != start:
                return f"{folder}{slash}{name}{ending}"
        return None


def _row(label: str, field: Widget) -> ComposeResult:
    yield Horizontal(Label(label, classes="field-label"), field, classes="field")
    yield Label("", id=f"{field.id}-error", classes="field-error", markup=False)


class EvaluatePatchScreen(FormScreen):
    """A plugin folder and a patch file or a git range of the plugin's own repository; WordPress and PHP."""

    DEFAULT_CSS = form_css("EvaluatePatchScreen")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="evaluate.cancel")]
    HELP = """\
# Evaluate a patch
The command line's `codebox evaluate-patch` (docs/evaluate-patch.md): a copy of the plugin gets the patch in a
sandbox; its tests run before and after, the front end is probed. The Live run screen shows both test runs;
the run ends on the Review screen's Tests tab with the verdict.
- Plugin: the plugin's folder (never modified); `→` takes the path completion shown
- Patch: a `git diff` / unified diff file, **or** Git range: `BASE..HEAD` or one commit of the plugin's own
  repository (not both)
- WordPress / PHP: a shipped WordPress build and a PHP version
- Backend: `playground` or `native` (docs/backends.md; first `CODEBOX_BACKEND`'s); what the evaluation needs
  that the backend lacks (on native, another PHP than the host's) is said under it at once
A problem is shown under its field and nothing boots.
"""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Evaluate a patch", classes="title")
            yield from _row("Plugin", Input(placeholder="the plugin's folder", id="plugin", suggester=PathSuggester()))
            yield from _row(
                "Patch", Input(placeholder="a patch file (git diff) …", id="patch", suggester=PathSuggester())
            )
            yield from _row(
                "Git range", Input(placeholder="… or BASE..HEAD / a commit of the plugin's repository", id="git")
            )
            yield Horizontal(
                Label("WordPress", classes="field-label"),
                Input(value=DEFAULT_WP_VERSION, placeholder="e.g. 6.5", id="wp"),
                Label("PHP", classes="field-label second"),
                Input(value=DEFAULT_PHP_VERSION, placeholder="e.g. 8.3", id="php"),
                classes="field",
            )
            yield Label("", id="wp-error", classes="field-error", markup=False)
            yield Label("", id="php-error", classes="field-error", markup=False)
            yield from _row("Backend", backend_select())
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Evaluate", variant="primary", id="evaluate")

    def value(self, field: str) -> str:
        return self.query_one(f"#{field}", Input).value.strip()

    def show_problem(self, field: str | None, message: str) -> None:
        """The problem under its field (the Patch field for a neither-nor-both; Plugin when none is named)."""
        for label in self.query(".field-error").results(Label):
            label.update("")
            label.remove_class("-shown")
        label = self.query_one(f"#{FIELDS.get(field or '', 'plugin')}-error", Label)
        label.update(escape(message))
        label.add_class("-shown")

    def backend_problem(self, backend: str) -> str | None:
        try:
            check_evaluation_backend(backend)
        except CodeboxError as error:
            return error.message
        return None

    def submit(self) -> None:
        """Check the form as evaluate-patch checks its options (one definition: evaluate_range's
        check_evaluation_inputs), then run it on the Live run screen, landing on the Tests tab."""
        plugin, patch, git_range = self.value("plugin"), self.value("patch"), self.value("git")
        wp, php = self.value("wp") or DEFAULT_WP_VERSION, self.value("php") or DEFAULT_PHP_VERSION
        if not plugin:
            self.show_problem("--plugin", "the plugin's folder is required")
            return
        plugin_dir = Path(plugin).expanduser()
        patch_file = Path(patch).expanduser() if patch else None
        try:
            check_evaluation_inputs(plugin_dir, patch_file, git_range or None, wp=wp, php=php, backend=self.backend)
        except CodeboxError as error:
            self.show_problem(error.field, error.message)
            return
        evaluation = {
            "plugin": plugin_dir.resolve(),
            "wp": wp,
            "php": php,
            "backend": self.backend,
            **({"patch": patch_file.resolve()} if patch_file else {"git": git_range}),
        }
        self.dismiss(None)
        self.app.push_screen(LiveRunScreen(evaluation=evaluation, land_on="tab-tests"))


class ReproduceScreen(FormScreen):
    """A reproduction recipe or an episode plan, run on the Live run screen; it ends on the bundle's evidence."""

    DEFAULT_CSS = form_css("ReproduceScreen")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="reproduce.cancel")]
    HELP = """\
# Reproduce a bug
A reproduction recipe (`wp-codebox/workspace-recipe/v1` with `"reproduces"`, docs/recipes.md; e.g.
examples/recipes/bug-reproduction.json) or an episode plan (`codebox/episode-plan/v1`, docs/episodes.md). It is
checked in full first (each problem with its JSON path, nothing boots); the Live run screen shows it run and
the review opens on its Evidence tab when it is done.
- Backend: `playground` or `native` (docs/backends.md; first `CODEBOX_BACKEND`'s; it overrides a recipe's
  `runtime.backend`); what the plan needs that the backend lacks (a page request on native) is said under it
"""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Reproduce a bug", classes="title")
            yield from _row(
                "Recipe",
                Input(
                    placeholder="a reproduction recipe or an episode plan (JSON)",
                    id="recipe",
                    suggester=PathSuggester(),
                ),
            )
            yield from _row("Backend", backend_select())
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Run", variant="primary", id="run")

    def backend_problem(self, backend: str) -> str | None:
        text = self.query_one("#recipe", Input).value.strip()
        try:
            if text:
                checked_recipe_screen(text, backend=backend)
        except BackendProblem as problem:
            return str(problem)
        except ValueError:  # the file's own problems are said under it when the form is submitted
            return None
        return None

    def submit(self) -> None:
        label = self.query_one("#recipe-error", Label)
        text = self.query_one("#recipe", Input).value.strip()
        for shown in (label, self.query_one("#backend-error", Label)):
            shown.update("")
            shown.remove_class("-shown")
        try:
            if not text:
                raise ValueError("a recipe or episode plan file is required")
            screen = checked_recipe_screen(text, land_on="tab-evidence", backend=self.backend)
        except BackendProblem as problem:
            show_backend_problem(self, str(problem))
            return
        except ValueError as problem:
            label.update(escape(str(problem)))
            label.add_class("-shown")
            return
        self.dismiss(None)
        self.app.push_screen(screen)

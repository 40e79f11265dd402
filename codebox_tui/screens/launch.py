"""Launch form: recipe, mounts, command and arguments, WordPress and PHP versions, policy, hold."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, ClassVar

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Select

from codebox_tui.durations import parse_duration
from codebox_tui.errors import CodeboxError
from codebox_tui.lifecycle import CommandStep, RunRequest, Toolchain, check_request, mounts_from_text, policy_from_text
from codebox_tui.lifecycle.episode import is_episode_plan, load_plan, plan_request
from codebox_tui.recipes.validate import validate_recipe_file
from codebox_tui.runtime.catalog import command_catalog
from codebox_tui.screens.backend_field import (
    BackendProblem,
    backend_select,
    follow_backend_php,
    show_backend_problem,
)
from codebox_tui.screens.base import CodeboxModal, fit_compact
from codebox_tui.screens.dialogs import DIALOG_CSS
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION


def _field(label: str, widget: Input | Select[str]) -> Horizontal:
    """One labelled row of the form."""
    return Horizontal(Label(label, classes="field-label"), widget, classes="field")


def split_arguments(text: str) -> list[str]:
    """The Arguments field read like a shell reads it (quotes group words); every word must be ``key=value``
    (ValueError naming the first that is not, and how to quote)."""
    try:
        words = shlex.split(text)
    except ValueError as error:  # an unbalanced quote
        raise ValueError(f"Arguments: {error}; close the quote") from None
    for word in words:
        if "=" not in word or word.startswith("="):
            raise ValueError(
                f"Arguments: {word!r} is not key=value; quote a value that has spaces, e.g. code='echo 1;'"
            )
    return words


def parsed_arguments_line(text: str) -> str:
    """What the Launch form shows under Arguments as you type: the parsed arguments, or what is wrong."""
    if not text.strip():
        return ""
    try:
        words = split_arguments(text)
    except ValueError as error:
        return f"✗ {error}"
    shown = "  ".join(safe_text(word if len(word) <= 60 else word[:59] + "…") for word in words)
    return f"→ {len(words)} argument{'s' if len(words) != 1 else ''}: {shown}"


class LaunchScreen(CodeboxModal[None]):
    DEFAULT_CSS = (
        DIALOG_CSS
        + """
#launch-error { color: $error; height: auto; }
#backend-error { color: $error; height: auto; padding-left: 11; display: none; }
#backend-error.-shown { display: block; }
#args-parsed { color: $text-muted; height: auto; padding-left: 11; display: none; }
#args-parsed.-shown { display: block; }
LaunchScreen .field .field-label.second.wide { width: 8; }
LaunchScreen .field .field-label.second.backend-label { width: 9; }
LaunchScreen.-compact .dialog { padding: 0 2; }
LaunchScreen.-compact .dialog Input, LaunchScreen.-compact .dialog Select { margin-bottom: 1; }
LaunchScreen.-compact .dialog Input { background: $boost; }
LaunchScreen.-compact .dialog .title { margin-bottom: 1; }
LaunchScreen.-compact .dialog .buttons { margin-top: 0; }
LaunchScreen .field { height: auto; }
LaunchScreen .field-label { width: 11; padding: 1 1 0 0; color: $text-muted; }
LaunchScreen.-compact .field-label { padding: 0 1 0 0; }
LaunchScreen .field Input, LaunchScreen .field Select { width: 1fr; }
LaunchScreen .field .field-label.second { width: 5; padding-left: 1; }
"""
    )
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="launch.cancel")]
    HELP = """\
# Launch a sandbox
- Mounts: `HOST:SANDBOX[:readonly|readwrite|live]`, several separated by spaces; `readwrite` (the
  default) works on a private copy, your folder changes only when you apply a decision; `live` writes through
- Arguments: `key=value` pairs read like a shell reads them: quote a value with spaces
  (`code='require_once ABSPATH . "wp-admin/includes/plugin.php";'`); the parsed arguments are shown
  under the field as you type, and a word that is not `key=value` is named before anything boots
- WP-CLI phar: for `wordpress.wp-cli` (empty: `CODEBOX_WP_CLI_PHAR`)
- WordPress / PHP: a shipped WordPress build (6.2–6.5, beta, nightly) and a PHP version (7.4, 8.0–8.5)
- Backend: `playground` or `native` (docs/backends.md; first `CODEBOX_BACKEND`'s, and a recipe's own
  `runtime.backend` gives way to it); what the run needs that the backend lacks (on native, another PHP than
  the host's, a preview bound beyond 127.0.0.1) is said under it as soon as it is chosen, by the check
  `codebox run` makes
- Policy: leave empty for the default (network denied, only this command allowed)
- Hold: keep the sandbox and its live preview up after the command (`90s`, `15m`, `2h`); `c` on the
  Live run screen closes it early
- Recipe: a `wp-codebox/workspace-recipe/v1` file runs instead of the command; its own mounts, WordPress
  version and policy apply (the other fields are ignored). An invalid recipe is reported here, with
  the JSON path of each problem, and nothing boots. A `codebox/episode-plan/v1` file there runs as an
  episode (docs/episodes.md): its steps, observations and snapshots appear in the Live run's event log.
"""

    def compose(self) -> ComposeResult:
        commands = [(c.id, c.id) for c in command_catalog().commands if c.handler != "policy-only"]
        with Vertical(classes="dialog"):
            yield Label("Launch a sandbox", classes="title")
            yield _field(
                "Recipe", Input(placeholder="optional; runs the recipe instead of the command below", id="recipe")
            )
            yield _field(
                "Mounts", Input(placeholder="/path/to/plugin:/wordpress/wp-content/plugins/my-plugin", id="mounts")
            )
            yield _field("Command", Select(commands, value="wordpress.run-php", allow_blank=False, id="command"))
            yield _field(
                "Arguments", Input(placeholder="key=value …  e.g. code='echo get_bloginfo(\"name\");'", id="args")
            )
            yield Label("", id="args-parsed", markup=False)
            yield Horizontal(
                Label("WordPress", classes="field-label"),
                Input(value=DEFAULT_WP_VERSION, placeholder="e.g. 6.5", id="wp"),
                Label("PHP", classes="field-label second"),
                Input(value=DEFAULT_PHP_VERSION, placeholder="e.g. 8.3", id="php"),
                Label("Backend", classes="field-label second backend-label"),
                backend_select(),
                classes="field",
            )
            yield Label("", id="backend-error", markup=False)
            yield Horizontal(
                Label("Policy", classes="field-label"),
                Input(placeholder="JSON or a file (optional)", id="policy"),
                Label("WP-CLI", classes="field-label second wide"),
                Input(placeholder="wp-cli.phar (optional)", id="wp-cli-phar"),
                classes="field",
            )
            yield _field("Hold", Input(placeholder="keep the live preview up after the command, e.g. 15m", id="hold"))
            yield Label("", id="launch-error")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Launch", variant="primary", id="launch")

    COMPACT_BELOW = 34  # rows: under this the form uses borderless fields so all of it fits (80x24)

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        fit_compact(self, self.app.size.height < self.COMPACT_BELOW)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.dismiss(None)
        else:
            self.launch()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.launch()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "backend":
            follow_backend_php(self, str(event.value))
            show_backend_problem(self, self._backend_problem())

    def _backend_problem(self) -> str | None:
        """What the chosen backend cannot do for the run as the form stands (`codebox run`'s check), or None."""
        recipe_text = self.query_one("#recipe", Input).value.strip()
        try:
            if recipe_text:
                checked_recipe_screen(recipe_text, backend=self._backend())
            else:
                check_request(self._request())
        except BackendProblem as problem:
            return str(problem)
        except CodeboxError as error:
            return error.message if error.field == "backend" else None
        except ValueError:  # the other fields' problems are said when the form is submitted
            return None
        return None

    def _backend(self) -> str:
        return str(self.query_one("#backend", Select).value)

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.query_one("#backend-error", Label).has_class("-shown"):  # said under Backend: still so?
            show_backend_problem(self, self._backend_problem())
        if event.input.id == "args":
            line = parsed_arguments_line(event.value)
            label = self.query_one("#args-parsed", Label)
            label.update(line)
            label.set_class(bool(line), "-shown")

    def launch(self) -> None:
        """Read the form into a RunRequest the way `codebox run` reads its options (the same parsers and
        checks, so nothing boots on bad input) and run it on the Live run screen."""

        error_label = self.query_one("#launch-error", Label)
        error_label.update("")
        show_backend_problem(self, None)
        recipe_text = self.query_one("#recipe", Input).value.strip()
        if recipe_text:
            self._launch_recipe(recipe_text, error_label)
            return
        try:
            request = self._request()
            check_request(request)
        except CodeboxError as error:
            if error.field == "backend":
                show_backend_problem(self, error.message)
            else:
                error_label.update(escape(str(error)))
            return
        except ValueError as error:
            error_label.update(escape(str(error)))
            return

        self.dismiss(None)
        self.app.push_screen(LiveRunScreen(request))

    def _request(self) -> Any:
        """The form read into a RunRequest the way `codebox run` reads its options (the same parsers; an empty
        PHP field is the backend's default)."""
        command = str(self.query_one("#command", Select).value)
        hold_text = self.query_one("#hold", Input).value.strip()
        phar = self.query_one("#wp-cli-phar", Input).value.strip()
        return RunRequest(
            mounts=mounts_from_text(shlex.split(self.query_one("#mounts", Input).value)),
            commands=[CommandStep(command, split_arguments(self.query_one("#args", Input).value))],
            policy=policy_from_text(self.query_one("#policy", Input).value),
            wp=self.query_one("#wp", Input).value.strip() or DEFAULT_WP_VERSION,
            php=self.query_one("#php", Input).value.strip() or None,
            backend=self._backend(),
            hold_s=parse_duration(hold_text, "hold") if hold_text else None,
            artifacts_root=get_settings().artifacts_dir,
            tools=Toolchain(wp_cli_phar=Path(phar).expanduser() if phar else None),
        )

    def _launch_recipe(self, text: str, error_label: Label) -> None:
        try:
            screen = checked_recipe_screen(text, backend=self._backend())
        except BackendProblem as problem:
            show_backend_problem(self, str(problem))
            return
        except ValueError as problem:
            error_label.update(escape(str(problem)))
            return
        self.dismiss(None)
        self.app.push_screen(screen)

    def action_cancel(self) -> None:
        self.dismiss(None)


def checked_recipe_screen(text: str, *, land_on: str | None = None, backend: str | None = None) -> Any:
    """The Live run screen of a recipe (``wp-codebox/workspace-recipe/v1``) or an episode plan
    (``codebox/episode-plan/v1``) named by ``text``, checked in full before anything boots; ValueError with the
    lines to show (the file, each problem's JSON path) when it is not valid, BackendProblem when ``backend``
    (None: the recipe's own, else ``CODEBOX_BACKEND``) cannot run it. ``land_on``: LiveRunScreen's."""
    path = Path(text).expanduser().resolve()
    if is_episode_plan(path):
        try:
            plan = load_plan(path)
            # mounts, versions, every step's command and arguments, and what the backend can do (as episode run)
            plan_request(plan, path.parent, backend=backend)
        except CodeboxError as error:
            if error.field == "backend":
                raise BackendProblem(error.message) from None
            found = (error.details or {}).get("issues") or []
            lines = [
                f"{path.name}: {error.message}" if not found else f"{path.name}: invalid episode plan; nothing was run"
            ]
            lines += [f"{issue['path']}: {issue['message']}" for issue in found[:4]]
            raise ValueError("\n".join(lines)) from None
        return LiveRunScreen(episode=(plan, path.parent), land_on=land_on, backend=backend)
    try:
        validation = validate_recipe_file(path)
    except (CodeboxError, OSError) as error:
        raise ValueError(str(error)) from None
    if not validation.valid:
        issues = validation.issues
        lines = [
            f"{path.name}: invalid recipe ({len(issues)} problem{'s' if len(issues) != 1 else ''}); nothing was run"
        ]
        lines += [f"{issue.path}: {issue.message}" for issue in issues[:4]]
        if len(issues) > 4:
            lines.append(f"… and {len(issues) - 4} more (codebox recipe validate {path.name})")
        raise ValueError("\n".join(lines))
    return LiveRunScreen(recipe=validation, land_on=land_on, backend=backend)
